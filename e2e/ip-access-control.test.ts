// ipAccessControl on the real `bin/gw`: a listener's deny list and client resolution under each
// route's allow list, the client taken from X-Forwarded-For behind one trusted hop, the 403 a refused
// client gets, and what reaches the backend from a client that passes.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { cleanupGw, configBlock, type GwProcess, startGw } from './support/gw-process.ts';

let upstream: TestServer;
let g: GwProcess;
let port: number;

before(async () => {
  upstream = await startUpstream('app');
  g = await startGw({
    yaml: `${configBlock()}binds:
- port: 0
  listeners:
  - policies:
      ipAccessControl:
        deny: ["198.51.100.0/24"]
        xffNumTrustedHops: 1
    routes:
    - name: partners
      matches: [{path: {pathPrefix: /partners}}]
      policies:
        ipAccessControl: {allow: ["203.0.113.0/24", "2001:db8::/32"]}
      backends: [{host: "127.0.0.1:${upstream.port}"}]
    - name: llm-keyed
      matches: [{path: {pathPrefix: /v1}, headers: [{name: x-keyed, value: {exact: "1"}}]}]
      policies:
        apiKey: {keys: [{key: the-key}]}
      backends:
      - ai: {name: p, provider: {openAI: {}}, hostOverride: "127.0.0.1:${upstream.port}"}
    - name: llm
      matches: [{path: {pathPrefix: /v1}}]
      policies:
        ipAccessControl: {allow: ["203.0.113.0/24"]}
      backends:
      - ai: {name: p, provider: {openAI: {}}, hostOverride: "127.0.0.1:${upstream.port}"}
    - name: open
      backends: [{host: "127.0.0.1:${upstream.port}"}]
`,
  });
  port = await g.proxyPort();
});
after(async () => {
  await cleanupGw();
  await upstream.close();
});

/**
 * A chat completion whose headers (`extra` lines among them) promise a megabyte of body, of which only
 * the start is sent: what the gateway answered within 5 s (it must not wait for the rest).
 */
async function partialPost(extra: string): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  socket.setEncoding('utf8');
  let answer = '';
  socket.on('data', (d: string) => {
    answer += d;
  });
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\n${extra}content-type: application/json\r\ncontent-length: 1048576\r\n\r\n{"model": "gpt-4o-mini", "messages": [`,
  );
  const deadline = Date.now() + 5_000;
  // the status line and the error body (its message names the reason)
  while (!/\r\n\r\n[\s\S]*message/.test(answer) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 20));
  socket.destroy();
  return answer;
}

/** Status and body of a GET of `path` from a client that says it is `xff` (or says nothing). */
async function from(xff: string | undefined, path: string): Promise<[number, string]> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
  });
  return [res.status, await res.text()];
}

describe('ipAccessControl', () => {
  test("a route's allow list, under its listener's deny list, for the client the trusted hop names", async () => {
    const before = upstream.seen.length;
    assert.equal((await from('203.0.113.5', '/partners/a'))[0], 200);
    assert.equal((await from('192.0.2.1, 2001:db8::7', '/partners/a'))[0], 200, 'IPv6, last entry');
    assert.equal(upstream.seen.length, before + 2, 'allowed requests reach the backend');

    // the hop's entry decides, not the first one the client wrote
    const [status, body] = await from('203.0.113.5, 192.0.2.1', '/partners/a');
    assert.equal(status, 403);
    assert.match(body, /ip address 192\.0\.2\.1 is not allowed/);
    assert.equal((await from('198.51.100.9', '/partners/a'))[0], 403, "the listener's deny list");
    // without the header, the peer (127.0.0.1) is the client, and it is not in the allow list
    assert.equal((await from(undefined, '/partners/a'))[0], 403);
    assert.equal(upstream.seen.length, before + 2, 'refused requests never reach the backend');
  });

  test("a route without a policy of its own has the listener's", async () => {
    assert.equal((await from('192.0.2.1', '/other'))[0], 200);
    assert.equal((await from(undefined, '/other'))[0], 200);
    assert.equal((await from('198.51.100.9', '/other'))[0], 403);
    const long = Array.from({ length: 31 }, (_, i) => `192.0.2.${i + 1}`).join(', ');
    const [status, body] = await from(long, '/other');
    assert.equal(status, 403);
    assert.match(body, /X-Forwarded-For has 31 addresses, more than the 30 allowed/);
  });

  test('on an LLM route a refused client gets its 403 before its body is read', async () => {
    const answer = await partialPost('');
    assert.match(answer, /^HTTP\/1\.1 403 /);
    assert.match(answer, /ip address 127\.0\.0\.1 is not allowed/);
  });

  test('so does a client without its API key: the 401 comes before the body', async () => {
    const answer = await partialPost('x-keyed: 1\r\nx-forwarded-for: 203.0.113.5\r\n');
    assert.match(answer, /^HTTP\/1\.1 401 /);
  });

  test('the backend gets the X-Forwarded-For of an untrusted peer replaced, as without the policy', async () => {
    const [status, body] = await from('203.0.113.5', '/partners/x');
    assert.equal(status, 200);
    const echo = JSON.parse(body) as { headers: Record<string, string> };
    // the peer is no trusted proxy (frontendPolicies.http.trustedProxies): its header is not passed on
    assert.equal(echo.headers['x-forwarded-for'], '127.0.0.1');
  });
});
