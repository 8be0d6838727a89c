// Guard services on streamed answers as users see them (issue 18): the official `openai` and
// `@anthropic-ai/sdk` clients through the gateway to the fake providers, the guard being
// @gw/guardrail-sdk's own webhook handler. A pass sends the events unchanged and in order, before the
// provider has finished; a reject on a later window ends the stream with an error the SDK raises (and
// aborts the provider's answer); a finding split across two windows is caught; an audit never delays
// the first chunk; a service failing mid-stream fails closed or open; a client going away cancels
// the guard's call and the provider's answer.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { createGuardrailHandler, pass, reject } from '@gw/guardrail-sdk';
import {
  FAKE_ANTHROPIC_STREAM_REPLY,
  FAKE_STREAM_REPLY,
  type FakeAnthropic,
  type FakeLlmRequest,
  type FakeOpenAI,
} from '@gw/testkit';
import type { TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { SERVICE_WINDOW } from './guardrails/stream-windows.ts';
import {
  claudeModel,
  closeServers,
  gptModel,
  lastAccessLog,
  listen,
  readStream as read,
  readClaudeStream,
  startFakeProviders,
  startGuardProxy,
} from './guardrails/test-support.ts';

const FILLER = 'the quick brown fox jumps over the lazy dog; ';
const filler = (n: number) => FILLER.repeat(Math.ceil(n / FILLER.length)).slice(0, n);
/** A text as the provider streams it: ten characters an event. */
const deltas = (text: string) => text.match(/.{1,10}/gs) ?? [];
const W = SERVICE_WINDOW.chars;

/** Answers by the user's message: the text, cut into deltas. */
const ANSWERS: Record<string, string> = {
  long: filler(600),
  // "SECRET-TOKEN" spans the end of the first window (at 256+ characters, an event's end: 260).
  split: `${filler(254)}SECRET-TOKEN${filler(334)}`,
  later: `${filler(400)}FORBIDDEN${filler(200)}`,
  break: `${filler(400)}BREAK${filler(200)}`,
  hang: `${filler(100)}HANG${filler(100)}`,
};

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let proxy: TestProxy;
let gpt: OpenAI;
let claude: Anthropic;
let guard: Server;
/** The texts the webhook was sent, in order. */
const calls: string[] = [];
/** Webhook calls whose connection closed before the verdict was sent. */
let cancelled = 0;
let hung: (() => void)[] = [];
let beforeLast: (() => Promise<void>) | undefined;
/** When (performance.now()) each slow webhook call gave its verdict. */
const slowAnswered: number[] = [];

before(async () => {
  const handler = createGuardrailHandler({
    onResponse: async ({ body }, { headers }) => {
      const text = body.choices.map((c) => c.message.content).join('\n');
      calls.push(text);
      if (headers['x-slow']) {
        await new Promise((r) => setTimeout(r, 300));
        slowAnswered.push(performance.now());
      }
      if (text.includes('HANG')) await new Promise<void>((r) => hung.push(r));
      if (text.includes('BREAK')) throw new Error('boom at /srv/guard.js:1:1');
      if (/SECRET-TOKEN|FORBIDDEN|Hello!/.test(text))
        return reject(422, 'The answer was withheld by the webhook.', 'forbidden');
      return pass();
    },
  });
  guard = createServer((req, res) => {
    res.on('close', () => {
      if (!res.writableFinished) cancelled++;
    });
    void handler(req, res);
  });
  const host = await listen(guard);
  const answer = (r: FakeLlmRequest) => {
    const messages = r.json?.messages as { content: string }[] | undefined;
    const text = ANSWERS[messages?.[messages.length - 1]?.content ?? ''];
    return text === undefined ? undefined : { deltas: deltas(text) };
  };
  ({ openai, anthropic } = await startFakeProviders(
    { chunkDelayMs: 2, answer, beforeLastEvent: () => beforeLast?.() ?? Promise.resolve() },
    { chunkDelayMs: 1 },
  ));
  const wh = (extra = '') => `{webhook: {target: {host: "${host}"}, timeout: 2s${extra}}}`;
  ({ proxy, gpt, claude } = await startGuardProxy(`${gptModel(openai, 'plain')}
${gptModel(openai, 'wh', `{streaming: true, response: [${wh()}]}`)}
${gptModel(openai, 'wh-open', `{streaming: true, response: [${wh(', failureMode: failOpen')}]}`)}
${gptModel(openai, 'wh-audit', `{streaming: true, response: [${wh(`, action: audit, headers: {x-slow: '"yes"'}`)}]}`)}
${gptModel(openai, 'wh-audit-fast', `{streaming: true, response: [${wh(', action: audit')}]}`)}
${claudeModel(anthropic, 'claude', `{streaming: true, response: [${wh()}]}`)}
`));
});

after(async () => {
  for (const r of hung) r();
  await proxy.close();
  await Promise.all([openai.close(), anthropic.close()]);
  await closeServers(guard);
});

const lastLog = () => lastAccessLog(proxy);

const stream = (model: string, content: string, opts?: OpenAI.RequestOptions) =>
  gpt.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content }] }, opts);

