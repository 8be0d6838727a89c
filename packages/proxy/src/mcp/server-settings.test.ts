// agentgateway's mcp `server` and `sseKeepAlive`: what a federation of several targets tells a client
// at initialize (serverInfo name, version and title; instructions put before the targets' own), read
// with the MCP SDK's client, left alone for a single target; and the keep-alive comments on an idle
// GET stream, at the interval set, or none.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { configIssues } from '../config/test-support.ts';
import { connectClient, type HttpPeer, startHttpPeer } from './test-support.ts';

let a: HttpPeer;
let b: HttpPeer;
let proxy: TestProxy;

const route = (path: string, targets: string, extra: string) => `
    - matches: [{path: {pathPrefix: ${path}}}]
      backends:
      - mcp:
${extra}          targets:
${targets}`;

before(async () => {
  a = await startHttpPeer('a');
  b = await startHttpPeer('b');
  const two = `          - {name: a, mcp: {host: "${a.url}"}}
          - {name: b, mcp: {host: "${b.url}"}}`;
  const one = `          - {name: a, mcp: {host: "${a.url}"}}`;
  const server = `          server: {name: tools-hub, version: 2.1.0, title: Tools Hub, instructions: "Tools of the platform team."}
`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route('/two', two, `${server}          sseKeepAlive: 100ms\n`)}${route('/one', one, `${server}          sseKeepAlive: 0s\n`)}${route('/plain', two, '')}
`);
});

after(async () => {
  await proxy?.close();
  await a?.close();
  await b?.close();
});

test('several targets: serverInfo and the instructions preamble are the configured ones', async () => {
  const { client } = await connectClient(proxy.url('/two/mcp'));
  try {
    assert.deepEqual(client.getServerVersion(), { name: 'tools-hub', version: '2.1.0', title: 'Tools Hub' });
    assert.match(client.getInstructions() ?? '', /^Tools of the platform team\./);
  } finally {
    await client.close();
  }
  const { client: plain } = await connectClient(proxy.url('/plain/mcp'));
  try {
    assert.equal(plain.getServerVersion()?.name, 'gw');
  } finally {
    await plain.close();
  }
});

test('one target: nothing is overridden, and the client sees that server as it names itself (as agentgateway)', async () => {
  const { client } = await connectClient(proxy.url('/one/mcp'));
  try {
    assert.equal(client.getServerVersion()?.name, 'a-server');
    assert.doesNotMatch(client.getInstructions() ?? '', /platform team/);
  } finally {
    await client.close();
  }
});

/** The text an MCP GET stream carries in `ms`, after initializing a session at `path`. */
async function streamFor(path: string, ms: number): Promise<string> {
  const init = await request(proxy.url(path), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  await init.body.dump();
  const session = String(init.headers['mcp-session-id']);
  const ac = new AbortController();
  const stream = await request(proxy.url(path), {
    method: 'GET',
    headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
    signal: ac.signal,
  });
  assert.equal(stream.statusCode, 200);
  let text = '';
  stream.body.setEncoding('utf8');
  stream.body.on('data', (c: string) => {
    text += c;
  });
  stream.body.on('error', () => {});
  await new Promise((r) => setTimeout(r, ms));
  ac.abort();
  return text;
}

test('sseKeepAlive: comments at the interval on an idle GET stream; 0s sends none', async () => {
  const busy = await streamFor('/two/mcp', 450);
  assert.ok((busy.match(/: keep-alive\n\n/g) ?? []).length >= 3, JSON.stringify(busy));
  const quiet = await streamFor('/one/mcp', 300);
  assert.doesNotMatch(quiet, /keep-alive/);
});

test('an sseKeepAlive that would flood is refused; one past what a timer can wait is capped', () => {
  const issues = (v: string) =>
    configIssues(`binds:
- port: 0
  listeners:
  - routes:
    - backends: [{mcp: {sseKeepAlive: ${v}, targets: [{name: a, mcp: {host: "http://127.0.0.1:1/mcp"}}]}}]
`);
  assert.match(issues('10ms'), /mcp\.sseKeepAlive: expected 0s \(none\) or at least 100ms/);
  assert.equal(issues('720h'), '');
});

test('name without version is refused', () => {
  assert.match(
    configIssues(`binds:
- port: 0
  listeners:
  - routes:
    - backends: [{mcp: {server: {name: x}, targets: [{name: a, mcp: {host: "http://127.0.0.1:1/mcp"}}]}}]
`),
    /mcp\.server: name and version go together/,
  );
});
