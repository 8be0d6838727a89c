import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { maskMessages, pass, reject } from './contract.ts';
import {
  type CallContext,
  createGuardrailHandler,
  type GuardrailCallbacks,
  type HandlerOptions,
} from './handler.ts';

const servers: Server[] = [];

async function serve(callbacks: GuardrailCallbacks, options?: HandlerOptions): Promise<string> {
  const server = createServer(createGuardrailHandler(callbacks, options));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

after(() => {
  for (const s of servers) s.close();
});

type Answer = { error: { code: string; message: string } } & Record<string, unknown>;

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Answer };
}

const PROMPT = { body: { messages: [{ role: 'user', content: 'my ssn is 123-45-6789' }] } };
const CHOICES = { body: { choices: [{ message: { role: 'assistant', content: 'hello' } }] } };

let base: string;
let seen: CallContext | undefined;
before(async () => {
  base = await serve({
    onRequest: (call, ctx) => {
      seen = ctx;
      const text = call.body.messages[0]?.content ?? '';
      if (text.includes('forbidden')) return reject(403, 'no', 'forbidden word');
      if (text.includes('wrong count')) return maskMessages([]);
      if (text.includes('garbage')) return { verdict: 'ok' } as never;
      if (text.includes('throw')) throw new Error('boom');
      if (text.includes('slow')) return new Promise((r) => setTimeout(() => r(pass()), 20));
      return maskMessages(call.body.messages.map((m) => ({ ...m, content: m.content.replace(/\d/g, '#') })));
    },
    onResponse: (call) =>
      call.body.choices.some((c) => c.message.content.includes('leak'))
        ? reject(451, 'withheld')
        : pass('ok'),
  });
});

test('POST /request runs the callback with the parsed body and the call headers', async () => {
  const r = await post(`${base}/request`, PROMPT, { 'x-tenant': 'acme' });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.deepEqual(r.json, {
    action: { body: { messages: [{ role: 'user', content: 'my ssn is ###-##-####' }] } },
  });
  assert.equal(seen?.path, '/request');
  assert.equal(seen?.headers['x-tenant'], 'acme');
});

test('a reject verdict is sent as status_code and body', async () => {
  const r = await post(`${base}/request`, { body: { messages: [{ role: 'user', content: 'forbidden' }] } });
  assert.deepEqual(r.json, { action: { body: 'no', status_code: 403, reason: 'forbidden word' } });
  const slow = await post(`${base}/request`, { body: { messages: [{ role: 'user', content: 'slow' }] } });
  assert.deepEqual(slow.json, { action: {} });
});

test('POST /response runs the response callback', async () => {
  assert.deepEqual((await post(`${base}/response`, CHOICES)).json, { action: { reason: 'ok' } });
  const leak = await post(`${base}/response`, {
    body: { choices: [{ message: { role: 'assistant', content: 'a leak' } }] },
  });
  assert.deepEqual(leak.json, { action: { body: 'withheld', status_code: 451 } });
});

test('malformed input gets 400 with a JSON error', async () => {
  const bad = await post(`${base}/request`, '{"body":');
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.code, 'GW_ERR_GUARDRAIL_BAD_JSON');
  const empty = await post(`${base}/request`, '');
  assert.equal(empty.status, 400);
  const shape = await post(`${base}/request`, { body: { messages: 'hi' } });
  assert.equal(shape.status, 400);
  assert.equal(shape.json.error.code, 'GW_ERR_GUARDRAIL_INVALID_BODY');
  assert.match(shape.json.error.message, /body\.messages/);
  // A response-phase body sent to /request is the wrong phase.
  assert.equal((await post(`${base}/request`, CHOICES)).status, 400);
  const type = await post(`${base}/request`, PROMPT, { 'content-type': 'text/plain' });
  assert.equal(type.status, 415);
  assert.equal(type.json.error.code, 'GW_ERR_GUARDRAIL_CONTENT_TYPE');
});

test('other paths get 404 and other methods 405', async () => {
  const missing = await post(`${base}/other`, PROMPT);
  assert.equal(missing.status, 404);
  assert.equal(missing.json.error.code, 'GW_ERR_GUARDRAIL_NOT_FOUND');
  const get = await fetch(`${base}/request`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  assert.equal(((await get.json()) as Answer).error.code, 'GW_ERR_GUARDRAIL_METHOD');
  // The query string does not change the route.
  assert.equal((await post(`${base}/request?x=1`, PROMPT)).status, 200);
});

test('a bad verdict or a failing callback is a 500 that says so', async () => {
  const count = await post(`${base}/request`, {
    body: { messages: [{ role: 'user', content: 'wrong count' }] },
  });
  assert.equal(count.status, 500);
  assert.equal(count.json.error.code, 'GW_ERR_GUARDRAIL_INVALID_VERDICT');
  assert.match(count.json.error.message, /mask returned 0 messages, the gateway sent 1/);
  const garbage = await post(`${base}/request`, {
    body: { messages: [{ role: 'user', content: 'garbage' }] },
  });
  assert.equal(garbage.status, 500);
  assert.equal(garbage.json.error.code, 'GW_ERR_GUARDRAIL_INVALID_VERDICT');
  const thrown = await post(`${base}/request`, { body: { messages: [{ role: 'user', content: 'throw' }] } });
  assert.equal(thrown.status, 500);
  assert.deepEqual(thrown.json, {
    error: { code: 'GW_ERR_GUARDRAIL_CALLBACK', message: 'guardrail callback failed: boom' },
  });
});

test('bodies over the limit get 413, declared or streamed', async () => {
  const url = await serve({ onRequest: () => pass() }, { maxBodyBytes: 64 });
  const big = { body: { messages: [{ role: 'user', content: 'x'.repeat(100) }] } };
  const r = await post(`${url}/request`, big);
  assert.equal(r.status, 413);
  assert.equal(r.json.error.code, 'GW_ERR_GUARDRAIL_BODY_TOO_LARGE');

  // Chunked, no content-length: the limit applies while reading.
  const status = await new Promise<number>((resolve, reject) => {
    const req = httpRequest(`${url}/request`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.write(JSON.stringify(big).slice(0, 50));
    req.write(JSON.stringify(big).slice(50));
    req.end();
  });
  assert.equal(status, 413);
});

test('a phase without a callback is not served, and paths can be moved', async () => {
  const url = await serve({ onResponse: () => pass() }, { responsePath: '/v3/guardrails/response' });
  assert.equal((await post(`${url}/request`, PROMPT)).status, 404);
  assert.equal((await post(`${url}/response`, CHOICES)).status, 404);
  assert.deepEqual((await post(`${url}/v3/guardrails/response`, CHOICES)).json, { action: {} });
});
