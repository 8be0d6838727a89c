// config.session.key with `bin/gw`: two gateways given the same key serve each other's MCP sessions
// (replicas behind a load balancer), one with another key answers 404 for them, the file's key wins
// over SESSION_KEY in the environment, and a reload that changes the key is warned about (it applies
// at the next start). The MCP server behind them is a real SDK server over streamable HTTP.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type HttpPeer, startHttpPeer } from '@gw/proxy/mcp/test-support';
import { cleanupGw, configBlock, type GwProcess, startGw } from './support/gw-process.ts';

let web: HttpPeer;
before(async () => {
  web = await startHttpPeer('web');
});
after(async () => {
  await cleanupGw();
  await web?.close();
});

const config = (key: string) => `${configBlock(`session: {key: "${key}"}`)}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - mcp:
          targets:
          - name: web
            mcp: {host: ${JSON.stringify(web.url)}}
`;

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** The JSON-RPC answer to `body` (SSE or JSON), with the status and session id of the response. */
async function post(
  port: number,
  body: unknown,
  session?: string,
): Promise<{ status: number; session: string | null; text: string }> {
  const r = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { ...HEADERS, ...(session ? { 'mcp-session-id': session } : {}) },
    body: JSON.stringify(body),
  });
  return { status: r.status, session: r.headers.get('mcp-session-id'), text: await r.text() };
}

async function initialize(port: number): Promise<string> {
  const r = await post(port, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } },
  });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.session, 'a session id');
  const done = await post(port, { jsonrpc: '2.0', method: 'notifications/initialized' }, r.session);
  assert.equal(done.status, 202);
  return r.session;
}

const listTools = (port: number, session: string) =>
  post(port, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, session);

test('gateways that share config.session.key serve each other’s MCP sessions; another key does not', async () => {
  const key = 'e2e-shared-session-key-0123456789';
  // SESSION_KEY in the environment differs: the file's key wins
  const env = { SESSION_KEY: 'environment-key-that-loses' };
  const [a, b, other] = await Promise.all([
    startGw({ yaml: config(key), env }),
    startGw({ yaml: config(key) }),
    startGw({ yaml: config('another-key-entirely-0123456789') }),
  ]);
  const [pa, pb, po] = await Promise.all([a.proxyPort(), b.proxyPort(), other.proxyPort()]);
  const session = await initialize(pa);
  const onB = await listTools(pb, session);
  assert.equal(onB.status, 200, onB.text);
  assert.match(onB.text, /web_weather|"name":"weather"/);
  const onOther = await listTools(po, session);
  assert.equal(onOther.status, 404);
  assert.match(onOther.text, /Session not found/);

  // a changed key is applied at the next start, and said so
  (a as GwProcess).write(config('a-new-key-0123456789abcdef'));
  await a.waitForLine((l) => l.includes('config.session.key changed'), 10_000);
  assert.match(
    a.stdout.join('\n'),
    /config\.session\.key changed: it applies when gw restarts/,
    `stdout:\n${a.stdout.join('\n')}\nstderr:\n${a.stderr.join('\n')}`,
  );
  const still = await listTools(pa, session);
  assert.equal(still.status, 200, 'the running key still opens the session');
});
