// Upstream failures become the right gateway error: an answer that is not HTTP is a 502, not a 500.
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { errors } from 'undici';
import { tlsReason, toGwError } from './call.ts';

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

test("a TLS failure is told in the gateway's words: no advice to run Node differently, no raw OpenSSL string", async (t) => {
  assert.equal(
    tlsReason(
      'unable to verify the first certificate; if the root CA is installed locally, try running Node.js with --use-system-ca',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    ),
    'unable to verify the first certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE)',
  );
  assert.equal(
    tlsReason(
      'C0EC1CF6B57F0000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/openssl/ssl/record/ssl3_record.c:354:\n',
      'ERR_SSL_WRONG_VERSION_NUMBER',
    ),
    'wrong version number (does the backend speak TLS on that port?)',
  );
  // backendTLS to a plain-text server: what the client reads
  const plain = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {backendTLS: {}}
      backends: [{host: "127.0.0.1:${(garbage.address() as AddressInfo).port}"}]
`);
  t.after(() => plain.close());
  const r = await fetch(plain.url('/'));
  assert.equal(r.status, 502);
  const text = await r.text();
  assert.match(text, /^upstream TLS error: /);
  assert.doesNotMatch(text, /Node\.js|deps\/openssl|SSL routines/);
});
