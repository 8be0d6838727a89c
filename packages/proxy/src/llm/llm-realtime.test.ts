// The `realtime` route type (agentgateway's): OpenAI's Realtime API over a WebSocket through a
// route's ai backend. The official `openai` client's OpenAIRealtimeWS (wss, so an HTTPS listener)
// talks to the testkit's fake Realtime server (its recorded event sequence); the handshake reaches
// the provider's path with the gateway's key in place of the client's and the served model in
// `?model=`; events pass both ways untouched, and each response's usage (`response.done`) is read
// as it passes, compressed or not: the session's sum reaches the access log, the token metrics and
// a token rate limit. A WebSocket at a path that is not a realtime route is refused.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { makeTestPki, type TestPki } from '@gw/testkit';
import {
  FAKE_REALTIME_TEXT,
  FAKE_REALTIME_USAGE,
  type FakeRealtime,
  startFakeRealtime,
} from '@gw/testkit/llm/realtime';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { refusedHandshake } from './realtime-test-support.ts';

let pki: TestPki;
let upstream: FakeRealtime;
let deflating: FakeRealtime;
let proxy: TestProxy;

/** A route (under /<prefix>, or every path) to a realtime provider on `port`. */
const route = (prefix: string, port: number, policies = '') => `    - name: ${prefix || 'all'}${
  prefix ? `\n      matches: [{path: {pathPrefix: /${prefix}}}]` : ''
}${policies}
      backends:
      - ai:
          name: openai
          provider: {openAI: {model: gpt-realtime}}
          hostOverride: "127.0.0.1:${port}"
          policies:
            backendAuth: {key: sk-provider}
            ai:
              routes:
                /v1/realtime: realtime
                /v1/chat/completions: completions`;

/** A Realtime session through the gateway at `/<prefix>/v1`. */
function connect(prefix = '', perMessageDeflate = false, model = 'any-model'): OpenAIRealtimeWS {
  const client = new OpenAI({
    apiKey: 'sk-client',
    baseURL: `https://127.0.0.1:${proxy.port()}${prefix ? `/${prefix}` : ''}/v1`,
  });
  return new OpenAIRealtimeWS(
    { model, options: { ca: pki.ca, servername: 'llm.internal', perMessageDeflate } as never },
    client,
  );
}

/** Asks for one response and waits for its response.done; returns the text the client got. */
async function respond(rt: OpenAIRealtimeWS): Promise<{ text: string; usage: unknown }> {
  let text = '';
  const onDelta = (e: { delta: string }) => {
    text += e.delta;
  };
  rt.on('response.output_text.delta', onDelta);
  const done = new Promise<{ response: { usage?: unknown } }>((resolve, reject) => {
    rt.once('response.done', (e) => resolve(e as never));
    rt.once('error', reject);
  });
  rt.send({ type: 'response.create' });
  const e = await done;
  rt.off('response.output_text.delta', onDelta);
  return { text, usage: e.response.usage };
}

/** Closes the session and waits for the gateway to log its end (the 101 for `model`'s session). */
async function end(rt: OpenAIRealtimeWS, model: string): Promise<Record<string, unknown>> {
  rt.close();
  const find = () =>
    proxy.accessLog.find(
      (e) => e['http.status'] === 101 && String(e['http.path']).endsWith(`?model=${model}`),
    );
  for (let i = 0; i < 300 && !find(); i++) await new Promise((r) => setTimeout(r, 10));
  const log = find();
  assert.ok(log, 'the session was logged');
  return log;
}

