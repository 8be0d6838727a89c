// gwctl as a user runs it: rendering a saved config dump, and clear errors.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { test } from 'node:test';
import type { ConfigDump } from '@gw/api';
import { freePort } from '@gw/testkit';
import { tempDir } from '@gw/testkit/temp-dir';
import { parse } from 'yaml';

const gwctl = join(import.meta.dirname, '..', 'bin', 'gwctl');
const run = (...args: string[]) => spawnSync(gwctl, args, { encoding: 'utf8' });

const dump: ConfigDump & { addedLater: string } = {
  version: 'abc123',
  source: '/etc/gw/config.yaml',
  config: {
    adminAddr: '127.0.0.1:15000',
    statsAddr: '0.0.0.0:15020',
    readinessAddr: '0.0.0.0:15021',
    workerThreads: 'auto',
    logLevel: 'info',
    logFormat: 'text',
  },
  binds: [],
  routes: [
    {
      key: 'default/default/api',
      name: 'api',
      definedAt: 'binds[0].listeners[0].routes[0]',
      hostnames: [],
      matches: [{}],
      backends: [{ name: '127.0.0.1:8080', weight: 1 }],
    },
    {
      key: 'default/default/split',
      name: 'split',
      definedAt: 'binds[0].listeners[0].routes[1]',
      hostnames: ['a.example'],
      matches: [{}, {}],
      backends: [{ name: 'x:1', weight: 3 }],
    },
  ],
  backends: [],
  policies: [],
  workloads: [],
  services: [],
  workers: [{ index: 0, version: 'abc123' }],
  // A field of a newer proxy: gwctl still shows it.
  addedLater: 'kept',
};
const dir = tempDir('gwctl-');
const file = join(dir, 'dump.json');
writeFileSync(file, JSON.stringify(dump));

test('proxy config all renders a dump file as yaml, json and a table', () => {
  const y = run('proxy', 'config', 'all', '--file', file, '-o', 'yaml');
  assert.equal(y.status, 0, y.stderr);
  assert.deepEqual(parse(y.stdout), dump);
  const j = run('proxy', 'config', 'all', '--file', file, '-o', 'json');
  assert.deepEqual(JSON.parse(j.stdout), dump);
  const t = run('proxy', 'config', 'all', '--file', file, '-o', 'table');
  assert.match(t.stdout, /^ROUTE\s+HOSTNAMES\s+MATCHES\s+BACKENDS\n/);
  assert.match(t.stdout, /default\/default\/split\s+a\.example\s+2\s+x:1\(3\)/);
});

test('a malformed dump and an unknown format are clear errors', () => {
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{"version": ');
  const r = run('proxy', 'config', 'all', '--file', bad);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /bad\.json is not valid JSON/);
  const wrong = join(dir, 'wrong.json');
  writeFileSync(wrong, JSON.stringify({ ...dump, routes: [{ key: 7 }] }));
  const w = run('proxy', 'config', 'all', '--file', wrong, '-o', 'table');
  assert.equal(w.status, 1);
  assert.match(w.stderr, /wrong\.json is not a gw config dump: routes\.0\.key: /);
  const f = run('proxy', 'config', 'all', '--file', file, '-o', 'xml');
  assert.equal(f.status, 2);
  assert.match(f.stderr, /unknown output format xml/);
});

test('a closed admin port says so', async () => {
  // a port nothing listens on (freePort's are never handed to another listener)
  const port = await freePort();
  const r = run('proxy', 'log', '-p', String(port));
  assert.equal(r.status, 1);
  assert.match(
    r.stderr,
    /cannot reach the gw admin interface at 127\.0\.0\.1:\d+ \(ECONNREFUSED\); is gw running\?/,
  );
});

test('version', () => {
  assert.match(run('version').stdout, /^gwctl \d+\.\d+\.\d+ \(node 24\./);
});
