// backendTunnel against a real forward proxy (the npm `proxy` package, as undici's own tests use): a
// plaintext HTTP/1.1 backend is reached by an absolute-form request, a TLS backend by CONNECT with TLS
// inside, mode Connect tunnels plaintext too, and the proxy's credential goes in Proxy-Authorization.
// A proxy given as a Service of `services` is dialled at its workloads in turn.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { makeTestPki, type TestPki } from '@gw/testkit/tls';
import { createProxy, type ProxyServer } from 'proxy';
import WebSocket, { WebSocketServer } from 'ws';

let pki: TestPki;
let plain: http.Server;
let secure: https.Server;
let forward: ProxyServer;
/** A second forward proxy: with the first, the workloads of a Service. */
let forward2: ProxyServer;
let slow: http.Server;
const seen2: string[] = [];
/** What the forward proxy saw: `CONNECT host:port` or `GET http://…`, with the credential sent. */
const seen: { line: string; auth: string | undefined }[] = [];
const proxies: TestProxy[] = [];

const portOf = (s: { address(): AddressInfo | string | null }) => (s.address() as AddressInfo).port;
const listen = (s: http.Server) => new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));

function answer(name: string) {
  return (req: IncomingMessage, res: http.ServerResponse) =>
    res.writeHead(200, { 'x-served-by': name, 'x-path': req.url ?? '' }).end(`hello from ${name}`);
}

before(async () => {
  pki = await makeTestPki(['backend.internal']);
  const cert = pki.servers['backend.internal'];
  assert.ok(cert);
  plain = http.createServer(answer('plain'));
  secure = https.createServer({ cert: cert.cert, key: cert.key }, answer('secure'));
  forward = createProxy(http.createServer());
  const record = (req: IncomingMessage) =>
    seen.push({ line: `${req.method} ${req.url}`, auth: req.headers['proxy-authorization'] });
  forward.prependListener('request', record);
  forward.prependListener('connect', record);
  forward.authenticate = (req) =>
    !req.url?.includes('denied') && req.headers['proxy-authorization'] !== 'Bearer wrong';
  forward2 = createProxy(http.createServer());
  forward2.prependListener('request', (req: IncomingMessage) => seen2.push(`${req.method} ${req.url}`));
  // answers after a while, so that concurrent requests need connections of their own
  slow = http.createServer((req, res) => setTimeout(() => answer('slow')(req, res), 100));
  await Promise.all([listen(plain), listen(secure), listen(forward), listen(forward2), listen(slow)]);
});
after(async () => {
  for (const p of proxies) await p.close();
  for (const s of [plain, secure, forward, forward2, slow]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  await pki.cleanup();
});

async function gw(backend: string, policies: string): Promise<TestProxy> {
  const p = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: "${backend}"
        policies: ${policies}
`);
  proxies.push(p);
  return p;
}

const tunnel = (extra = '') => `backendTunnel: {proxy: {host: "127.0.0.1:${portOf(forward)}"}${extra}}`;

test('a plaintext backend is reached through the proxy by an absolute-form request', async () => {
  seen.length = 0;
  const p = await gw(`127.0.0.1:${portOf(plain)}`, `{${tunnel()}}`);
  const r = await fetch(p.url('/a?b=1'));
  assert.equal(r.status, 200);
  assert.equal(await r.text(), 'hello from plain');
  assert.equal(r.headers.get('x-path'), '/a?b=1');
  assert.deepEqual(
    seen.map((s) => s.line),
    [`GET http://127.0.0.1:${portOf(plain)}/a?b=1`],
  );
});

test('a TLS backend is reached by CONNECT, with TLS to the backend inside the tunnel', async () => {
  seen.length = 0;
  const p = await gw(
    `127.0.0.1:${portOf(secure)}`,
    `{${tunnel()}, backendTLS: {root: {file: ${JSON.stringify(pki.caFile)}}, hostname: backend.internal}}`,
  );
  for (let i = 0; i < 2; i++) {
    const r = await fetch(p.url('/tls'));
    assert.equal(r.status, 200);
    assert.equal(await r.text(), 'hello from secure');
  }
  // One tunnel, kept alive for the second request.
  assert.deepEqual(
    seen.map((s) => s.line),
    [`CONNECT 127.0.0.1:${portOf(secure)}`],
  );
});