before(async () => {
  pki = await makeTestPki(['llm.internal']);
  upstream = await startFakeRealtime({ apiKey: 'sk-provider', audioBytes: 48_000 });
  deflating = await startFakeRealtime({ apiKey: 'sk-provider', deflate: true });
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
${route('deflate', deflating.port)}
${route('limited', upstream.port, '\n      policies: {localRateLimit: [{maxTokens: 200, tokensPerFill: 200, fillInterval: 1h, type: tokens}]}')}
${route('', upstream.port)}
`);
});

after(async () => {
  await proxy?.close();
  await upstream?.close();
  await deflating?.close();
  await pki?.cleanup();
});

test('OpenAIRealtimeWS through the gateway: the provider’s key and model, events both ways', async () => {
  const rt = connect();
  const created = await new Promise<{ session: { model: string } }>((resolve, reject) => {
    rt.on('session.created', (e) => resolve(e as never));
    rt.on('error', reject);
  });
  // the model entry's model, not the client's
  assert.equal(created.session.model, 'gpt-realtime');
  const seen = upstream.handshakes.at(-1);
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
  const r = await refusedHandshake(`wss://127.0.0.1:${proxy.port()}/v1/chat/completions`, pki.ca);
  assert.ok(r.status >= 400, String(r.status));
  assert.match(r.body, /not a realtime route/);
});

const SESSION_USAGE = {
  input: 2 * FAKE_REALTIME_USAGE.input_tokens,
  output: 2 * FAKE_REALTIME_USAGE.output_tokens,
};

test('a session’s usage is the sum of its responses’: access log and token metrics', async () => {
  const tokens = async (kind: string) =>
    Number(
      new RegExp(
        `^gw_llm_tokens_total\\{provider="openai",model="gpt-realtime",kind="${kind}"\\} (\\d+)`,
        'm',
      ).exec(await proxy.metrics.registry.metrics())?.[1] ?? 0,
    );
  const before = { input: await tokens('input'), output: await tokens('output') };
  const rt = connect('', false, 'session-sum');
  await new Promise((resolve) => rt.once('session.created', resolve));
  // each response passes whole: the text, its usage, and the 48 KB audio delta before response.done
  let audio = 0;
  rt.on('response.output_audio.delta', (e) => {
    audio += e.delta.length;
  });
  for (let i = 0; i < 2; i++) {
    const r = await respond(rt);
    assert.equal(r.text, FAKE_REALTIME_TEXT);
    assert.deepEqual(r.usage, FAKE_REALTIME_USAGE);
  }
  assert.equal(audio, 2 * Buffer.alloc(48_000).toString('base64').length);
  const log = await end(rt, 'session-sum');
  assert.equal(log['http.status'], 101);
  assert.equal(log['llm.provider'], 'openai');
  assert.equal(log['llm.requestModel'], 'session-sum');
  assert.equal(log['llm.model'], 'gpt-realtime');
  assert.equal(log['llm.inputTokens'], SESSION_USAGE.input);
  assert.equal(log['llm.outputTokens'], SESSION_USAGE.output);
  assert.equal(log['llm.usageUnread'], undefined);
  assert.equal((await tokens('input')) - before.input, SESSION_USAGE.input);
  assert.equal((await tokens('output')) - before.output, SESSION_USAGE.output);
});

test('compressed frames (permessage-deflate, as the provider agreed) are read too', async () => {
  // the official client leaves compression off unless asked
  const rt = connect('deflate', true, 'deflated');
  await new Promise((resolve) => rt.once('session.created', resolve));
  // the client offered compression, the provider agreed, and the gateway left that between them
  assert.match(rt.socket.extensions, /permessage-deflate/);
  assert.match(
    String(deflating.handshakes.at(-1)?.headers['sec-websocket-extensions']),
    /permessage-deflate/,
  );
  for (let i = 0; i < 2; i++) assert.equal((await respond(rt)).text, FAKE_REALTIME_TEXT);
  const log = await end(rt, 'deflated');
  assert.equal(log['llm.inputTokens'], SESSION_USAGE.input);
  assert.equal(log['llm.outputTokens'], SESSION_USAGE.output);
  assert.equal(log['llm.usageUnread'], undefined);
});

test('a token rate limit is spent by a session’s usage: the next handshake gets 429', async () => {
  const rt = connect('limited', false, 'limited');
  await new Promise((resolve) => rt.once('session.created', resolve));
  await respond(rt);
  await respond(rt);
  await end(rt, 'limited');
  // 2 × 161 tokens against a budget of 200
  const r = await refusedHandshake(`wss://127.0.0.1:${proxy.port()}/limited/v1/realtime?model=x`, pki.ca);
  assert.equal(r.status, 429);
});
