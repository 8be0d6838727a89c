// gRPC through a backend whose http.version says nothing: the call goes over HTTP/2 (h2c here), as
// gRPC needs, while other requests to such a backend keep HTTP/1.1.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type Client,
  credentials,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { startUpstream, type TestServer } from '@gw/testkit';
import { ECHO_SERVICE, type EchoSay } from '@gw/testkit/grpc-echo';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let server: Server;
let http1: TestServer;
let proxy: TestProxy;
let client: Client & { say: EchoSay };

before(async () => {
  server = new Server();
  server.addService(ECHO_SERVICE, {
    say: (call: { request: Buffer }, cb: (err: Partial<ServiceError> | null, res?: Buffer) => void) =>
      call.request.toString() === 'fail'
        ? cb({ code: status.NOT_FOUND, details: 'no such thing' })
        : cb(null, Buffer.concat([Buffer.from('echo: '), call.request])),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  http1 = await startUpstream('http1');
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /test.Echo/}}]
      backends: [{host: "127.0.0.1:${port}"}]
    - backends: [{host: "127.0.0.1:${http1.port}"}]
`);
  const Ctor = makeGenericClientConstructor(ECHO_SERVICE, 'Echo');
  client = new Ctor(`127.0.0.1:${proxy.port()}`, credentials.createInsecure()) as unknown as typeof client;
});

after(async () => {
  client.close();
  await proxy.close();
  await http1.close();
  server.forceShutdown();
});

test('a gRPC call reaches an h2c-only server through a backend without http.version', async () => {
  const res = await new Promise<Buffer>((resolve, reject) =>
    client.say(Buffer.from('hi'), (err, r) => (err ? reject(err) : resolve(r as Buffer))),
  );
  assert.equal(res.toString(), 'echo: hi');
  // the status comes back in the trailers, a failure's with its message
  const err = await new Promise<ServiceError | null>((resolve) =>
    client.say(Buffer.from('fail'), (e) => resolve(e)),
  );
  assert.equal(err?.code, status.NOT_FOUND, err?.details);
  assert.equal(err?.details, 'no such thing');
});

test('other requests to such a backend keep HTTP/1.1', async () => {
  const r = await fetch(proxy.url('/plain'));
  assert.equal(r.status, 200);
  await r.text();
  assert.equal(http1.seen.at(-1)?.url, '/plain');
});