test('mode Connect tunnels a plaintext backend too; the key goes to the proxy as Proxy-Authorization', async () => {
  seen.length = 0;
  const p = await gw(
    `127.0.0.1:${portOf(plain)}`,
    `{${tunnel(', mode: Connect, policies: {backendAuth: {key: {value: dXNlcjpwdw==, location: {header: {name: Proxy-Authorization, prefix: "Basic "}}}}}')}}`,
  );
  // The client's own Proxy-Authorization is not passed on to the gateway's proxy.
  const r = await fetch(p.url('/c'), { headers: { 'proxy-authorization': 'Basic client' } });
  assert.equal(r.status, 200);
  assert.equal(await r.text(), 'hello from plain');
  assert.deepEqual(seen, [{ line: `CONNECT 127.0.0.1:${portOf(plain)}`, auth: 'Basic dXNlcjpwdw==' }]);
});

test('a proxy that refuses the credential fails the request with a 5xx, not a crash', async () => {
  for (const mode of ['Auto', 'Connect']) {
    const p = await gw(
      `127.0.0.1:${portOf(plain)}`,
      `{${tunnel(`, mode: ${mode}, policies: {backendAuth: {key: wrong}}`)}}`,
    );
    const r = await fetch(p.url('/'));
    assert.ok(r.status >= 500, `${mode}: ${r.status}`);
    await r.text();
  }
});

test('the trace names the tunnel a backend goes through', async () => {
  const p = await gw(`127.0.0.1:${portOf(plain)}`, `{${tunnel()}}`);
  const events = p.trace();
  assert.equal((await fetch(p.url('/t'))).status, 200);
  const tunnelEvent = (await events).find((e) => e.message.type === 'tunnel');
  assert.ok(tunnelEvent, 'a tunnel event');
  assert.deepEqual(tunnelEvent.message, {
    type: 'tunnel',
    proxy: `127.0.0.1:${portOf(forward)}`,
    mode: 'absolute-form',
    endpoint: `127.0.0.1:${portOf(plain)}`,
  });
});

test("a proxy given as a Service: each connection to it goes to the next of the Service's workloads", async () => {
  seen.length = 0;
  seen2.length = 0;
  const p = await startProxy(`services:
- {name: egress, namespace: infra, hostname: egress.infra, vips: [], ports: {"3128": 0}}
workloads:
- {name: egress-0, namespace: infra, workloadIps: [127.0.0.1], services: {"infra/egress.infra": {"3128": ${portOf(forward)}}}}
- {name: egress-1, namespace: infra, workloadIps: [127.0.0.1], services: {"infra/egress.infra": {"3128": ${portOf(forward2)}}}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: "127.0.0.1:${portOf(slow)}"
        policies: {backendTunnel: {proxy: {service: {name: infra/egress.infra, port: 3128}}}}
`);
  proxies.push(p);
  // four at once: four connections to the proxy, two to each workload
  const answers = await Promise.all(
    [0, 1, 2, 3].map(async (i) => {
      const r = await fetch(p.url(`/s${i}`));
      return `${r.status} ${await r.text()}`;
    }),
  );
  assert.deepEqual(answers, Array(4).fill('200 hello from slow'));
  const first = seen.map((s) => s.line);
  assert.equal(first.length + seen2.length, 4, `${first} | ${seen2}`);
  assert.ok(first.length > 0 && seen2.length > 0, `one proxy got them all: ${first} | ${seen2}`);
  for (const line of [...first, ...seen2])
    assert.match(line, new RegExp(`^GET http://127.0.0.1:${portOf(slow)}/s[0-3]$`));
});

