import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { serialize } from 'node:v8';
import { loadConfigText } from '../config/load.ts';
import { encodeSecrets } from '../secret.ts';
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

test('compile errors name the problem; unknown variables and over-long expressions are rejected', () => {
  assert.throws(() => compileCel('request.path =='), CelCompileError);
  assert.throws(() => compileCel('nosuchvar == 1'), /Unknown variable: nosuchvar/);
  assert.throws(() => compileCel(`"${'a'.repeat(16384)}"`), /longer than 16384/);
});

test('the CEL library loads with the first expression compiled: a data plane given a config without CEL never loads it', () => {
  // A process of its own (this one has loaded the library), fed IRs built here, recording each module
  // it loads.
  const route = (policies: string) =>
    `binds:\n- port: 0\n  listeners:\n  - routes:\n    - policies: ${policies}\n`;
  const ir = (yaml: string) =>
    serialize(encodeSecrets(loadConfigText('x.yaml', yaml, process.cwd()).ir)).toString('base64');
  const plain = ir(route('{directResponse: {status: 204}}'));
  const cel = ir(route('{directResponse: {status: 200, bodyExpression: "request.path"}}'));
  const script = `
    import { registerHooks } from 'node:module';
    import { deserialize } from 'node:v8';
    const loaded = [];
    registerHooks({ resolve: (spec, ctx, next) => { const r = next(spec, ctx); loaded.push(r.url); return r; } });
    const { decodeSecrets } = await import('./packages/proxy/src/secret.ts');
    const { compileTable } = await import('./packages/proxy/src/routing/table.ts');
    await import('./packages/proxy/src/server/data-plane-port.ts');
    const ir = (b64) => decodeSecrets(deserialize(Buffer.from(b64, 'base64')));
    const library = () => loaded.some((u) => u.includes('cel-js'));
    compileTable(ir(${JSON.stringify(plain)}), null);
    const before = library();
    compileTable(ir(${JSON.stringify(cel)}), null);
    console.log(JSON.stringify({ before, after: library() }));
  `;
  const out = execFileSync(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
    { cwd: join(import.meta.dirname, '../../../..'), encoding: 'utf8' },
  );
  assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1) ?? ''), { before: false, after: true });
});
