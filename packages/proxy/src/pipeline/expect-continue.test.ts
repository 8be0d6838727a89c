// Expect: 100-continue: the gateway sends the 100 itself once the request is on its way upstream,
// never to a request its policies refuse, and never forwards the expectation.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { type Echo, makeTestPki, rawRequest, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let p: TestProxy;
before(async () => {
  up = await startUpstream();
  p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: locked
      matches: [{path: {pathPrefix: /locked}}]
      policies: {apiKey: {keys: [k1]}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: open
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await p.close();
  await up.close();
});
const lastSeen = () => up.seen[up.seen.length - 1] as Echo;

const BODY_BYTES = 2 * 1024 * 1024;

/** curl --data-binary @file (2 MB) with Expect: 100-continue; a long expect timeout, so only a 100 lets it send. */
async function curlUpload(t: { after(fn: () => void): void }, url: string, extra: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'gw-expect-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'body.bin');
  writeFileSync(file, Buffer.alloc(BODY_BYTES, 'x'));
  const { stdout } = await promisify(execFile)('curl', [
    '-sS',
    ...extra,
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{http_version}',
    '-H',
    'Expect: 100-continue',
    '--expect100-timeout',
    '30',
    '--data-binary',
    `@${file}`,
    url,
  ]);
  return stdout;
}

test('curl --data-binary of 2 MB with Expect: 100-continue goes through', async (t) => {
  assert.equal(await curlUpload(t, p.url('/upload')), '200 1.1');
  assert.equal(lastSeen().body.length, BODY_BYTES);
  assert.equal(lastSeen().headers.expect, undefined, 'the expectation is not forwarded');
});

test('the same over HTTPS, HTTP/1.1 and h2', async (t) => {
  const pki = await makeTestPki(['expect.test']);
  t.after(() => pki.cleanup());
  const cert = pki.servers['expect.test'] as { certFile: string; keyFile: string };
  const tls = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`);
  t.after(() => tls.close());
  const url = `https://127.0.0.1:${tls.port()}/upload`;
  for (const [flag, version] of [
    ['--http1.1', '1.1'],
    ['--http2', '2'],
  ]) {
    assert.equal(await curlUpload(t, url, ['-k', flag as string]), `200 ${version}`);
    assert.equal(lastSeen().body.length, BODY_BYTES);
  }
});

test('the client gets a 100 before it sends the body, and the upstream gets the body', async () => {
  const r = await rawRequest(
    p.port(),
    'POST /open HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n',
    { body: 'hello', afterContinue: true },
  );
  assert.deepEqual(r.statusLines.slice(0, 1), ['HTTP/1.1 100 Continue']);
  assert.equal(r.status, 200);
  assert.equal(JSON.parse(r.body).body, 'hello');
});

test('a request the policies refuse gets its 401 without a 100, and its body is never read', async () => {
  const before = up.seen.length;
  const r = await rawRequest(
    p.port(),
    'POST /locked HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n',
  );
  assert.equal(r.status, 401);
  assert.deepEqual(r.statusLines.length, 1, `no 100: ${r.statusLines.join(' | ')}`);
  assert.equal(up.seen.length, before);
});

test('with the key, the locked route continues too', async () => {
  const r = await rawRequest(
    p.port(),
    'POST /locked HTTP/1.1\r\nhost: x\r\nauthorization: Bearer k1\r\ncontent-length: 2\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n',
    { body: 'ok', afterContinue: true },
  );
  assert.equal(r.statusLines[0], 'HTTP/1.1 100 Continue');
  assert.equal(r.status, 200);
});
