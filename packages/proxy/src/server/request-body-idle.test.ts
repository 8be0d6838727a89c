// The HTTP/1 body-idle sweep lets go of a request as soon as its watch stops: what it held is garbage
// at the next young-generation collection, not promoted to the old generation. A Set of watches kept
// every request it had held alive past its scavenges (1.4 MiB promoted per scavenge under load).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { RequestContext } from '../pipeline/context.ts';
import { watchRequestBody } from './request-body-idle.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as (o?: { type: 'minor' | 'major' }) => void;
const oldSpace = () =>
  v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_used_size ?? 0;

test('a watch that has stopped keeps nothing of its request alive through a scavenge', () => {
  // the sweep and its container settle into the old generation first
  watchRequestBody({ req: {} } as unknown as RequestContext, 3_600_000)();
  gc({ type: 'major' });
  const before = oldSpace();
  let held = 0;
  for (let round = 0; round < 20; round++) {
    const stops: (() => void)[] = [];
    for (let i = 0; i < 500; i++) {
      // a request stands in with 1 KiB of its own
      const ctx = { req: {}, payload: `${'x'.repeat(1024)}${round}:${i}` } as unknown as RequestContext;
      held += 1024;
      stops.push(watchRequestBody(ctx, 3_600_000));
    }
    for (const stop of stops) stop();
    gc({ type: 'minor' });
  }
  gc({ type: 'minor' });
  const grew = oldSpace() - before;
  // 10 MiB of requests came and went; a container that kept them would have promoted most of it
  assert.ok(grew < held / 10, `old space grew by ${grew} bytes after ${held} bytes of watched requests`);
});
