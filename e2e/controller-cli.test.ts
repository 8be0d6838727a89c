// bin/gw-controller's command line without a cluster: what a typo in the chart's
// controller.extraArgs shows in the pod's log.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { CONTROLLER_BIN } from './support/controller-process.ts';

const run = (...args: string[]) => spawnSync(CONTROLLER_BIN, args, { encoding: 'utf8', timeout: 30_000 });

test('an unknown or incomplete flag exits 2 naming it, with the usage and no stack trace', () => {
  for (const [args, said] of [
    [['--foo=bar'], "Unknown option '--foo'"],
    [['--health-port'], "Option '--health-port <value>' argument missing"],
  ] as const) {
    const r = run(...args);
    assert.equal(r.status, 2, r.stderr);
    assert.ok(r.stderr.startsWith(`gw-controller: ${said}`), r.stderr);
    assert.match(r.stderr, /^Usage: gw-controller/m);
    assert.doesNotMatch(r.stderr, /^\s+at /m);
  }
});

test('--version names the build', () => {
  const r = run('--version');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^gw-controller \d+\.\d+\.\d+ \(node \d+/);
});
