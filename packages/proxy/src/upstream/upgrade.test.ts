// WebSocket (and other Upgrade) requests through gw with the real `ws` client and server: the
// route's policies on the handshake, the backend's answer relayed, frames both ways, either side
// closing, backendTLS to a wss upstream, and a drain with a connection open.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import http2, { type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import WebSocket, { WebSocketServer } from 'ws';

interface Upstream {
  server: Server;
  wss: WebSocketServer;
  port: number;
  /** Handshake requests the upstream saw. */
  seen: IncomingMessage[];
  /** Server-side sockets currently open. */
  open: Set<WebSocket>;
}

/** An echo WebSocket server; `/refuse` answers 403 instead of upgrading, `/bye` closes at once. */
async function startWsUpstream(tlsOptions?: { cert: string; key: string }): Promise<Upstream> {
  const server = tlsOptions ? createHttpsServer(tlsOptions) : createHttpServer();
  server.on('request', (_req, res) => res.end('plain http\n'));
  const seen: IncomingMessage[] = [];
  const open = new Set<WebSocket>();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 64 * 1024 * 1024,
    handleProtocols: (protocols) => (protocols.has('chat') ? 'chat' : false),
  });
  server.on('upgrade', (req, socket, head) => {
    seen.push(req);
    if (req.url === '/refuse') {
      socket.end(
        'HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: 8\r\nx-up: 1\r\n\r\nno ws 4u',
      );
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      open.add(ws);
      ws.once('close', () => open.delete(ws));
      if (req.url === '/bye') {
        ws.close(4000, 'bye');
        return;
      }
      if (req.url === '/hello') ws.send(`hello ${req.headers['x-added'] ?? ''}`);
      ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, wss, port: (server.address() as AddressInfo).port, seen, open };
}

async function closeUpstream(u: Upstream): Promise<void> {
  for (const ws of u.open) ws.terminate();
  u.wss.close();
  u.server.closeAllConnections();
  await new Promise((r) => u.server.close(r));
}

function connectWs(
  url: string,
  opts: WebSocket.ClientOptions = {},
  protocols?: string[],
): Promise<WebSocket> {
  const ws = new WebSocket(url, protocols, { maxPayload: 64 * 1024 * 1024, ...opts });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** The status (and body) a refused handshake got, as `ws` reports it. */
function refusal(url: string, opts: WebSocket.ClientOptions = {}): Promise<{ status: number; body: string }> {
  const ws = new WebSocket(url, opts);
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('the handshake was accepted')));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => {
        ws.terminate();
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
  });
}

/** Connects to a path whose upstream greets at once: the greeting may arrive with the 101. */
async function greeted(
  url: string,
  opts: WebSocket.ClientOptions = {},
): Promise<{ ws: WebSocket; greeting: string }> {
  const ws = new WebSocket(url, opts);
  const first = nextMessage(ws);
  await once(ws, 'open');
  return { ws, greeting: (await first).data.toString() };
}

function nextMessage(ws: WebSocket): Promise<{ data: Buffer; binary: boolean }> {
  return new Promise((resolve, reject) => {
    ws.once('message', (data, binary) => resolve({ data: data as Buffer, binary }));
    ws.once('close', () => reject(new Error('closed before a message')));
  });
}

