// A client that ends its side of an HTTP/1 connection (a FIN) on a plain-text bind: gw ends the
// connection, whenever the FIN comes, and the accepted socket keeps its shape. The connection reaches
// node's HTTP server through gw's own listener, which sets allowHalfOpen on it as node's listener
// does; without that, net gave every such socket an own `write` (writeAfterFIN) at the client's FIN,
// and the first one cost V8 the compiled code of the hot path (bench/TAIL.md).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { watchAccepted } from './accepted-test-support.ts';
import { http1ServerKind } from './http1-kind.ts';

/**
 * gw's own HTTP/1.1 server (GW_HTTP1_SERVER=net, as `make unit-net` runs this suite) ends such
 * connections itself and keeps net's ending: the shape checks are node:http's.
 */
const nodeHttp = http1ServerKind() === 'node';

let up: TestServer;
let proxy: TestProxy;
const accepted = watchAccepted(() => proxy?.port() ?? 0);

before(async () => {
  up = await startUpstream('echo');
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`);
});
after(async () => {
  accepted.close();
  await proxy?.close();
  await up?.close();
});

interface Exchange {
  client: net.Socket;
  /** Everything the client received until gw ended the connection. */
  received: Promise<string>;
}

function connect(): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const client = net.connect(proxy.port(), '127.0.0.1');
    let got = '';
    client.setEncoding('latin1');
    client.on('data', (d: string) => {
      got += d;
    });
    const received = new Promise<string>((done, fail) => {
      const timer = setTimeout(
        () => fail(new Error(`gw did not end the connection; got ${JSON.stringify(got)}`)),
        5000,
      );
      client.on('end', () => {
        clearTimeout(timer);
        done(got);
      });
      client.on('error', (err) => {
        clearTimeout(timer);
        fail(err);
      });
    });
    received.catch(() => {});
    client.once('connect', () => resolve({ client, received }));
    client.once('error', reject);
  });
}

const serverSide = (client: net.Socket) => accepted.serverSide(client);

/** Resolves once what the client has received since the call satisfies `done`. */
function receivedUntil(client: net.Socket, done: (got: string) => boolean): Promise<void> {
  return new Promise((resolve) => {
    let got = '';
    const onData = (d: string) => {
      got += d;
      if (done(got)) {
        client.off('data', onData);
        resolve();
      }
    };
    client.on('data', onData);
  });
}

const closed = (s: net.Socket) =>
  s.destroyed && s.closed ? Promise.resolve() : new Promise<void>((r) => s.once('close', () => r()));

test('a client that closes a kept-alive connection after its answer: gw ends it, the socket keeps its write', {
  timeout: 10_000,
}, async () => {
  const { client, received } = await connect();
  const gwSide = await serverSide(client);
  client.write('GET /first HTTP/1.1\r\nhost: example.test\r\n\r\n');
  // the answer in full (the echo upstream's JSON), then the client's FIN
  await receivedUntil(client, (got) => {
    const head = got.indexOf('\r\n\r\n');
    const len = /content-length: (\d+)/i.exec(got)?.[1];
    return head >= 0 && len !== undefined && got.length >= head + 4 + Number(len);
  });
  client.end();
  const all = await received;
  assert.match(all, /^HTTP\/1\.1 200 /);
  assert.match(all, /"url":"\/first"/);
  await closed(gwSide);
  if (nodeHttp) {
    assert.equal(
      Object.hasOwn(gwSide, 'write'),
      false,
      'net replaced write on the socket (writeAfterFIN): allowHalfOpen was false when the client ended',
    );
    assert.equal(gwSide.allowHalfOpen, true);
  }
});

test('a client that sends its request and its FIN together: gw ends the connection (as agentgateway does)', {
  timeout: 10_000,
}, async () => {
  const { client, received } = await connect();
  const gwSide = await serverSide(client);
  client.end('GET /half HTTP/1.1\r\nhost: example.test\r\n\r\n');
  await received;
  await closed(gwSide);
  if (nodeHttp) assert.equal(Object.hasOwn(gwSide, 'write'), false);
});

test('a client that ends before sending a byte: gw ends the connection too', {
  timeout: 10_000,
}, async () => {
  const { client, received } = await connect();
  const gwSide = await serverSide(client);
  client.end();
  assert.equal(await received, '');
  await closed(gwSide);
});

test('pipelined requests answered, then a FIN: gw ends the connection', { timeout: 10_000 }, async () => {
  const { client, received } = await connect();
  await serverSide(client);
  client.write('GET /a HTTP/1.1\r\nhost: example.test\r\n\r\nGET /b HTTP/1.1\r\nhost: example.test\r\n\r\n');
  // both answers, then the FIN
  await receivedUntil(
    client,
    (got) => (got.match(/HTTP\/1\.1 200 /g) ?? []).length === 2 && got.includes('"url":"/b"'),
  );
  client.end();
  const all = await received;
  assert.equal((all.match(/HTTP\/1\.1 200 /g) ?? []).length, 2);
});
