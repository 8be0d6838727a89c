// The LLM gateway as a user sees it: the official `openai` client pointed at gw, gw pointed at fake
// OpenAI-compatible providers that speak the real wire format (@gw/testkit, fixtures of the API's own
// shapes). Chat, streams, tools, the model list, errors in OpenAI's shape, Azure's path and key
// header, virtual models, usage in the access log, metrics and a token rate limit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  FAKE_REPLY,
  FAKE_STREAM_REPLY,
  FAKE_USAGE,
  type FakeAnswer,
  type FakeLlmRequest,
  type FakeOpenAI,
  startFakeOpenAI,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { request } from 'undici';

const messages = [{ role: 'user' as const, content: 'Hello!' }];
const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'get_current_weather',
      description: 'Get the current weather in a given location',
      parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
    },
  },
];

let openai: FakeOpenAI;
let azure: FakeOpenAI;
let flaky: FakeOpenAI;
let backup: FakeOpenAI;
let proxy: TestProxy;
let client: OpenAI;
/** Per-test choice of the fake OpenAI's answer. */
let answer: ((r: FakeLlmRequest) => FakeAnswer | undefined) | undefined;
let beforeLast: (() => Promise<void>) | undefined;

before(async () => {
  openai = await startFakeOpenAI({
    name: 'openai',
    apiKey: 'sk-provider',
    answer: (r) => answer?.(r),
    beforeLastEvent: () => beforeLast?.() ?? Promise.resolve(),
  });
  azure = await startFakeOpenAI({ name: 'azure', apiKey: 'azure-key' });
  flaky = await startFakeOpenAI({ name: 'flaky', answer: () => ({ error: 429 }) });
  backup = await startFakeOpenAI({ name: 'backup' });
  proxy = await startProxy(`config:
  adminAddr: "off"
frontendPolicies:
  accessLog:
    add:
      tokens: 'llm.totalTokens'
llm:
  port: 0
  policies:
    cors: {allowOrigins: ['https://app.example.com'], allowMethods: [POST], allowHeaders: [authorization, content-type]}
    authorization:
      rules: ['request.method != "POST" || !has(llmRequest.user) || llmRequest.user != "blocked"']
  providers:
  - name: local-openai
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1"}
  models:
  - name: gpt-4o-mini
    provider: {reference: local-openai}
  - name: "openai/*"
    provider: {reference: local-openai}
    transformation:
      model: 'llmRequest.model.stripPrefix("openai/")'
  - name: hidden
    provider: {reference: local-openai}
    visibility: internal
  - name: azure-gpt
    provider: azure
    params:
      apiKey: azure-key
      model: my-deployment
      azureResourceName: example
      azureApiVersion: "2024-10-21"
      hostOverride: "127.0.0.1:${azure.port}"
  - name: flaky-model
    provider: {custom: {providerOverride: flaky, formats: [{type: completions}]}}
    visibility: internal
    params: {baseUrl: "${flaky.origin}/v1"}
  - name: backup-model
    provider: mistral
    visibility: internal
    params: {baseUrl: "${backup.origin}/v1"}
  virtualModels:
  - name: resilient
    routing:
      failover:
        targets: [{model: flaky-model, priority: 0}, {model: backup-model, priority: 1}]
  - name: split
    routing:
      weighted:
        targets: [{model: hidden, weight: 1}, {model: backup-model, weight: 1}]
  - name: routed
    routing:
      conditional:
        targets:
        - {model: backup-model, when: 'request.headers["x-tier"] == "backup"'}
        - {model: hidden}
`);
  client = new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });
});

after(async () => {
  await proxy.close();
  await Promise.all([openai.close(), azure.close(), flaky.close(), backup.close()]);
});

const lastSeen = (f: FakeOpenAI) => f.seen[f.seen.length - 1] as FakeLlmRequest;

