// "The same definitions validate standalone config files with the same messages": each fault below is
// made once in a standalone config file, checked the way `gw -f` checks it (parseSource, then
// validateSource against ConfigFile, as packages/proxy/src/config/load.ts does), and once in the
// equivalent GwPolicy, checked by validateResource and worded by formatError as the API server words
// it. The field paths differ only by where the policy sits; the message is the CRDs' own.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateResource } from '../crd/crds.ts';
import { BYTE_SIZE_MESSAGE, HEADER_NAME_PATTERN, URL_MESSAGE } from '../crd/types.ts';
import { type FieldError, formatError } from '../crd/validate.ts';
import { ConfigFile } from './schema.ts';
import { ConfigError, type ConfigIssue, formatIssue, parseSource, validateSource } from './source.ts';

const ROUTE_POLICIES = 'binds[0].listeners[0].routes[0].policies';

/** A standalone file whose only route has these traffic policies (YAML flow, one line). */
const standaloneFile = (policy: string) => `binds:
- port: 8080
  listeners:
  - routes:
    - policies: {${policy}}
      backends: [{host: "127.0.0.1:9"}]
`;

/** The issues `gw -f` reports for a standalone file. */
function standaloneIssues(policy: string): ConfigIssue[] {
  try {
    validateSource(
      parseSource('gw.yaml', standaloneFile(policy), () => undefined),
      // (ConfigFile's own type is too deep to relate here; only the issues are read)
      ConfigFile as unknown as Parameters<typeof validateSource>[1],
    );
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${err}`);
    return err.issues;
  }
  assert.fail(`the standalone config was accepted: ${policy}`);
}

/** The errors of a GwPolicy with this spec.traffic, as the API server would list them. */
function gwPolicyErrors(traffic: Record<string, unknown>): FieldError[] {
  const r = validateResource({
    apiVersion: 'gw.dev/v1alpha1',
    kind: 'GwPolicy',
    metadata: { name: 'p', namespace: 'default' },
    spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'r' }], traffic },
  });
  assert.ok(!r.ok, `the GwPolicy was accepted: ${JSON.stringify(traffic).slice(0, 200)}`);
  return r.errors;
}

/** Both checks report exactly one error, each at the field named (relative to the policies). */
function onlyErrors(
  policy: string,
  traffic: Record<string, unknown>,
  at: { standalone: string; gwPolicy: string },
): { file: ConfigIssue; crd: FieldError } {
  const file = standaloneIssues(policy);
  const crd = gwPolicyErrors(traffic);
  assert.equal(file.length, 1, file.map(formatIssue).join('\n'));
  assert.equal(crd.length, 1, crd.map(formatError).join('\n'));
  const [f, c] = [file[0] as ConfigIssue, crd[0] as FieldError];
  assert.equal(f.path, `${ROUTE_POLICIES}.${at.standalone}`);
  assert.equal(c.field, `spec.traffic.${at.gwPolicy}`);
  return { file: f, crd: c };
}

/**
 * A rule's message (an x-kubernetes-validations entry of the CRD, evaluated at runtime for both) is
 * the whole standalone message, and the API server's `Invalid value: <value>: <message>` around it.
 */
function sameRuleMessage(r: { file: ConfigIssue; crd: FieldError }, value: string, message: string): void {
  assert.equal(r.file.message, message);
  assert.equal(r.crd.detail, `Invalid value: ${JSON.stringify(value)}: ${message}`);
  assert.equal(
    formatError(r.crd),
    `${r.crd.field}: Invalid value: ${JSON.stringify(value)}: ${r.file.message}`,
  );
}

describe('standalone config and GwPolicy: one definition, one message', () => {
  test('a CSRF origin that is not <scheme>://<host>[:<port>]', () => {
    const r = onlyErrors(
      'csrf: {additionalOrigins: [partner.example.com]}',
      { csrf: { additionalOrigins: ['partner.example.com'] } },
      { standalone: 'csrf.additionalOrigins[0]', gwPolicy: 'csrf.additionalOrigins[0]' },
    );
    sameRuleMessage(r, 'partner.example.com', 'must be an origin <scheme>://<host>[:<port>]');
    // what the user reads, located at the value in the file
    const line = standaloneFile('csrf: {additionalOrigins: [partner.example.com]}').split('\n')[4] as string;
    assert.equal(
      formatIssue(r.file),
      `gw.yaml:5:${line.indexOf('partner') + 1}: ${ROUTE_POLICIES}.csrf.additionalOrigins[0]: must be an origin <scheme>://<host>[:<port>]`,
    );
  });

  test('a basic-auth user with a plain-text password', () => {
    const r = onlyErrors(
      'basicAuth: {users: ["bob:plaintext"]}',
      { basicAuthentication: { users: ['bob:plaintext'] } },
      { standalone: 'basicAuth.users[0]', gwPolicy: 'basicAuthentication.users[0]' },
    );
    sameRuleMessage(
      r,
      'bob:plaintext',
      'must be an htpasswd line <user>:<hash> with an MD5 ($apr1$), bcrypt ($2y$), SHA-1 ({SHA}) or crypt hash; plain passwords are not accepted',
    );
  });

  test('a JWKS url with userinfo', () => {
    const url = 'https://user@idp.example/jwks';
    const r = onlyErrors(
      `jwtAuth: {providers: [{issuer: idp, jwks: {url: "${url}"}}]}`,
      { jwtAuthentication: { providers: [{ issuer: 'idp', jwks: { remote: { url } } }] } },
      {
        standalone: 'jwtAuth.providers[0].jwks.url',
        gwPolicy: 'jwtAuthentication.providers[0].jwks.remote.url',
      },
    );
    sameRuleMessage(r, url, URL_MESSAGE);
  });

  test('a byte size above 4Gi', () => {
    const r = onlyErrors(
      'buffer: {request: {maxBytes: 5Gi}}',
      { buffer: { request: { maxBytes: '5Gi' } } },
      { standalone: 'buffer.request.maxBytes', gwPolicy: 'buffer.request.maxBytes' },
    );
    sameRuleMessage(r, '5Gi', BYTE_SIZE_MESSAGE);
  });

  test('a local rate limit with both requests and tokens', () => {
    const r = onlyErrors(
      'localRateLimit: [{requests: 10, tokens: 100, unit: Minutes}]',
      { rateLimit: { local: [{ requests: 10, tokens: 100, unit: 'Minutes' }] } },
      { standalone: 'localRateLimit[0]', gwPolicy: 'rateLimit.local[0]' },
    );
    // a rule on an object: the API server does not repeat the value
    assert.equal(r.file.message, 'exactly one of requests or tokens must be set');
    assert.equal(r.crd.detail, `Invalid value: ${r.file.message}`);
  });

  // Structural limits (maxItems, maxLength, pattern) are zod checks shared by both, and both paths word
  // them as the API server does (describeIssue in crd/validate.ts); only the field path inside a
  // pattern message differs, because it names where the field sits.
  test('65 JWT providers', () => {
    const providers = Array.from({ length: 65 }, (_, i) => ({
      issuer: `idp${i}`,
      jwks: { inline: '{"keys":[]}' },
    }));
    const r = onlyErrors(
      `jwtAuth: {providers: ${JSON.stringify(providers)}}`,
      { jwtAuthentication: { providers } },
      { standalone: 'jwtAuth.providers', gwPolicy: 'jwtAuthentication.providers' },
    );
    assert.equal(r.crd.detail, 'Too many: 65: must have at most 64 items');
    assert.equal(r.file.message, r.crd.detail);
    // and 64 still loads
    assert.equal(
      standaloneIssuesOrNone(`jwtAuth: {providers: ${JSON.stringify(providers.slice(0, 64))}}`),
      '',
    );
  });

  test('a CEL expression over 16384 characters', () => {
    const expr = `"${'a'.repeat(16383)}"`;
    const r = onlyErrors(
      `authorization: {action: Deny, policy: {matchExpressions: ['${expr}']}}`,
      { authorization: { action: 'Deny', policy: { matchExpressions: [expr] } } },
      {
        standalone: 'authorization.policy.matchExpressions[0]',
        gwPolicy: 'authorization.policy.matchExpressions[0]',
      },
    );
    assert.equal(r.crd.detail, 'Too long: may not be more than 16384 bytes');
    assert.equal(r.file.message, r.crd.detail);
  });

  test('a header name with a space', () => {
    const r = onlyErrors(
      'requestHeaderModifier: {remove: ["bad header"]}',
      { headerModifiers: { request: { remove: ['bad header'] } } },
      { standalone: 'requestHeaderModifier.remove[0]', gwPolicy: 'headerModifiers.request.remove[0]' },
    );
    assert.equal(
      r.crd.detail,
      `Invalid value: "bad header": ${r.crd.field} in body should match '${HEADER_NAME_PATTERN}'`,
    );
    assert.equal(
      r.file.message,
      `Invalid value: "bad header": ${ROUTE_POLICIES}.requestHeaderModifier.remove[0] should match '${HEADER_NAME_PATTERN}'`,
    );
  });
});

/** The formatted issues of a standalone file, or '' when it passes the schema. */
function standaloneIssuesOrNone(policy: string): string {
  try {
    validateSource(
      parseSource('gw.yaml', standaloneFile(policy), () => undefined),
      // (ConfigFile's own type is too deep to relate here; only the issues are read)
      ConfigFile as unknown as Parameters<typeof validateSource>[1],
    );
    return '';
  } catch (err) {
    return err instanceof ConfigError ? err.issues.map(formatIssue).join('\n') : String(err);
  }
}