/** Holds the provider's last event until released (to show what happened before it was sent). */
function holdLast(): () => void {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  beforeLast = () => gate;
  return () => {
    release();
    beforeLast = undefined;
  };
}

async function until(test: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !test(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(test(), what);
}

describe('webhook response guard on streams', () => {
  test('pass: every event arrives, in order and unchanged, the first before the provider finished', async () => {
    const release = holdLast();
    const first = calls.length;
    try {
      const s = await stream('wh', 'long');
      const pieces: string[] = [];
      for await (const c of s) {
        const t = c.choices[0]?.delta.content;
        if (t) pieces.push(t);
        // The first window passed while the provider still holds its last event.
        if (pieces.join('').length >= W) release();
      }
      assert.deepEqual(pieces, deltas(ANSWERS.long as string));
    } finally {
      release();
    }
    const sent = calls.slice(first);
    assert.ok(sent.length >= 2, `${sent.length} calls`);
    assert.ok((sent[0] as string).length >= W && !(sent[0] as string).includes('\n'));
    assert.equal((await lastLog())['llm.guardrails'], undefined);
  });

  test('reject on a later window: the SDK raises an APIError; the provider’s answer is aborted', async () => {
    const release = holdLast();
    const closed = openai.closedEarly;
    try {
      const { pieces, text, err } = await read(await stream('wh', 'later'));
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.match(err.message, /The answer was withheld by the webhook\./);
      assert.equal((err.error as { code?: string }).code, 'gw_err_llm_guardrail');
      // The first window was sent; nothing of the one holding the word.
      assert.ok(text.length >= W && !text.includes('FORBIDDEN'), text);
      assert.deepEqual(pieces, deltas(ANSWERS.later as string).slice(0, pieces.length));
      await until(() => openai.closedEarly === closed + 1, 'the provider’s answer was cut, not drained');
    } finally {
      release();
    }
    assert.deepEqual((await lastLog())['llm.guardrails'], ['stream:webhook:reject:reject: forbidden']);
  });

  test('a finding split across two windows is caught: the next window is sent with the last one’s end', async () => {
    const release = holdLast();
    const first = calls.length;
    try {
      const { text, err } = await read(await stream('wh', 'split'));
      assert.ok(err instanceof OpenAI.APIError, String(err));
      // The first window passed: its half of the token was sent, the rest never was.
      assert.ok(text.endsWith('SECRET') && !text.includes('-TOKEN'), text);
    } finally {
      release();
    }
    const [one, two] = calls.slice(first) as [string, string];
    assert.ok(one.endsWith('SECRET'), one);
    assert.ok(two.startsWith(one.slice(-SERVICE_WINDOW.overlap)), 'the overlap goes first');
    assert.ok(two.slice(SERVICE_WINDOW.overlap).startsWith('-TOKEN'), two);
  });

  test('an Anthropic stream: the webhook’s reject is an error event @anthropic-ai/sdk raises', async () => {
    const { text, err } = await readClaudeStream(claude, 'claude', 100);
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.match(String(err.message), /withheld by the webhook/);
    // The whole answer is one window (shorter than 256 characters): none of it was sent.
    assert.equal(text, '');
    assert.equal(calls[calls.length - 1], FAKE_ANTHROPIC_STREAM_REPLY);
  });

  test('audit: the first chunk is not delayed (the webhook takes 300 ms)', async () => {
    // told by order, not by time: the first chunk reached the client before the webhook answered
    const answeredBefore = slowAnswered.length;
    const s = await stream('wh-audit', 'hi');
    let firstAt = 0;
    let text = '';
    for await (const c of s) {
      if (firstAt === 0) firstAt = performance.now();
      text += c.choices[0]?.delta.content ?? '';
    }
    assert.equal(text, FAKE_STREAM_REPLY);
    for (let i = 0; i < 250 && slowAnswered.length === answeredBefore; i++) await sleep(20);
    const answeredAt = slowAnswered[answeredBefore];
    assert.ok(answeredAt !== undefined, 'the webhook was called');
    assert.ok(firstAt < answeredAt, `first chunk ${(firstAt - answeredAt).toFixed(0)} ms after the verdict`);
  });

  test('audit: the verdict on a window is recorded, the stream goes on unchanged', async () => {
    const release = holdLast();
    const first = calls.length;
    const logged = proxy.accessLog.length;
    try {
      const s = await stream('wh-audit-fast', 'later');
      const reading = read(s);
      // The window with the word was answered while the provider still holds its last event.
      await until(() => calls.slice(first).some((c) => c.includes('FORBIDDEN')), 'the window was sent');
      await new Promise((r) => setTimeout(r, 50));
      release();
      const { text, err } = await reading;
      assert.equal(err, undefined);
      assert.equal(text, ANSWERS.later);
    } finally {
      release();
    }
    await until(() => proxy.accessLog.length > logged, 'the request was logged');
    // A webhook audit records every verdict, allow included.
    const found = (await lastLog())['llm.guardrails'] as string[];
    assert.ok(found.includes('stream:webhook:audit(not applied):reject: forbidden'), String(found));
    assert.ok(found.includes('stream:webhook:audit(not applied):allow'), String(found));
  });

  test('a webhook failing mid-stream: fail closed ends the stream with a 503 error event', async () => {
    const { text, err } = await read(await stream('wh', 'break'));
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.match(err.message, /guardrail webhook failed \(stream\): answered 500/);
    // The webhook's own body (and its stack) never reaches the client.
    assert.doesNotMatch(err.message, /boom|guard\.js/);
    assert.equal((err.error as { code?: string }).code, 'gw_err_llm_guardrail_unavailable');
    assert.ok(text.length >= W && !text.includes('BREAK'));
    assert.deepEqual((await lastLog())['llm.guardrails'], ['stream:webhook:error:answered 500']);
  });

  test('fail open: the stream goes on to its end, the failure recorded', async () => {
    const { text, err } = await read(await stream('wh-open', 'break'));
    assert.equal(err, undefined);
    assert.equal(text, ANSWERS.break);
    // Each window holding the word failed (the overlap sends it again to the next one).
    const found = (await lastLog())['llm.guardrails'] as string[];
    assert.ok(found.length >= 1);
    for (const f of found) assert.equal(f, 'stream:webhook:error(not applied):answered 500');
  });

  test('a client going away mid-stream cancels the guard’s call and the provider’s answer', async () => {
    const release = holdLast();
    const closed = openai.closedEarly;
    const before = cancelled;
    const first = calls.length;
    try {
      const controller = new AbortController();
      const s = await stream('wh', 'hang', { signal: controller.signal });
      const reading = read(s);
      await until(() => calls.length > first, 'the guard was called');
      controller.abort();
      await reading;
      await until(() => cancelled === before + 1, 'the guard’s call was cancelled');
      await until(() => openai.closedEarly === closed + 1, 'the provider’s answer was cancelled');
    } finally {
      release();
      for (const r of hung) r();
      hung = [];
    }
  });
});