describe('chat completions', () => {
  test('non-streamed: the answer as the provider gave it, the provider key instead of the client’s', async () => {
    const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(r.model, 'gpt-4o-mini');
    assert.deepEqual(
      { prompt: r.usage?.prompt_tokens, completion: r.usage?.completion_tokens },
      { prompt: FAKE_USAGE.chat.prompt_tokens, completion: FAKE_USAGE.chat.completion_tokens },
    );
    const seen = lastSeen(openai);
    assert.equal(seen.url, '/v1/chat/completions');
    assert.equal(seen.headers.authorization, 'Bearer sk-provider');
    assert.equal(seen.headers.host, `127.0.0.1:${openai.port}`);
    // the client's address and scheme are not the provider's business (agentgateway sends neither)
    assert.equal(seen.headers['x-forwarded-for'], undefined);
    assert.equal(seen.headers['x-forwarded-proto'], undefined);
    assert.equal(seen.json?.model, 'gpt-4o-mini');
    assert.deepEqual(seen.json?.messages, messages);
  });

  test('streamed: each chunk reaches the client before the provider has sent the last', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    beforeLast = () => gate;
    try {
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
      let text = '';
      let firstAt: number | undefined;
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      const watchdog = setTimeout(release, 5_000);
      for await (const chunk of stream) {
        if (firstAt === undefined) {
          firstAt = performance.now();
          release();
        }
        chunks.push(chunk);
        text += chunk.choices[0]?.delta.content ?? '';
      }
      clearTimeout(watchdog);
      assert.equal(text, FAKE_STREAM_REPLY);
      assert.ok(firstAt !== undefined && openai.lastEventAt !== undefined);
      assert.ok(
        firstAt < openai.lastEventAt,
        'the first chunk arrived before the provider sent its last event',
      );
      // gw asked for usage to count it, and took that chunk out again: the client did not ask.
      assert.deepEqual(lastSeen(openai).json?.stream_options, { include_usage: true });
      assert.ok(chunks.every((c) => c.choices.length > 0 && !c.usage));
    } finally {
      beforeLast = undefined;
    }
  });

  test('a client that goes away mid-stream cancels the provider’s answer', async () => {
    let release!: () => void;
    beforeLast = () =>
      new Promise<void>((r) => {
        release = r;
      });
    try {
      const before = openai.closedEarly;
      const controller = new AbortController();
      const stream = await client.chat.completions.create(
        { model: 'gpt-4o-mini', messages, stream: true },
        { signal: controller.signal },
      );
      // The SDK ends the iteration quietly on its own abort.
      for await (const _ of stream) controller.abort();
      for (let i = 0; i < 100 && openai.closedEarly === before; i++)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal(
        openai.closedEarly,
        before + 1,
        'the provider’s connection was closed before its last event',
      );
    } finally {
      release?.();
      beforeLast = undefined;
    }
  });

  test('streamed with include_usage: the client gets the usage chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    assert.equal(usage?.prompt_tokens, FAKE_USAGE.stream.prompt_tokens);
    assert.equal(usage?.completion_tokens, FAKE_USAGE.stream.completion_tokens);
  });

  test('tools and tool calls pass through, streamed and not', async () => {
    const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, tools });
    assert.equal(r.choices[0]?.finish_reason, 'tool_calls');
    const call = r.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === 'function');
    assert.equal(call.function.name, 'get_current_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { location: 'Boston, MA' });
    assert.deepEqual(lastSeen(openai).json?.tools, tools);

    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      tools,
      stream: true,
    });
    let args = '';
    let name: string | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta.tool_calls?.[0];
      if (d?.function?.name) name = d.function.name;
      args += d?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(name, 'get_current_weather');
    assert.deepEqual(JSON.parse(args), { location: 'Boston, MA' });
    assert.equal(finish, 'tool_calls');
  });

  test('a prefix* model with a transformation: the model is sent without its prefix', async () => {
    const r = await client.chat.completions.create({ model: 'openai/gpt-4.1', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(lastSeen(openai).json?.model, 'gpt-4.1');
  });
});

test('models.list(): the public models, not internal ones or patterns; virtual models too', async () => {
  const ids: string[] = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['gpt-4o-mini', 'azure-gpt', 'resilient', 'split', 'routed']);
});

