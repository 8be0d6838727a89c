// The example fastify webhook (examples/fastify-service.ts) over a real socket: what a gateway sees.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildGuardrailService } from '../examples/fastify-service.ts';
import { promptVerdict, responseVerdict } from './contract.ts';

const app = buildGuardrailService({ bannedWords: ['jailbreak', 'launch codes'], bodyLimit: 4096 });
let base: string;

before(async () => {
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});
after(() => app.close());

type Answer = { error: { code: string; message: string } } & Record<string, unknown>;

async function post(path: string, body: unknown, contentType = 'application/json') {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Answer };
}

const prompt = (...contents: string[]) => ({
  body: { messages: contents.map((content, i) => ({ role: i === 0 ? 'system' : 'user', content })) },
});
const answer = (...contents: string[]) => ({
  body: { choices: contents.map((content) => ({ message: { role: 'assistant', content } })) },
});

test('a clean prompt passes', async () => {
  const r = await post('/request', prompt('Be brief.', 'What is 2+2?'));
  assert.equal(r.status, 200);
  assert.deepEqual(promptVerdict(r.json), { ok: true, value: { kind: 'allow', reason: 'nothing to mask' } });
});

test('e-mail addresses and SSNs are masked, every message kept in place', async () => {
  const r = await post('/request', prompt('Be brief.', 'I am jo.doe+x@example.org, SSN 123-45-6789.'));
  const v = promptVerdict(r.json);
  assert.ok(v.ok && v.value.kind === 'modify');
  assert.deepEqual(v.value.body.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'I am <EMAIL_ADDRESS>, SSN <SSN>.' },
  ]);
  const out = responseVerdict((await post('/response', answer('Write to ops@corp.example', 'fine'))).json);
  assert.ok(out.ok && out.value.kind === 'modify');
  assert.deepEqual(
    out.value.body.choices.map((c) => c.message.content),
    ['Write to <EMAIL_ADDRESS>', 'fine'],
  );
});

test('a banned word rejects the request or the answer with 403', async () => {
  const r = promptVerdict((await post('/request', prompt('Be brief.', 'try this JAILBREAK'))).json);
  assert.deepEqual(r, {
    ok: true,
    value: {
      kind: 'reject',
      statusCode: 403,
      body: 'The request was rejected: it mentions a banned word.',
      reason: 'banned word "JAILBREAK"',
    },
  });
  const a = responseVerdict((await post('/response', answer('the launch codes are 0000'))).json);
  assert.ok(a.ok && a.value.kind === 'reject' && a.value.statusCode === 403);
  // Whole words only.
  const word = promptVerdict((await post('/request', prompt('jailbreaking is a word'))).json);
  assert.ok(word.ok && word.value.kind === 'allow');
});

test('malformed input gets 400 with a JSON error', async () => {
  const bad = await post('/request', '{"body": {');
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.code, 'GW_ERR_GUARDRAIL_BAD_JSON');
  const shape = await post('/request', { body: { messages: [{ role: 'user' }] } });
  assert.equal(shape.status, 400);
  assert.equal(shape.json.error.code, 'GW_ERR_GUARDRAIL_INVALID_BODY');
  assert.match(shape.json.error.message, /body\.messages\[0\]\.content/);
  const phase = await post('/response', prompt('hi'));
  assert.equal(phase.status, 400);
  assert.equal((await post('/request', 'x', 'text/plain')).status, 415);
  const big = await post('/request', prompt('x'.repeat(5000)));
  assert.equal(big.status, 413);
  assert.equal(big.json.error.code, 'GW_ERR_GUARDRAIL_BODY_TOO_LARGE');
  const missing = await post('/elsewhere', prompt('hi'));
  assert.equal(missing.status, 404);
});
