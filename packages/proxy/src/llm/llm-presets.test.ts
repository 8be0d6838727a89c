// Named providers (agentgateway's presets: groq, openrouter, ollama …): what the loader makes of each
// (a custom provider at the provider's documented address), how baseUrl and hostOverride move one,
// and requests through gw from the official clients to stand-ins that see the preset's paths.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { LLM_PRESETS } from '@gw/api';
import {
  FAKE_REPLY,
  type FakeAnthropic,
  type FakeLlmRequest,
  type FakeOpenAI,
  startFakeAnthropic,
  startFakeOpenAI,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import type { LlmProviderIR } from '../config/ir.ts';
import { issues, llm, providers } from './providers/test-support.ts';

describe('presets as the loader reads them', () => {
  test('each is a custom provider named after it, at its address, with its formats', () => {
    const names = Object.keys(LLM_PRESETS);
    const got = providers(llm(names.map((n) => `  - {name: ${n}-model, provider: ${n}}\n`).join('')));
    assert.equal(got.length, names.length);
    const byName = new Map(got.map((p) => [p.name, p]));
    assert.deepEqual(
      [...byName.values()].map((p) => p.kind),
      names.map(() => 'custom'),
    );
    const groq = byName.get('groq') as LlmProviderIR<'custom'>;
    assert.deepEqual(groq.endpoint, { host: 'api.groq.com', port: 443, tls: true });
    assert.equal(groq.pathPrefix, '/openai/v1');
    assert.deepEqual(groq.settings.formats, [{ format: 'openai-chat' }]);
    const ollama = byName.get('ollama') as LlmProviderIR<'custom'>;
    assert.deepEqual(ollama.endpoint, { host: 'localhost', port: 11434, tls: false });
    assert.deepEqual(
      ollama.settings.formats.map((f) => f.format),
      ['openai-chat', 'openai-embeddings'],
    );
    const deepseek = byName.get('deepseek') as LlmProviderIR<'custom'>;
    assert.equal(deepseek.pathPrefix, '');
    assert.deepEqual(deepseek.settings.formats, [
      { format: 'openai-chat' },
      { format: 'anthropic-messages', path: '/anthropic/v1/messages' },
    ]);
    assert.deepEqual(
      (byName.get('xai') as LlmProviderIR<'custom'>).settings.formats.map((f) => f.format),
      ['openai-chat', 'openai-responses'],
    );
    assert.equal(byName.get('cohere')?.pathPrefix, '/compatibility/v1');
    assert.equal(byName.get('fireworks')?.pathPrefix, '/inference/v1');
  });

  test('baseUrl replaces the address and prefix; hostOverride the address only; a key and a model pass', () => {
    const [a, b, c] = providers(
      llm(`  - {name: a, provider: groq, params: {baseUrl: "http://10.0.0.5:8080/groq", apiKey: gsk-1}}
  - {name: b, provider: openrouter, params: {hostOverride: "127.0.0.1:9000", model: "meta-llama/llama-3.3-70b-instruct"}}
  - {name: c, provider: togetherai, backendTLS: {}, params: {hostOverride: "together.internal"}}
`),
    );
    assert.deepEqual(a?.endpoint, { host: '10.0.0.5', port: 8080, tls: false });
    assert.equal(a?.pathPrefix, '/groq');
    assert.equal(a?.apiKey?.reveal(), 'gsk-1');
    assert.deepEqual(b?.endpoint, { host: '127.0.0.1', port: 9000, tls: false });
    assert.equal(b?.pathPrefix, '/api/v1');
    assert.equal(b?.model, 'meta-llama/llama-3.3-70b-instruct');
    assert.deepEqual(c?.endpoint, { host: 'together.internal', port: 443, tls: true });
  });

  test('a baseUrl without a path moves the address only: the provider keeps its own prefix', () => {
    const [groq, openai] = providers(
      llm(`  - {name: a, provider: groq, params: {baseUrl: "http://10.0.0.6:8080"}}
  - {name: b, provider: openai, params: {baseUrl: "https://llm-proxy.example/"}}
`),
    );
    assert.deepEqual(groq?.endpoint, { host: '10.0.0.6', port: 8080, tls: false });
    assert.equal(groq?.pathPrefix, '/openai/v1');
    assert.deepEqual(openai?.endpoint, { host: 'llm-proxy.example', port: 443, tls: true });
    // OpenAI's own /v1, as agentgateway reads such a URL (it was '', and requests went to /chat/completions)
    assert.equal(openai?.pathPrefix, undefined);
  });

  test('a named provider may be a preset; copilot loads; an unknown name lists the known', () => {
    const [p] = providers(`llm:
  port: 0
  providers:
  - {name: fast, provider: cerebras, params: {apiKey: csk}}
  models:
  - {name: "llama*", provider: {reference: fast}}
`);
    assert.equal(p?.name, 'cerebras');
    assert.deepEqual(p?.endpoint, { host: 'api.cerebras.ai', port: 443, tls: true });
    const got = issues(llm('  - {name: a, provider: copilot}\n  - {name: b, provider: grok}\n'));
    assert.equal(got.length, 1);
    assert.match(
      got[0] ?? '',
      /llm\.models\[1\]\.provider: unknown provider "grok" \(expected one of .*groq/,
    );
  });
});

describe('presets through gw', () => {
  let groq: FakeOpenAI;
  let xai: FakeOpenAI;
  let cohere: FakeOpenAI;
  let deepseek: FakeAnthropic;
  let proxy: TestProxy;
  let client: OpenAI;
  const last = (f: { seen: FakeLlmRequest[] }) => f.seen[f.seen.length - 1] as FakeLlmRequest;

  before(async () => {
    groq = await startFakeOpenAI({ name: 'groq', apiKey: 'gsk-test' });
    xai = await startFakeOpenAI({ name: 'xai', apiKey: 'xai-test' });
    cohere = await startFakeOpenAI({ name: 'cohere', apiKey: 'co-test' });
    deepseek = await startFakeAnthropic({ name: 'deepseek' });
    proxy = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  models:
  - name: llama-3.3-70b-versatile
    provider: groq
    params: {apiKey: gsk-test, hostOverride: "127.0.0.1:${groq.port}"}
  - name: grok-4
    provider: xai
    params: {apiKey: xai-test, hostOverride: "127.0.0.1:${xai.port}"}
  - name: embed-v4.0
    provider: cohere
    params: {apiKey: co-test, hostOverride: "127.0.0.1:${cohere.port}"}
  - name: deepseek-chat
    provider: deepseek
    params: {apiKey: ds-test, hostOverride: "127.0.0.1:${deepseek.port}"}
`);
    client = new OpenAI({ apiKey: 'client', baseURL: proxy.url('/v1'), maxRetries: 0 });
  });

  after(async () => {
    await proxy.close();
    await Promise.all([groq.close(), xai.close(), cohere.close(), deepseek.close()]);
  });

  test('groq: chat completions at /openai/v1 with the gateway’s key, streamed too', async () => {
    const r = await client.chat.completions.create({
      model: 'llama-3.3-70b-versatile',
      messages: [{ role: 'user', content: 'Hello!' }],
    });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(last(groq).url, '/openai/v1/chat/completions');
    assert.equal(last(groq).headers.authorization, 'Bearer gsk-test');
    const stream = await client.chat.completions.create({
      model: 'llama-3.3-70b-versatile',
      messages: [{ role: 'user', content: 'Hello!' }],
      stream: true,
    });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    assert.ok(text.length > 0);
    assert.equal(last(groq).url, '/openai/v1/chat/completions');
    assert.equal(last(groq).json?.stream, true);
  });

  test('groq: an Anthropic client is translated to chat completions', async () => {
    const anthropic = new Anthropic({ apiKey: 'client', baseURL: proxy.url(''), maxRetries: 0 });
    const m = await anthropic.messages.create({
      model: 'llama-3.3-70b-versatile',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello!' }],
    });
    assert.equal(m.type, 'message');
    assert.equal(m.content[0]?.type === 'text' ? m.content[0].text : '', FAKE_REPLY);
    assert.equal(last(groq).url, '/openai/v1/chat/completions');
    assert.equal(last(groq).json?.max_tokens ?? last(groq).json?.max_completion_tokens, 64);
  });

  test('xai speaks responses natively; cohere serves embeddings under /compatibility/v1', async () => {
    const r = await client.responses.create({ model: 'grok-4', input: 'Hello!' });
    assert.equal(r.output_text, FAKE_REPLY);
    assert.equal(last(xai).url, '/v1/responses');
    assert.equal(last(xai).headers.authorization, 'Bearer xai-test');
    const e = await client.embeddings.create({ model: 'embed-v4.0', input: 'Hello!' });
    assert.ok((e.data[0]?.embedding.length ?? 0) > 0);
    assert.equal(last(cohere).url, '/compatibility/v1/embeddings');
  });

  test('deepseek: the Anthropic client reaches its messages API under /anthropic', async () => {
    const anthropic = new Anthropic({ apiKey: 'client', baseURL: proxy.url(''), maxRetries: 0 });
    const m = await anthropic.messages.create({
      model: 'deepseek-chat',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello!' }],
    });
    assert.equal(m.type, 'message');
    assert.equal(last(deepseek).url, '/anthropic/v1/messages');
    assert.equal(last(deepseek).headers.authorization, 'Bearer ds-test');
  });

  test('the model list names them; usage is counted under the preset’s name', async () => {
    const list = await client.models.list();
    assert.deepEqual(list.data.map((m) => m.id).sort(), [
      'deepseek-chat',
      'embed-v4.0',
      'grok-4',
      'llama-3.3-70b-versatile',
    ]);
    const text = await proxy.metrics.registry.metrics();
    assert.match(
      text,
      /^gw_llm_tokens_total\{provider="groq",model="llama-3.3-70b-versatile",kind="input"\} [1-9]/m,
    );
  });
});
