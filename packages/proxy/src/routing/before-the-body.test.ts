// Which policies run on an LLM route before the ai backend reads the request body: those above
// extAuthz in POLICY_ORDER, unless one finds its credential by a CEL expression (which may read the
// body); a key or a metadata field that merely has the word "expression" in it changes nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POLICY_ORDER } from '../policies/order.ts';
import { beforeTheBody } from './table.ts';

test('the deadline, address admission, CORS and authentication come before the body; extAuthz and below after', () => {
  for (const name of ['timeout', 'ipAccessControl', 'cors', 'jwtAuth', 'oidc', 'basicAuth', 'apiKey'])
    assert.equal(beforeTheBody(name, {}), true, name);
  for (const name of POLICY_ORDER.slice(POLICY_ORDER.indexOf('extAuthz')))
    assert.equal(beforeTheBody(name, {}), false, name);
});

test('a credential location given by a CEL expression moves the policy after the body', () => {
  assert.equal(beforeTheBody('apiKey', { location: { expression: 'request.body' }, keys: [] }), false);
  assert.equal(
    beforeTheBody('jwtAuth', { providers: [{ issuer: 'i', location: { expression: 'x' } }] }),
    false,
  );
  assert.equal(beforeTheBody('apiKey', { location: { header: { name: 'x-key' } } }), true);
  // the word in a key's name or metadata is not a location
  assert.equal(
    beforeTheBody('apiKey', { keys: { expression: { key: 'k', metadata: { expression: 'yes' } } } }),
    true,
  );
});