describe('errors, in OpenAI’s shape', () => {
  test('an unknown model: 404, openai.NotFoundError with the gateway’s message', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'gpt-nope', messages }), (err) => {
      assert.ok(err instanceof OpenAI.NotFoundError);
      assert.match(err.message, /the model "gpt-nope" does not exist on this gateway/);
      assert.equal((err.error as { type?: string }).type, 'invalid_request_error');
      // OpenAI's own code for it, which clients test for
      assert.equal(err.code, 'model_not_found');
      return true;
    });
  });

  test('an internal model cannot be asked for by name', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'hidden', messages }), OpenAI.NotFoundError);
  });

  test('malformed JSON: 400 with OpenAI’s error object', async () => {
    const r = await request(proxy.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "gpt-4o-mini", "messages": [',
    });
    assert.equal(r.statusCode, 400);
    const body = (await r.body.json()) as { error: { message: string; type: string; code: string } };
    assert.match(body.error.message, /^the request body is not valid JSON/);
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.code, 'gw_err_llm_bad_request');
  });

  test('JSON nested deeper than 128 levels: 400 with the reason, not a 500 from a stack overflow', async () => {
    // 5,000 levels of brackets in 10 KB: JSON.parse reads them, JSON.stringify overflowed the stack
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const r = await request(proxy.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "x": ${deep}}`,
    });
    assert.equal(r.statusCode, 400);
    const body = (await r.body.json()) as { error: { message: string; type: string; code: string } };
    assert.match(body.error.message, /nests objects and arrays more than 128 levels deep/);
    assert.equal(body.error.type, 'invalid_request_error');
    assert.equal(body.error.code, 'gw_err_llm_bad_request');
    // 128 levels in all (the body object is the first) are fine
    const ok = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages,
      metadata: JSON.parse(`${'['.repeat(127)}${']'.repeat(127)}`),
    } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.ok(ok.choices.length > 0);
  });

  test('a body over the buffer limit: 413 naming the limit and the setting', async () => {
    const r = await request(proxy.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'x'.repeat(3 << 20) }],
      }),
    });
    assert.equal(r.statusCode, 413);
    const e = ((await r.body.json()) as { error: { message: string; code: string } }).error;
    assert.match(e.message, /larger than the buffer limit \(\d+ bytes; config\.maxBufferSize\)/);
    assert.equal(e.code, 'gw_err_request_too_large');
  });

  test('a request without a model: 400 BadRequestError', async () => {
    await assert.rejects(
      client.chat.completions.create({
        messages,
      } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming),
      (err) => err instanceof OpenAI.BadRequestError && /must name a model/.test(err.message),
    );
  });

  test('a provider error in JSON passes through with its status', async () => {
    answer = () => ({ error: 401, fixture: 'invalid-api-key' });
    try {
      await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mini', messages }), (err) => {
        assert.ok(err instanceof OpenAI.AuthenticationError);
        assert.match(err.message, /Incorrect API key provided/);
        return true;
      });
    } finally {
      answer = undefined;
    }
  });

  test('a provider answering HTML: 502 in OpenAI’s shape', async () => {
    answer = () => ({ html: 502 });
    try {
      await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mini', messages }), (err) => {
        assert.ok(err instanceof OpenAI.InternalServerError);
        assert.equal(err.status, 502);
        assert.match(err.message, /provider openai answered 502 with text\/html, not JSON/);
        return true;
      });
    } finally {
      answer = undefined;
    }
  });

  test('a stream cut mid-way: the client sees an error, not a hang', async () => {
    answer = (r) => (r.json?.stream ? { cutAfter: 2 } : undefined);
    try {
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
      let n = 0;
      await assert.rejects(async () => {
        for await (const _ of stream) n++;
      });
      assert.equal(n, 2, 'the chunks before the cut arrived');
    } finally {
      answer = undefined;
    }
  });

  test('a CORS preflight is answered by the CORS policy, not read as an LLM call', async () => {
    const r = await request(proxy.url('/v1/chat/completions'), {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    await r.body.dump();
    assert.equal(r.headers['access-control-allow-origin'], 'https://app.example.com');
  });

  test('a GET of the chat path, a PUT of the model list: 405 naming the method, with Allow', async () => {
    const r = await request(proxy.url('/v1/chat/completions'));
    assert.equal(r.statusCode, 405);
    assert.equal(r.headers.allow, 'POST');
    const e = ((await r.body.json()) as { error: { message: string; type: string } }).error;
    assert.match(e.message, /takes POST, not GET/);
    assert.equal(e.type, 'invalid_request_error');
    const m = await request(proxy.url('/v1/models'), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(m.statusCode, 405);
    assert.equal(m.headers.allow, 'GET, HEAD');
    assert.match(
      ((await m.body.json()) as { error: { message: string } }).error.message,
      /takes GET, not PUT/,
    );
  });

  test('a route policy (authorization over llmRequest) answers in OpenAI’s shape too', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-4o-mini', messages, user: 'blocked' }),
      (err) => err instanceof OpenAI.PermissionDeniedError,
    );
  });
});

test('Azure OpenAI: the deployment path with api-version and the api-key header', async () => {
  const r = await client.chat.completions.create({ model: 'azure-gpt', messages });
  assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
  const seen = lastSeen(azure);
  assert.equal(seen.url, '/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21');
  assert.equal(seen.headers['api-key'], 'azure-key');
  assert.equal(seen.headers.authorization, undefined, 'the client’s bearer token is not passed on');
  assert.equal(seen.json?.model, undefined, 'the deployment names the model');
  // hostOverride replaces the resource's host (example.openai.azure.com, see providers.test.ts).
  assert.equal(seen.headers.host, `127.0.0.1:${azure.port}`);
});

describe('virtual models', () => {
  test('failover: the first provider answers 429, the next priority group answers', async () => {
    const before = { flaky: flaky.seen.length, backup: backup.seen.length };
    const r = await client.chat.completions.create({ model: 'resilient', messages });
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(flaky.seen.length, before.flaky + 1);
    assert.equal(backup.seen.length, before.backup + 1);
    assert.equal(lastSeen(backup).json?.model, 'backup-model');
    const log = proxy.accessLog.findLast((l) => l['llm.requestModel'] === 'resilient');
    assert.equal(log?.['llm.provider'], 'mistral');
  });

  test('weighted: requests split between the targets', async () => {
    const before = { openai: openai.seen.length, backup: backup.seen.length };
    for (let i = 0; i < 40; i++) await client.chat.completions.create({ model: 'split', messages });
    const a = openai.seen.length - before.openai;
    const b = backup.seen.length - before.backup;
    assert.equal(a + b, 40);
    assert.ok(a >= 5 && b >= 5, `both targets served (${a}/${b})`);
  });

  test('conditional: the first target whose condition holds, else the last', async () => {
    await client.chat.completions.create({ model: 'routed', messages }, { headers: { 'x-tier': 'backup' } });
    assert.equal(lastSeen(backup).json?.model, 'backup-model');
    const n = openai.seen.length;
    await client.chat.completions.create({ model: 'routed', messages });
    assert.equal(openai.seen.length, n + 1);
    assert.equal(lastSeen(openai).json?.model, 'hidden');
  });
});

describe('token accounting', () => {
  test('the access log and CEL (llm.*) carry the usage, streamed or not', async () => {
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
    const json = proxy.accessLog[proxy.accessLog.length - 1];
    assert.equal(json?.['llm.provider'], 'openai');
    assert.equal(json?.['llm.inputTokens'], FAKE_USAGE.chat.prompt_tokens);
    assert.equal(json?.['llm.outputTokens'], FAKE_USAGE.chat.completion_tokens);
    assert.equal(json?.tokens, FAKE_USAGE.chat.prompt_tokens + FAKE_USAGE.chat.completion_tokens);

    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, stream: true });
    for await (const _ of stream);
    await new Promise((r) => setTimeout(r, 20));
    const streamed = proxy.accessLog[proxy.accessLog.length - 1];
    assert.equal(streamed?.['llm.streaming'], true);
    assert.equal(streamed?.['llm.inputTokens'], FAKE_USAGE.stream.prompt_tokens);
    assert.equal(streamed?.['llm.outputTokens'], FAKE_USAGE.stream.completion_tokens);
    assert.equal(streamed?.['llm.reasoningTokens'], FAKE_USAGE.stream.reasoning_tokens);
    // a stream's time to its first bytes, within the request's own duration
    const ttft = Number.parseFloat(String(streamed?.['llm.timeToFirstToken']));
    assert.ok(ttft > 0 && ttft <= Number.parseFloat(String(streamed?.duration)), JSON.stringify(streamed));
    assert.equal(json?.['llm.timeToFirstToken'], undefined, 'a JSON answer has no first token of its own');
    assert.equal(json?.['llm.reasoningTokens'], undefined, 'none: not written');
  });

  test('Prometheus: gw_llm_tokens_total by provider, model and kind', async () => {
    const text = await proxy.metrics.registry.metrics();
    const value = (kind: string) =>
      Number(
        new RegExp(
          `^gw_llm_tokens_total\\{provider="openai",model="gpt-4o-mini",kind="${kind}"\\} (\\d+)`,
          'm',
        ).exec(text)?.[1] ?? 0,
      );
    assert.ok(value('input') >= FAKE_USAGE.chat.prompt_tokens);
    assert.ok(value('output') >= FAKE_USAGE.chat.completion_tokens);
    assert.ok(value('reasoning') >= FAKE_USAGE.stream.reasoning_tokens, 'the streamed answer reasoned');
    const firstTokens =
      /^gw_llm_time_to_first_token_seconds_count\{provider="openai",model="gpt-4o-mini"\} (\d+)/m.exec(text);
    assert.ok(Number(firstTokens?.[1]) >= 1, 'the stream of the test above');
  });
});

test('a token rate limit is spent by a streamed answer; the next request gets 429 in OpenAI’s shape', async (t) => {
  const p = await startProxy(`config:
  adminAddr: "off"
llm:
  port: 0
  policies:
    localRateLimit: [{tokens: 20, unit: Minutes}]
  models:
  - name: "*"
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1"}
`);
  t.after(() => p.close());
  const c = new OpenAI({ apiKey: 'x', baseURL: p.url('/v1'), maxRetries: 0 });
  // 9 + 12 = 21 tokens against a budget of 20: this one still succeeds, streamed to the end.
  const stream = await c.chat.completions.create({ model: 'any-model', messages, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  assert.equal(text, FAKE_STREAM_REPLY);
  await new Promise((r) => setTimeout(r, 20));
  await assert.rejects(c.chat.completions.create({ model: 'any-model', messages }), (err) => {
    assert.ok(err instanceof OpenAI.RateLimitError);
    assert.equal(err.headers?.get('x-ratelimit-remaining'), '0');
    assert.equal(err.code, 'rate_limit_exceeded');
    // OpenAI's own 429s say which limit: tokens here, not requests
    assert.equal(err.type, 'tokens');
    assert.match(err.message, /token rate limit exceeded/);
    return true;
  });
});
