// Result file names: a run never overwrites another kind of run of the same day; the report, and
// latest.json with it, shows the newest run of the usual modes over newer runs of some modes or quick
// ones.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ModeResult } from '../scenarios/types.ts';
import { entriesAfterRun, latestEntry } from './latest.ts';
import { newestResults, type ResultFile, resultFileName } from './report.ts';

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

test('the report takes the newest run of the usual modes, over newer runs of some modes and quick runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-results-'));
  try {
    const write = (file: string, startedAt: string, quick: boolean, ...names: string[]) =>
      writeFileSync(
        join(dir, file),
        JSON.stringify({
          scenario: file.slice('2026-12-01-'.length).split('.')[0],
          startedAt,
          quick,
          settings: {},
          modes: modes(...names),
        }),
      );
    write('2026-11-30-plain-http.json', '2026-11-30T01:00:00Z', false, 'pinned', 'unpinned');
    write('2026-12-01-plain-http.json', '2026-12-01T01:00:00Z', false, 'pinned', 'unpinned');
    write('2026-12-01-plain-http.pinned.json', '2026-12-01T02:00:00Z', false, 'pinned');
    write('2026-12-01-plain-http.quick.json', '2026-12-01T03:00:00Z', true, 'pinned');
    write('2026-12-01-llm.pinned.json', '2026-12-01T02:00:00Z', false, 'pinned');
    write('2026-12-01-llm.quick.json', '2026-12-01T03:00:00Z', true, 'pinned');
    // not a scenario run (bench/cel writes one): no modes, no settings
    writeFileSync(
      join(dir, '2026-12-01-cel.json'),
      JSON.stringify({ scenario: 'plain-http', startedAt: 'z' }),
    );
    const chosen = newestResults(dir);
    assert.equal(chosen.get('plain-http')?.file, '2026-12-01-plain-http.json');
    // with no run of the usual modes, a run of some modes still beats a quick run
    assert.equal(chosen.get('llm')?.file, '2026-12-01-llm.pinned.json');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('latest.json keeps the figures of the run of the usual modes when a run of some modes follows it', () => {
  const bench = mkdtempSync(join(tmpdir(), 'gw-bench-latest-'));
  try {
    mkdirSync(join(bench, 'results'));
    const run = (file: string, startedAt: string, cpu: number, ...names: string[]): ResultFile => {
      const r = {
        scenario: 'plain-http',
        date: '2026-12-01',
        startedAt,
        quick: false,
        settings: {},
        modes: names.map((name) => ({
          mode: { name, workers: name === 'pinned' ? 1 : 2 },
          figures: [{ key: 'gw-cpu-per-request', median: cpu }],
        })),
      } as unknown as ResultFile;
      writeFileSync(join(bench, 'results', file), JSON.stringify(r));
      return r;
    };
    run('2026-12-01-plain-http.json', '2026-12-01T01:00:00Z', 70, 'pinned', 'unpinned');
    const later = run('2026-12-01-plain-http.pinned.json', '2026-12-01T02:00:00Z', 90, 'pinned');
    const ran = latestEntry(later, '2026-12-01-plain-http.pinned.json');
    assert.equal(ran?.cpu_us_per_request, 90);
    const full = entriesAfterRun(bench, ran ? [ran] : [], false);
    assert.deepEqual(
      full.map((e) => [e.scenario, e.source, e.cpu_us_per_request]),
      [['plain', '2026-12-01-plain-http.json', 70]],
    );
    // a quick run merges what it measured (into latest.quick.json, out of git)
    assert.equal(entriesAfterRun(bench, ran ? [ran] : [], true)[0]?.cpu_us_per_request, 90);
  } finally {
    rmSync(bench, { recursive: true, force: true });
  }
});
