// The `realtime` route type (agentgateway's): OpenAI's Realtime API over a WebSocket through a
// route's ai backend. The official `openai` client's OpenAIRealtimeWS (wss, so an HTTPS listener)
// talks to a fake Realtime server speaking its event shapes; the handshake reaches the provider's
// path with the gateway's key in place of the client's and the served model in `?model=`; events
// pass both ways. A WebSocket at a path that is not a realtime route is refused.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { makeTestPki, type TestPki } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import WebSocket, { WebSocketServer } from 'ws';

let pki: TestPki;
let upstream: Server;
let proxy: TestProxy;
const handshakes: IncomingMessage[] = [];

/** A Realtime server: session.created on connect, session.updated for a session.update. */
async function startFakeRealtime(): Promise<Server> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    handshakes.push(req);
    if (req.headers.authorization !== 'Bearer sk-provider') {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const model = new URL(req.url ?? '/', 'http://x').searchParams.get('model');
      const session = { id: 'sess_gw0001', object: 'realtime.session', type: 'realtime', model };
      ws.send(JSON.stringify({ type: 'session.created', event_id: 'event_0001', session }));
      ws.on('message', (data) => {
        const e = JSON.parse(String(data)) as { type: string; session?: Record<string, unknown> };
        if (e.type === 'session.update')
          ws.send(
            JSON.stringify({
              type: 'session.updated',
              event_id: 'event_0002',
              session: { ...session, ...e.session },
            }),
          );
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

before(async () => {
  pki = await makeTestPki(['llm.internal']);
  upstream = await startFakeRealtime();
  const cert = pki.servers['llm.internal'];
  assert.ok(cert);
  proxy = await startProxy(`config:
  adminAddr: "off"
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: {file: ${JSON.stringify(cert.certFile)}}, key: {file: ${JSON.stringify(cert.keyFile)}}}
    routes:
    - backends:
      - ai:
          name: openai
          provider: {openAI: {model: gpt-realtime}}
          hostOverride: "127.0.0.1:${(upstream.address() as AddressInfo).port}"
          policies:
            backendAuth: {key: sk-provider}
            ai:
              routes:
                /v1/realtime: realtime
                /v1/chat/completions: completions
`);
});

after(async () => {
  await proxy?.close();
  upstream?.closeAllConnections();
  upstream?.close();
  await pki?.cleanup();
});

test('OpenAIRealtimeWS through the gateway: the provider’s key and model, events both ways', async () => {
  const client = new OpenAI({ apiKey: 'sk-client', baseURL: `https://127.0.0.1:${proxy.port()}/v1` });
  const rt = new OpenAIRealtimeWS(
    { model: 'any-model', options: { ca: pki.ca, servername: 'llm.internal' } as never },
    client,
  );
  const created = await new Promise<{ session: { model: string } }>((resolve, reject) => {
    rt.on('session.created', (e) => resolve(e as never));
    rt.on('error', reject);
  });
  // the model entry's model, not the client's
  assert.equal(created.session.model, 'gpt-realtime');
  const seen = handshakes.at(-1);
  assert.equal(seen?.url, '/v1/realtime?model=gpt-realtime');
  assert.equal(seen?.headers.authorization, 'Bearer sk-provider');
  const updated = new Promise<{ session: { instructions?: string } }>((resolve) =>
    rt.on('session.updated', (e) => resolve(e as never)),
  );
  rt.send({ type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.' } as never });
  assert.equal((await updated).session.instructions, 'Be brief.');
  rt.close();
});

test('a WebSocket at a path that is not a realtime route is refused, with the reason', async () => {
  const ws = new WebSocket(`wss://127.0.0.1:${proxy.port()}/v1/chat/completions`, {
    ca: pki.ca,
    servername: 'llm.internal',
  } as WebSocket.ClientOptions);
  ws.on('error', () => {});
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    ws.on('unexpected-response', (_req, r) => resolve(r));
    ws.on('open', () => reject(new Error('the WebSocket opened')));
  });
  let body = '';
  for await (const c of res) body += String(c);
  assert.ok((res.statusCode ?? 0) >= 400, String(res.statusCode));
  assert.match(body, /not a realtime route/);
  ws.terminate();
});
