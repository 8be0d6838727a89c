// config.customFunctions on the real `bin/gw` with two workers: every worker calls the functions, a
// reload of the file changes them, a broken block is refused (the running config kept), the admin's
// trace filter compiles with them, and `--validate-only` names the block's line.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { Agent, request } from 'undici';
import { cleanupGw, configBlock, type GwProcess, runGw, startGw, tempDir } from './support/gw-process.ts';

let upstream: TestServer;
let g: GwProcess;
let port: number;

const config = (env: string, extra = '') => `${configBlock(
  'customFunctions: |',
  '  # who may call /internal',
  `  isInternal() { request.headers["x-env"] == "${env}" }`,
  '  this.tagged(parts...) { this + ":" + parts.join(",") }',
  ...(extra ? [`  ${extra}`] : []),
)}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: internal
      policies:
        authorization: { rules: ['isInternal()'] }
        responseHeaderModifier: { set: { x-env: ${env} } }
        transformations:
          request:
            set: { x-tag: 'request.method.tagged("a", "b")' }
      backends: [{ host: 127.0.0.1:${upstream.port} }]
`;

before(async () => {
  upstream = await startUpstream('echo');
  g = await startGw({ args: ['--workers', '2'], yaml: config('internal') });
  port = await g.proxyPort(0);
});

after(async () => {
  await cleanupGw();
  await upstream?.close();
});

/** `n` requests, each on a connection of its own so both workers take some. */
async function statuses(env: string, n = 8): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const agent = new Agent({ pipelining: 0 });
    const r = await request(`http://127.0.0.1:${port}/x`, { headers: { 'x-env': env }, dispatcher: agent });
    out.push(r.statusCode);
    if (r.statusCode === 200) {
      const echoed = (await r.body.json()) as { headers: Record<string, string> };
      assert.equal(echoed.headers['x-tag'], 'GET:a,b');
    } else await r.body.dump();
    await agent.close();
  }
  return out;
}

test('both workers call the functions; a reload changes them; a broken block keeps the running one', async () => {
  assert.deepEqual(await statuses('internal'), Array(8).fill(200));
  assert.deepEqual(await statuses('prod'), Array(8).fill(403));

  g.write(config('staging'));
  await g.waitForDump((d) => JSON.stringify(d).includes('x-env\\"] == \\"staging'));
  assert.deepEqual(await statuses('staging'), Array(8).fill(200));
  assert.deepEqual(await statuses('internal'), Array(8).fill(403));

  g.write(config('prod', 'broken() { request.path == }'));
  const line = await g.waitForLine((l) =>
    l.includes('config.customFunctions: line 4 of the block: broken()'),
  );
  assert.ok(line, g.stdout.slice(-5).join('\n'));
  assert.deepEqual(await statuses('staging', 4), Array(4).fill(200));
});

test("the admin's trace filter compiles with the running config's functions", async () => {
  const ac = new AbortController();
  const ok = await request(`${g.admin}/debug/trace?expression=${encodeURIComponent('isInternal()')}`, {
    signal: ac.signal,
  });
  assert.equal(ok.statusCode, 200);
  ac.abort();
  await ok.body.dump().catch(() => {});
  const bad = await request(`${g.admin}/debug/trace?expression=${encodeURIComponent('isInternal(1)')}`);
  assert.equal(bad.statusCode, 400);
  assert.match(
    await bad.body.text(),
    /invalid expression: .*isInternal\(int\)[\s\S]*declared isInternal\(\)/s,
  );
});

test('--validate-only names the file, the field and the line of the block', async () => {
  const file = join(tempDir(), 'bad.yaml');
  writeFileSync(file, config('x', 'this.loops(n) { n.loops(n) }'));
  const r = await runGw(['--validate-only', '-f', file]);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    new RegExp(
      `^${RegExp.escape(file)}:\\d+:\\d+: config\\.customFunctions: line 4 of the block: x\\.loops\\(n\\): a function cannot call itself \\(loops → loops\\)$`,
      'm',
    ),
  );
});
