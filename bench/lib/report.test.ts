// Result file names: a run never overwrites another kind of run of the same day.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModeResult } from '../scenarios/types.ts';
import { resultFileName } from './report.ts';

const modes = (...names: string[]) => names.map((name) => ({ mode: { name } }) as unknown as ModeResult);

test('a full run, a quick run and runs of some modes each get their own file', () => {
  const day = { date: '2026-11-25', scenario: 'plain-http' };
  const names = [
    resultFileName({ ...day, quick: false, modes: modes('pinned', 'unpinned') }),
    resultFileName({ ...day, quick: false, modes: modes('pinned') }),
    resultFileName({ ...day, quick: false, modes: modes('unpinned') }),
    resultFileName({ ...day, quick: true, modes: modes('pinned') }),
    resultFileName({ ...day, quick: true, modes: modes('pinned', 'unpinned') }),
  ];
  assert.deepEqual(names, [
    '2026-11-25-plain-http.json',
    '2026-11-25-plain-http.pinned.json',
    '2026-11-25-plain-http.unpinned.json',
    '2026-11-25-plain-http.quick.json',
    '2026-11-25-plain-http.pinned+unpinned.quick.json',
  ]);
});
