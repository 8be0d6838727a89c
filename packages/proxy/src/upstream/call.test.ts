// Upstream failures become the right gateway error: an answer that is not HTTP is a 502, not a 500.
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { errors } from 'undici';
import { toGwError } from './call.ts';

const ANSWERS: Record<string, string> = {
  '/not-http': 'SSH-2.0-OpenSSH_9.6\r\n',
  '/bad-status': 'HTTP/1.1 abc OK\r\ncontent-length: 0\r\n\r\n',
  '/bad-header': 'HTTP/1.1 200 OK\r\nno colon here\r\ncontent-length: 0\r\n\r\n',
  '/bad-length': 'HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n',
};

let garbage: net.Server;
let p: TestProxy;
before(async () => {
  // Answers each request with the bytes its path names, then closes.
  garbage = net.createServer((c) => {
    c.once('data', (d: Buffer) => {
      const path = d.toString('latin1').split(' ')[1] ?? '';
      c.end(ANSWERS[path] ?? 'garbage\r\n\r\n');
    });
    c.on('error', () => {});
  });
  await new Promise<void>((r) => garbage.listen(0, '127.0.0.1', r));
  const port = (garbage.address() as AddressInfo).port;
  p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${port}"}]
`);
});
after(async () => {
  await p.close();
  await new Promise((r) => garbage.close(r));
});

test('an upstream that answers something other than HTTP gets the client a 502', async () => {
  for (const path of Object.keys(ANSWERS)) {
    const r = await fetch(p.url(path));
    const text = await r.text();
    assert.equal(r.status, 502, `${path}: ${text}`);
    assert.match(text, /^upstream error: /, path);
  }
});

test("toGwError: undici's parser error, with or without a code, is GW_ERR_UPSTREAM_PROTOCOL", () => {
  const signal = new AbortController().signal;
  const bare = new errors.HTTPParserError('Response does not match the HTTP/1.1 protocol');
  assert.equal(toGwError(bare, signal).code, 'GW_ERR_UPSTREAM_PROTOCOL');
  const coded = Object.assign(new errors.HTTPParserError('bad'), { code: 'HPE_INVALID_STATUS' });
  assert.equal(toGwError(coded, signal).code, 'GW_ERR_UPSTREAM_PROTOCOL');
  assert.equal(toGwError(new Error('something else'), signal).code, 'GW_ERR_INTERNAL');
});
