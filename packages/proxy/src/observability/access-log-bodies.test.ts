// request.body and response.body in access-log fields and span attributes when no policy holds the
// body in memory: the bytes that passed (to the backend, to the client), up to the buffer limit,
// while the bodies themselves stream on whole.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let proxy: TestProxy;
const LIMIT = 256;

before(async () => {
  up = await startUpstream('echo');
  proxy = await startProxy(`frontendPolicies:
  http: {maxBufferSize: ${LIMIT}}
  accessLog:
    add:
      model: 'json(request.body).model'
      sent: 'size(request.body)'
      answered: 'size(response.body)'
      upstream: 'json(response.body).server'
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy?.close();
  await up?.close();
});

const lineFor = async (path: string) => {
  for (let i = 0; i < 50; i++) {
    const line = proxy.accessLog.find((l) => l['http.path'] === path);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`no access-log line for ${path}`);
};

test('a streamed JSON request and its answer are read by the log fields, the bodies untouched', async () => {
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  const r = await fetch(`http://127.0.0.1:${proxy.port()}/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  const answer = await r.text();
  assert.equal(r.status, 200);
  assert.equal(JSON.parse(answer).body, body, 'the backend got the whole body');
  const line = await lineFor('/chat');
  assert.equal(line.model, 'gpt-4o-mini');
  assert.equal(line.sent, body.length);
  // the echo's answer is longer than the limit: the field sees its first LIMIT bytes, the client all
  assert.ok(answer.length > LIMIT, String(answer.length));
  assert.equal(line.answered, LIMIT);
  // a field over a cut JSON body has no value, and is left out
  assert.ok(!('upstream' in line));
});

test('a body over the limit: its first bytes, while the backend gets all of it', async () => {
  const body = 'x'.repeat(LIMIT * 4);
  const r = await fetch(`http://127.0.0.1:${proxy.port()}/big`, { method: 'POST', body });
  await r.text();
  assert.equal(up.seen.at(-1)?.body.length, body.length);
  const line = await lineFor('/big');
  assert.equal(line.sent, LIMIT);
  assert.ok(!('model' in line));
});

test('a request without a body: empty bytes (size 0), not a missing field', async () => {
  const r = await fetch(`http://127.0.0.1:${proxy.port()}/get`);
  await r.text();
  const line = await lineFor('/get');
  assert.equal(line.sent, 0);
  assert.ok(Number(line.answered) > 0);
});
