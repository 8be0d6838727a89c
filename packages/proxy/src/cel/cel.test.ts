import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modulesLoadedAfterEach } from '../routing/test-support.ts';
import { CelCompileError, celDurationMs, celTrue, compileCel } from './cel.ts';

test('request, source and jwt variables; a missing variable is no match, not an error', () => {
  const p = compileCel('request.headers["x-user"] == "alice" && request.path.startsWith("/admin")');
  assert.equal(celTrue(p, { request: { headers: { 'x-user': 'alice' }, path: '/admin/x' } }), true);
  assert.equal(celTrue(p, { request: { headers: {}, path: '/admin/x' } }), false);
  const j = compileCel('jwt.sub == "u1"');
  assert.equal(celTrue(j, {}), false);
  assert.equal(j.eval({}), undefined);
  assert.equal(celTrue(j, { jwt: { sub: 'u1' } }), true);
});

test('cidr().containsIP() on source.address, IPv4, IPv6 and mapped addresses', () => {
  const p = compileCel('cidr("10.0.0.0/8").containsIP(source.address)');
  assert.equal(celTrue(p, { source: { address: '10.1.2.3' } }), true);
  assert.equal(celTrue(p, { source: { address: '11.0.0.1' } }), false);
  assert.equal(celTrue(p, { source: { address: '::ffff:10.9.9.9' } }), true);
  assert.equal(
    celTrue(compileCel('cidr("::1/128").containsIP(source.address)'), { source: { address: '::1' } }),
    true,
  );
  assert.equal(
    celTrue(compileCel('cidr("bogus").containsIP(source.address)'), { source: { address: '1.1.1.1' } }),
    false,
  );
});

test('has(), duration(), random()', () => {
  assert.equal(
    celTrue(compileCel('has(request.headers.authorization)'), {
      request: { headers: { authorization: 'x' } },
    }),
    true,
  );
  assert.equal(celDurationMs(compileCel('duration("1m30s")').eval({})), 90_000);
  const r = compileCel('random() >= 0.0 && random() < 1.0');
  assert.equal(celTrue(r, {}), true);
});

test("default(value, fallback) (agentgateway's): the fallback for a missing key or a null, else the value", () => {
  const body = (json: string) => ({ request: { body: Buffer.from(json), headers: {} } });
  const tier = compileCel('default(json(request.body).metadata.tier, "economy")');
  assert.equal(tier.eval(body('{"metadata":{"tier":"premium"}}')), 'premium');
  assert.equal(tier.eval(body('{"metadata":{}}')), 'economy');
  assert.equal(tier.eval(body('{}')), 'economy');
  assert.equal(tier.eval(body('{"metadata":{"tier":null}}')), 'economy');
  const tokens = compileCel('default(json(request.body).max_tokens, 1024) > 4096');
  assert.equal(celTrue(tokens, body('{"max_tokens":8192}')), true);
  assert.equal(celTrue(tokens, body('{}')), false);
  assert.equal(compileCel('default(request.headers["x-team"], "none")').eval(body('{}')), 'none');
  // the fallback is evaluated only when needed, and may itself be an expression
  assert.equal(compileCel('default(1, 1 / 0)').eval({}), 1n);
  assert.throws(() => compileCel('default(1)'), /default/);
});

test('compile errors name the problem; unknown variables and over-long expressions are rejected', () => {
  assert.throws(() => compileCel('request.path =='), CelCompileError);
  assert.throws(() => compileCel('nosuchvar == 1'), /Unknown variable: nosuchvar/);
  assert.throws(() => compileCel(`"${'a'.repeat(16384)}"`), /longer than 16384/);
});

test('the CEL library loads with the first expression compiled: a data plane given a config without CEL never loads it', () => {
  const route = (policies: string) =>
    `binds:\n- port: 0\n  listeners:\n  - routes:\n    - policies: ${policies}\n`;
  const [plain, cel] = modulesLoadedAfterEach([
    route('{directResponse: {status: 204}}'),
    route('{directResponse: {status: 200, bodyExpression: "request.path"}}'),
  ]).map((urls) => urls.some((u) => u.includes('cel-js')));
  assert.deepEqual({ plain, cel }, { plain: false, cel: true });
});
