import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { serialize } from 'node:v8';
import { loadConfigText } from '../../config/load.ts';
import { encodeSecrets } from '../../secret.ts';

test('the agent backend kinds load with the first config that has one: a data plane serving plain routes never loads them', () => {
  // A process of its own (this one may have loaded them), fed IRs built here, recording each module it
  // loads.
  const ir = (yaml: string) =>
    serialize(encodeSecrets(loadConfigText('x.yaml', yaml, process.cwd()).ir)).toString('base64');
  const plain = ir(
    'binds:\n- port: 0\n  listeners:\n  - routes:\n    - backends:\n      - host: 127.0.0.1:1\n',
  );
  const ai = ir(
    'binds:\n- port: 0\n  listeners:\n  - routes:\n    - backends:\n      - ai:\n          name: m\n' +
      '          provider: {openAI: {model: gpt-4o-mini}}\n          hostOverride: 127.0.0.1:1\n',
  );
  const script = `
    import { registerHooks } from 'node:module';
    import { deserialize } from 'node:v8';
    const loaded = [];
    registerHooks({ resolve: (spec, ctx, next) => { const r = next(spec, ctx); loaded.push(r.url); return r; } });
    const { decodeSecrets } = await import('./packages/proxy/src/secret.ts');
    const { compileTable } = await import('./packages/proxy/src/routing/table.ts');
    await import('./packages/proxy/src/server/data-plane-port.ts');
    const ir = (b64) => decodeSecrets(deserialize(Buffer.from(b64, 'base64')));
    const agent = () => ['/upstream/backends/agent.ts', '/llm/formats/', '/mcp/federation', '/a2a/'].map((p) => loaded.some((u) => u.includes(p) && !u.endsWith('/a2a/info.ts')));
    compileTable(ir(${JSON.stringify(plain)}), null);
    const before = agent();
    compileTable(ir(${JSON.stringify(ai)}), null);
    console.log(JSON.stringify({ before, after: agent() }));
  `;
  const out = execFileSync(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
    { cwd: join(import.meta.dirname, '../../../../..'), encoding: 'utf8' },
  );
  const { before, after } = JSON.parse(out.trim().split('\n').at(-1) ?? '') as {
    before: boolean[];
    after: boolean[];
  };
  assert.deepEqual(before, [false, false, false, false], 'nothing of the agent kinds before an ai backend');
  assert.equal(after[0], true, 'agent.ts loaded for the ai backend');
  assert.equal(after[1], true, 'the LLM formats came with it');
});
