import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { maxFds, processMetricsText, threadCount, virtualMemoryBytes } from './process-metrics.ts';

test('/proc parsers: a command name with spaces and parentheses, an unlimited limit, no file', () => {
  const stat = (comm: string) =>
    `4242 (${comm}) S 1 4242 4242 0 -1 4194560 2155 0 0 0 12 3 0 0 20 0 11 0 9087 1212416000 21000 18446744073709551615`;
  assert.equal(virtualMemoryBytes(stat('node')), 1212416000);
  assert.equal(virtualMemoryBytes(stat('a) b (c')), 1212416000);
  assert.equal(virtualMemoryBytes(undefined), undefined);
  const limits = (n: string) =>
    `Limit                     Soft Limit           Hard Limit           Units\nMax processes             95618                95618                processes\nMax open files            ${n}              524288               files\n`;
  assert.equal(maxFds(limits('1048576')), 1048576);
  assert.equal(maxFds(limits('unlimited')), undefined);
  assert.equal(threadCount('Name:\tnode\nThreads:\t11\nSigQ:\t0/95618\n'), 11);
  assert.equal(threadCount(undefined), undefined);
});

test('the text: one HELP and TYPE per family, the figures this process has, labels escaped', () => {
  const text = processMetricsText('gw_test', 'v1 "quoted"\\');
  const names = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
  assert.equal(new Set(names).size, names.length);
  for (const n of [
    'process_cpu_seconds_total',
    'process_resident_memory_bytes',
    'process_start_time_seconds',
  ])
    assert.ok(names.includes(n), n);
  if (process.platform === 'linux') {
    const vm = Number(/^process_virtual_memory_bytes (\d+)$/m.exec(text)?.[1]);
    const vmSize =
      Number(/^VmSize:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'latin1'))?.[1]) * 1024;
    // the two reads are moments apart; a mapping or two may come and go between them
    assert.ok(Math.abs(vm - vmSize) < 64 * 1024 * 1024, `${vm} against ${vmSize}`);
    assert.ok(Number(/^process_threads (\d+)$/m.exec(text)?.[1]) >= 1);
    assert.ok(Number(/^process_open_fds (\d+)$/m.exec(text)?.[1]) >= 3);
  }
  assert.match(
    text,
    /^gw_test_build_info\{version="v1 \\"quoted\\"\\\\",node_version="v\d+\.\d+\.\d+"\} 1$/m,
  );
  assert.ok(text.endsWith('\n') && !text.endsWith('\n\n'));
});
