// gwctl as a user runs it: rendering a saved config dump, and clear errors.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';

const gwctl = join(import.meta.dirname, '..', 'bin', 'gwctl');
const run = (...args: string[]) => spawnSync(gwctl, args, { encoding: 'utf8' });

const dump = {
  version: 'abc123',
  routes: [
    {
      key: 'default/default/api',
      hostnames: [],
      matches: [{}],
      backends: [{ name: '127.0.0.1:8080', weight: 1 }],
    },
    {
      key: 'default/default/split',
      hostnames: ['a.example'],
      matches: [{}, {}],
      backends: [{ name: 'x:1', weight: 3 }],
    },
  ],
};
const dir = mkdtempSync(join(tmpdir(), 'gwctl-'));
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
  const f = run('proxy', 'config', 'all', '--file', file, '-o', 'xml');
  assert.equal(f.status, 2);
  assert.match(f.stderr, /unknown output format xml/);
});

test('a closed admin port says so', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
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