async function waitFor(what: string, cond: () => boolean, ms = 2000): Promise<void> {
  const until = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

let up: Upstream;
let proxy: TestProxy;
let token: string;
let userToken: string;
let wsUrl: (path: string) => string;

before(async () => {
  up = await startWsUpstream();
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  const jwks = JSON.stringify({ keys: [jwk] });
  token = await new SignJWT({ role: 'admin' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer('https://idp.local')
    .setAudience('ws')
    .setSubject('u1')
    .setExpirationTime('1h')
    .sign(privateKey);
  userToken = await new SignJWT({ role: 'user' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer('https://idp.local')
    .setAudience('ws')
    .setSubject('u2')
    .setExpirationTime('1h')
    .sign(privateKey);
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: ws
    routes:
    - name: secured
      matches: [{path: {pathPrefix: /secured}}]
      policies:
        jwtAuth: {issuer: https://idp.local, audiences: [ws], jwks: {inline: '${jwks}'}}
        authorization: {rules: ['jwt.role == "admin"']}
        urlRewrite: {path: {prefix: /hello}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: modified
      matches: [{path: {pathPrefix: /hello}}]
      policies:
        requestHeaderModifier: {set: {x-added: from-gw}, remove: [x-secret]}
        responseHeaderModifier: {set: {x-resp: gw}}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - name: llm
      matches: [{path: {pathPrefix: /v1}}]
      backends:
      - ai: {name: openai, provider: {openAI: {}}, hostOverride: "127.0.0.1:${up.port}"}
    - name: echo
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
  wsUrl = (path) => `ws://127.0.0.1:${proxy.port()}${path}`;
});

after(async () => {
  await proxy.close();
  await closeUpstream(up);
});

test('text and binary messages echo through gw, the subprotocol is negotiated end to end', async () => {
  const ws = await connectWs(wsUrl('/echo'), {}, ['chat']);
  assert.equal(ws.protocol, 'chat');
  ws.send('hi there');
  const text = await nextMessage(ws);
  assert.equal(text.binary, false);
  assert.equal(text.data.toString(), 'hi there');
  const bin = Buffer.from([0, 1, 2, 255, 254]);
  ws.send(bin);
  const back = await nextMessage(ws);
  assert.equal(back.binary, true);
  assert.deepEqual(back.data, bin);
  ws.close(1000, 'done');
  const [code, reason] = await once(ws, 'close');
  assert.equal(code, 1000);
  assert.equal(String(reason), 'done');
});

test('large frames and many messages keep their order and bytes', async () => {
  const ws = await connectWs(wsUrl('/echo'));
  const big = Buffer.alloc(8 * 1024 * 1024);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
  const gotBig = nextMessage(ws);
  ws.send(big);
  assert.ok((await gotBig).data.equals(big));

  const n = 2000;
  const got: string[] = [];
  const all = new Promise<void>((resolve) => {
    ws.on('message', (d) => {
      got.push(String(d));
      if (got.length === n) resolve();
    });
  });
  for (let i = 0; i < n; i++) ws.send(`m${i}`);
  await all;
  assert.deepEqual(
    got,
    Array.from({ length: n }, (_, i) => `m${i}`),
  );
  ws.close();
  await once(ws, 'close');
});

test('the access log records the upgraded request with status 101, its life and its bytes', async () => {
  const before = proxy.accessLog.length;
  const ws = await connectWs(wsUrl('/echo'));
  ws.send('x'.repeat(1000));
  await nextMessage(ws);
  await sleep(60);
  ws.close();
  await once(ws, 'close');
  await waitFor('the access log line', () => proxy.accessLog.length > before);
  const rec = proxy.accessLog.at(-1) as Record<string, unknown>;
  assert.equal(rec['http.status'], 101);
  assert.match(String(rec.route), /echo$/);
  assert.ok(Number.parseFloat(String(rec.duration)) >= 50, `duration ${rec.duration}`);
  assert.ok((rec['upgrade.bytesReceived'] as number) >= 1000, `received ${rec['upgrade.bytesReceived']}`);
  assert.ok((rec['upgrade.bytesSent'] as number) >= 1000, `sent ${rec['upgrade.bytesSent']}`);
  assert.equal(rec['upgrade.protocol'], 'websocket');
});

test('header modifiers shape the handshake sent upstream and the 101 sent back', async () => {
  const ws = new WebSocket(wsUrl('/hello'), { headers: { 'x-secret': 's3cret' } });
  const resHeaders = new Promise<IncomingMessage>((r) => ws.once('upgrade', r));
  const first = await nextMessage(ws);
  assert.equal(first.data.toString(), 'hello from-gw');
  assert.equal((await resHeaders).headers['x-resp'], 'gw');
  const seen = up.seen.at(-1) as IncomingMessage;
  assert.equal(seen.headers['x-secret'], undefined);
  assert.equal(seen.headers.upgrade, 'websocket');
  assert.match(String(seen.headers.connection), /upgrade/i);
  ws.close();
  await once(ws, 'close');
});

test('jwtAuth and authorization answer the handshake: 401 and 403, nothing reaches the upstream', async () => {
  const seen = up.seen.length;
  const missing = await refusal(wsUrl('/secured'));
  assert.equal(missing.status, 401);
  const bad = await refusal(wsUrl('/secured'), { headers: { authorization: 'Bearer nope' } });
  assert.equal(bad.status, 401);
  assert.equal(up.seen.length, seen);

  const { ws, greeting } = await greeted(wsUrl('/secured'), {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(greeting, 'hello ');
  ws.close();
  await once(ws, 'close');
});

test('a valid token the authorization rule refuses gets 403, no upgrade', async () => {
  const seen = up.seen.length;
  const r = await refusal(wsUrl('/secured'), { headers: { authorization: `Bearer ${userToken}` } });
  assert.equal(r.status, 403);
  assert.equal(up.seen.length, seen);
});

test('an upstream that answers the handshake without 101 is relayed as a normal response', async () => {
  const r = await refusal(wsUrl('/refuse'));
  assert.equal(r.status, 403);
  assert.equal(r.body, 'no ws 4u');
});

test('an upgrade to an ai backend without a realtime route is refused with 400, saying so', async () => {
  const seen = up.seen.length;
  const r = await refusal(wsUrl('/v1/realtime'));
  assert.equal(r.status, 400);
  assert.match(r.body, /is not a realtime route of this ai backend/);
  assert.equal(up.seen.length, seen);
});

test('an upstream closing mid-stream closes the client, and the reverse; no socket is left', async () => {
  const ws = await connectWs(wsUrl('/bye'));
  const [code, reason] = await once(ws, 'close');
  assert.equal(code, 4000);
  assert.equal(String(reason), 'bye');

  // The upstream process dies (TCP reset, no close frame): the client sees the connection end.
  const victim = await connectWs(wsUrl('/echo'));
  await waitFor('the upstream socket', () => up.open.size > 0);
  for (const s of up.open) s.terminate();
  const [abnormal] = await once(victim, 'close');
  assert.equal(abnormal, 1006);

  // The client vanishes without a close frame: the upstream side is closed too.
  const gone = await connectWs(wsUrl('/echo'));
  await waitFor('the upstream socket', () => up.open.size > 0);
  gone.terminate();
  await waitFor('the upstream to see the close', () => up.open.size === 0);
  await waitFor('no request left in flight', () => proxy.plane.inflight === 0);
});

test('a raw non-WebSocket upgrade token is proxied too, bytes both ways with half-close', async () => {
  const raw = net.createServer((s) => {
    let head = '';
    s.on('data', function onHead(c: Buffer) {
      head += c.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      s.off('data', onHead);
      s.write('HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: tcp-echo\r\n\r\n');
      const rest = head.slice(end + 4);
      const chunks: string[] = [rest];
      s.on('data', (d: Buffer) => chunks.push(d.toString('latin1')));
      s.on('end', () => s.end(`got:${chunks.join('')}`));
    });
  });
  raw.listen(0, '127.0.0.1');
  await once(raw, 'listening');
  const rawPort = (raw.address() as AddressInfo).port;
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${rawPort}"}]
`);
  try {
    const c = net.connect(p.port(), '127.0.0.1');
    c.write('GET /t HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: tcp-echo\r\n\r\n');
    let got = '';
    c.setEncoding('latin1');
    c.on('data', (d: string) => {
      got += d;
      if (got.includes('\r\n\r\n') && !c.writableEnded) {
        c.write('one,');
        c.end('two');
      }
    });
    await once(c, 'close');
    assert.match(got, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(got, /\r\nupgrade: tcp-echo\r\n/i);
    assert.ok(got.endsWith('\r\n\r\ngot:one,two'), JSON.stringify(got));
  } finally {
    await p.close();
    raw.close();
  }
});

test('an h2c upgrade request is served as plain HTTP/1.1', async () => {
  const c = net.connect(proxy.port(), '127.0.0.1');
  c.write(
    'GET /echo HTTP/1.1\r\nhost: x\r\nconnection: upgrade, http2-settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n',
  );
  let got = '';
  c.setEncoding('latin1');
  c.on('data', (d: string) => {
    got += d;
    if (got.includes('plain http')) c.end();
  });
  await once(c, 'close');
  assert.match(got, /^HTTP\/1\.1 200 OK/);
  assert.match(got, /plain http/);
});

test('the trace shows the upgraded request with the backend and status 101', async () => {
  const events = proxy.trace();
  const ws = await connectWs(wsUrl('/echo'));
  ws.close();
  await once(ws, 'close');
  const all = await events;
  const call = all.find((e) => e.message.type === 'backendCallResult')?.message as
    | { status?: number }
    | undefined;
  assert.equal(call?.status, 101);
  const types = all.map((e) => e.message.type);
  assert.equal(types.at(-1), 'requestFinished');
});

let pki: TestPki;
test('backendTLS applies to a wss upstream: the CA is trusted, SNI and the name are checked', async () => {
  pki = await makeTestPki(['ws.internal']);
  const server = pki.servers['ws.internal'];
  assert.ok(server);
  const secure = await startWsUpstream({ cert: server.cert, key: server.key });
  const config = (tls: string) => `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: "127.0.0.1:${secure.port}"
        policies: {backendTLS: ${tls}}
`;
  const good = await startProxy(
    config(`{root: {file: ${JSON.stringify(pki.caFile)}}, hostname: ws.internal}`),
  );
  const wrongName = await startProxy(
    config(`{root: {file: ${JSON.stringify(pki.caFile)}}, hostname: other.internal}`),
  );
  // wss on both legs: an HTTPS listener in front of the TLS upstream.
  const front = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: {file: ${JSON.stringify(server.certFile)}}, key: {file: ${JSON.stringify(server.keyFile)}}}
    routes:
    - backends:
      - host: "127.0.0.1:${secure.port}"
        policies: {backendTLS: {root: {file: ${JSON.stringify(pki.caFile)}}, hostname: ws.internal}}
`);
  try {
    const { ws, greeting } = await greeted(`ws://127.0.0.1:${good.port()}/hello`);
    assert.equal(greeting, 'hello ');
    ws.send(Buffer.alloc(100_000, 7));
    assert.equal((await nextMessage(ws)).data.length, 100_000);
    assert.equal(
      (secure.seen.at(-1)?.socket as unknown as { servername?: string } | undefined)?.servername,
      'ws.internal',
    );
    ws.close();
    await once(ws, 'close');
    // SNI picks the listener's certificate, which names ws.internal (ws passes tls options through).
    const tlsOptions = { ca: pki.ca, servername: 'ws.internal' } as WebSocket.ClientOptions;
    const both = new WebSocket(`wss://127.0.0.1:${front.port()}/echo`, tlsOptions);
    await once(both, 'open');
    both.send('over tls twice');
    assert.equal((await nextMessage(both)).data.toString(), 'over tls twice');
    both.close();
    await once(both, 'close');
    const r = await refusal(`ws://127.0.0.1:${wrongName.port()}/hello`);
    assert.equal(r.status, 502);
    assert.match(r.body, /TLS|certificate/i);
  } finally {
    await good.close();
    await front.close();
    await wrongName.close();
    await closeUpstream(secure);
    await pki.cleanup();
  }
});

test('a drain waits for an open WebSocket until the deadline, then closes both sides', async () => {
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`);
  const ws = await connectWs(`ws://127.0.0.1:${p.port()}/echo`);
  await waitFor('the upstream socket', () => up.open.size > 0);
  const t0 = performance.now();
  const drained = p.plane.drain(300);
  // Still usable while the drain waits.
  ws.send('during drain');
  assert.equal((await nextMessage(ws)).data.toString(), 'during drain');
  const { cut } = await drained;
  const took = performance.now() - t0;
  assert.equal(cut, 1);
  assert.ok(took >= 250 && took < 2000, `drain took ${took} ms`);
  const [code] = await once(ws, 'close');
  assert.equal(code, 1006);
  await waitFor('the upstream to see the close', () => up.open.size === 0);

  // A WebSocket the client closes during the drain ends it early.
  const q = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`);
  const ws2 = await connectWs(`ws://127.0.0.1:${q.port()}/echo`);
  const t1 = performance.now();
  const drained2 = q.plane.drain(5000);
  setTimeout(() => ws2.close(1001), 100);
  assert.equal((await drained2).cut, 0);
  assert.ok(performance.now() - t1 < 2000);
});

/** A masked client text frame (RFC 6455 §5.2), as short as these tests send. */
function clientTextFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ (mask[i % 4] as number)));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

/** The next unmasked server text frame's payload (short frames only). */
async function serverText(stream: ClientHttp2Stream): Promise<string> {
  for (;;) {
    const chunk = stream.read() as Buffer | null;
    if (chunk) {
      assert.equal(chunk[0], 0x81, 'a final text frame');
      const len = (chunk[1] as number) & 0x7f;
      return chunk.subarray(2, 2 + len).toString();
    }
    await once(stream, 'readable');
  }
}

/** An HTTP/2 (h2c) session to gw that has seen gw's SETTINGS. */
async function h2Session(): Promise<ClientHttp2Session> {
  const session = http2.connect(`http://127.0.0.1:${proxy.port()}`);
  await once(session, 'remoteSettings');
  return session;
}

test('WebSocket over HTTP/2 (extended CONNECT): gw advertises it, the handshake goes upstream as an HTTP/1.1 upgrade, frames both ways', async (t) => {
  const session = await h2Session();
  t.after(() => session.close());
  assert.equal(session.remoteSettings.enableConnectProtocol, true);
  const stream = session.request({
    ':method': 'CONNECT',
    ':protocol': 'websocket',
    ':scheme': 'http',
    ':path': '/hello',
    ':authority': 'chat.test',
    'sec-websocket-version': '13',
    'sec-websocket-protocol': 'chat',
    'x-secret': 'dropped',
  });
  const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders];
  assert.equal(headers[':status'], 200);
  assert.equal(headers['sec-websocket-protocol'], 'chat');
  assert.equal(headers['x-resp'], 'gw', 'the response header modifier shapes the answer');
  assert.equal(headers['sec-websocket-accept'], undefined, 'no HTTP/1.1-only header on the h2 answer');
  // The route's request header modifier ran on the handshake: the upstream greets with its value.
  assert.equal(await serverText(stream), 'hello from-gw');
  const seen = up.seen.at(-1);
  assert.equal(seen?.method, 'GET');
  assert.equal(seen?.headers.upgrade, 'websocket');
  assert.equal(seen?.headers['x-secret'], undefined);
  stream.write(clientTextFrame('ping over h2'));
  assert.equal(await serverText(stream), 'ping over h2');
  stream.close();
  await waitFor('the upstream side to close', () => up.open.size === 0);
});

test('extended CONNECT runs the route policies: no token is 401 and nothing reaches the upstream; CONNECT without :protocol (a tunnel, which frontendPolicies.connect would allow) is 405', async (t) => {
  const session = await h2Session();
  t.after(() => session.close());
  const before = up.seen.length;
  const refused = session.request({
    ':method': 'CONNECT',
    ':protocol': 'websocket',
    ':scheme': 'http',
    ':path': '/secured',
    ':authority': 'chat.test',
    'sec-websocket-version': '13',
  });
  const [h401] = (await once(refused, 'response')) as [http2.IncomingHttpHeaders];
  assert.equal(h401[':status'], 401);
  refused.resume();
  assert.equal(up.seen.length, before);
  const plain = session.request({ ':method': 'CONNECT', ':authority': 'example.test:443' });
  const [h405] = (await once(plain, 'response')) as [http2.IncomingHttpHeaders];
  assert.equal(h405[':status'], 405);
  let body = '';
  plain.setEncoding('utf8');
  for await (const c of plain) body += c;
  assert.match(
    body,
    /CONNECT is not allowed here \(frontendPolicies\.connect mode: route or tunnel lets it through\)/,
  );
});