test('config errors name the field', async () => {
  await assert.rejects(
    gw('127.0.0.1:1', '{backendTunnel: {proxy: {backend: nope}}}'),
    /backendTunnel\.proxy\.backend.*no backend named "nope"/s,
  );
  await assert.rejects(
    gw('127.0.0.1:1', '{backendTunnel: {proxy: {host: "127.0.0.1:1"}, policies: {http: {}}}}'),
    /http on a backendTunnel proxy is not supported by this build of gw yet/,
  );
  await assert.rejects(
    gw(
      '127.0.0.1:1',
      '{backendTunnel: {proxy: {host: "127.0.0.1:1"}, policies: {backendAuth: {passthrough: {}}}}}',
    ),
    /backendAuth passthrough on a backendTunnel proxy is not supported/,
  );
  await assert.rejects(
    gw('127.0.0.1:1', '{backendTunnel: {proxy: {service: {name: infra/egress, port: 3128}}}}'),
    /backendTunnel\.proxy\.service\.name: no service "infra\/egress" in services \(there are none\)/,
  );
});

test('a WebSocket upgrade goes through the tunnel (ws and wss); so does a routed CONNECT', async (t) => {
  const cert = pki.servers['backend.internal'];
  assert.ok(cert);
  // a ws echo, and a wss one on TLS with the backend's certificate
  const wsHttp = http.createServer();
  const wssHttps = https.createServer({ cert: cert.cert, key: cert.key });
  for (const server of [wsHttp, wssHttps]) {
    const wss = new WebSocketServer({ server });
    wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo ${String(m)}`)));
  }
  // a line echo for the CONNECT tunnel
  const lines = net.createServer((c) => {
    c.on('data', (d) => c.write(`echo: ${String(d)}`));
    c.on('error', () => c.destroy());
  });
  await Promise.all([
    listen(wsHttp),
    listen(wssHttps as unknown as http.Server),
    listen(lines as unknown as http.Server),
  ]);
  t.after(() => {
    wsHttp.closeAllConnections();
    wsHttp.close();
    wssHttps.closeAllConnections();
    wssHttps.close();
    lines.close();
  });
  const tls = `backendTLS: {root: {file: ${JSON.stringify(pki.caFile)}}, hostname: backend.internal}`;
  const p = await startProxy(`frontendPolicies:
  connect: {mode: route}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - hostnames: [ws.test]
      backends: [{host: "127.0.0.1:${portOf(wsHttp)}", policies: {${tunnel(', mode: Connect')}}}]
    - hostnames: [wss.test]
      backends: [{host: "127.0.0.1:${portOf(wssHttps)}", policies: {${tunnel()}, ${tls}}}]
    - hostnames: [tunnel.test]
      backends: [{host: "127.0.0.1:${portOf(lines)}", policies: {${tunnel(', mode: Connect')}}}]
`);
  proxies.push(p);
  seen.length = 0;
  for (const host of ['ws.test', 'wss.test']) {
    const ws = new WebSocket(`ws://127.0.0.1:${p.port()}/chat`, { headers: { host } });
    await once(ws, 'open');
    ws.send('hi');
    const [reply] = (await once(ws, 'message')) as [Buffer];
    assert.equal(String(reply), 'echo hi', host);
    ws.close();
  }
  assert.deepEqual(
    seen.map((s) => s.line),
    [`CONNECT 127.0.0.1:${portOf(wsHttp)}`, `CONNECT 127.0.0.1:${portOf(wssHttps)}`],
  );
  // HTTP CONNECT routed to a backend behind the proxy
  const s = net.connect(p.port(), '127.0.0.1');
  t.after(() => s.destroy());
  await once(s, 'connect');
  s.write('CONNECT tunnel.test:443 HTTP/1.1\r\nHost: tunnel.test:443\r\n\r\nthrough\n');
  let got = '';
  s.setEncoding('utf8');
  for await (const chunk of s) {
    got += chunk;
    if (/echo: through\n/.test(got)) break;
  }
  assert.match(got, /^HTTP\/1\.1 200 [\s\S]*\r\n\r\necho: through\n$/);
  assert.equal(seen[2]?.line, `CONNECT 127.0.0.1:${portOf(lines)}`);
});
