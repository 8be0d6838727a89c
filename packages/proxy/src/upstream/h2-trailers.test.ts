// An HTTP/2 backend's answer that ends with trailers arrives whole, however slowly the client reads:
// the trailers come after the last byte of the body (RFC 9113 §8.1). undici 7 completed the request
// as the trailers frame arrived and dropped the body the stream still buffered (patches/undici*).
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

const CHUNK = 16 * 1024;
const CHUNKS = 320; // 5 MiB
let upstream: http2.Http2Server;
let proxy: TestProxy;

before(async () => {
  upstream = http2.createServer();
  upstream.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/octet-stream' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'x-checksum': 'end' }));
    let i = 0;
    const more = () => {
      while (i < CHUNKS)
        if (!stream.write(Buffer.alloc(CHUNK, i++ % 251))) return void stream.once('drain', more);
      stream.end();
    };
    more();
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = (upstream.address() as AddressInfo).port;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: 127.0.0.1:${port}
        policies: {http: {version: HTTP/2.0}}
`);
});

after(async () => {
  await proxy.close();
  await new Promise((resolve) => upstream.close(resolve));
});

/** A GET over h2c whose reader stops now and then; the bytes and the trailers it got. */
async function slowRead(): Promise<{ bytes: number; trailers: http2.IncomingHttpHeaders }> {
  const client = http2.connect(`http://127.0.0.1:${proxy.port()}`);
  try {
    return await new Promise((resolve, reject) => {
      const req = client.request({ ':path': '/big' });
      let bytes = 0;
      let n = 0;
      let trailers: http2.IncomingHttpHeaders = {};
      req.on('trailers', (t) => {
        trailers = t;
      });
      req.on('data', (d: Buffer) => {
        bytes += d.length;
        if (++n % 4 === 0) {
          req.pause();
          setTimeout(() => req.resume(), 3);
        }
      });
      req.on('end', () => resolve({ bytes, trailers }));
      req.on('error', reject);
      req.end();
    });
  } finally {
    client.close();
  }
}

test("an HTTP/2 backend's body comes whole before its trailers, to a client that reads slowly", async () => {
  for (let round = 0; round < 4; round++) {
    const r = await slowRead();
    assert.equal(r.bytes, CHUNK * CHUNKS, `round ${round}: every byte of the body`);
    assert.equal(r.trailers['x-checksum'], 'end', `round ${round}: the trailers after it`);
  }
});
