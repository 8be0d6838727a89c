import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfigText } from '../config/load.ts';
import { buildLayers } from './registry.ts';
import { sharedMemoryOf } from './shared-memory.ts';

const yaml = `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: limited
      policies:
        localRateLimit:
        - {maxTokens: 5, tokensPerFill: 1, fillInterval: 1s}
        - {tokens: 100, unit: Minutes}
      backends: [{host: "127.0.0.1:9"}]
    - name: plain
      backends: [{host: "127.0.0.1:9"}]
`;

test('the main thread allocates exactly the shared blocks that building the routes asks for', () => {
  const { ir } = loadConfigText('test.yaml', yaml, process.cwd());
  const asked: { key: string; bytes: number }[] = [];
  for (const b of ir.binds)
    for (const l of b.listeners)
      for (const r of l.routes)
        buildLayers(r.policies, ir.global, r.key, (key, bytes) => {
          asked.push({ key, bytes });
          return new SharedArrayBuffer(bytes);
        });
  const announced = sharedMemoryOf(ir);
  assert.equal(announced.length, 2);
  assert.deepEqual(announced, asked);
});
