// The legacy SSE transport's endpoint as agentgateway advertises it: the GET's own path with
// `?sessionId=`, so a route matching exactly `/sse` serves the whole session (the SDK's SSE client
// against gw); the `…/message?sessionId=` gw advertised before still takes messages, and a POST to
// `…/sse` without a sessionId stays a streamable-HTTP request.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import {
  connectClient,
  eventually,
  type HttpPeer,
  openLegacyStream,
  startHttpPeer,
  textOf,
} from './test-support.ts';

let web: HttpPeer;
let proxy: TestProxy;

before(async () => {
  web = await startHttpPeer('web');
  const backend = `
      backends:
      - mcp:
          targets:
          - name: web
            mcp: {host: ${JSON.stringify(web.url)}}`;
  proxy = await startProxy(`
binds:
- port: 0
  listeners:
  - routes:
    - matches: [{path: {exact: /sse}}]${backend}
    - matches: [{path: {pathPrefix: /legacy}}]${backend}
`);
});

after(async () => {
  await proxy?.close();
  await web?.close();
});

async function postTo(path: string, m: unknown): Promise<{ status: number; text: string }> {
  const r = await request(proxy.url(path), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(m),
  });
  return { status: r.statusCode, text: await r.body.text() };
}

const initialize = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

test('the endpoint is the GET’s own path: the SDK’s SSE client works through a route of exactly /sse', async () => {
  // gw advertised /message?sessionId= here, which no route matched: the SDK's POST was a 404
  const { client } = await connectClient(proxy.url('/sse'), 'sse');
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('weather'), names.join(','));
    const r = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    assert.equal(textOf(r), 'web echo: hi');
  } finally {
    await client.close();
  }
  const raw = await openLegacyStream(proxy.url('/sse'));
  raw.close();
  assert.match(raw.endpoint, /^\/sse\?sessionId=[^&]+$/);
});

test('under a prefix, messages are taken at …/sse?sessionId= and at the older …/message?sessionId=', async () => {
  const s = await openLegacyStream(proxy.url('/legacy/sse'));
  try {
    assert.match(s.endpoint, /^\/legacy\/sse\?sessionId=[^&]+$/);
    const old = s.endpoint.replace('/legacy/sse?', '/legacy/message?');
    const sent = [
      await postTo(old, initialize(1)),
      await postTo(s.endpoint, { jsonrpc: '2.0', method: 'notifications/initialized' }),
    ];
    await eventually(() => s.events.some((e) => e.includes('"id":1')), 10000, 'the initialize answer');
    sent.push(
      await postTo(old, {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'weather', arguments: { city: 'Turin' } },
      }),
      await postTo(s.endpoint, {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'again' } },
      }),
    );
    assert.deepEqual(
      sent.map((r) => [r.status, r.text]),
      sent.map(() => [202, 'Accepted']),
    );
    await eventually(
      () =>
        s.events.some((e) => e.includes('sunny in Turin')) && s.events.some((e) => e.includes('echo: again')),
      10000,
      'both answers on the stream',
    );
  } finally {
    s.close();
  }
});

test('a POST to /sse without a sessionId is streamable HTTP; with an unknown one, Session not found', async () => {
  const r = await request(proxy.url('/sse'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(initialize(1)),
  });
  const text = await r.body.text();
  assert.equal(r.statusCode, 200, text);
  assert.ok(r.headers['mcp-session-id'], 'a streamable-HTTP session id');
  assert.match(text, /"protocolVersion"/);
  const unknown = await postTo('/sse?sessionId=nope', initialize(2));
  assert.equal(unknown.status, 404);
  assert.match(unknown.text, /Session not found/);
});
