import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  // An LLM-shaped upstream: OpenAI JSON, or Anthropic-style SSE, each with a usage of 110 tokens.
  up = await startUpstream('llm', (req, res) => {
    if ((req.url ?? '').includes('stream')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":20,"cache_read_input_tokens":10,"output_tokens":1}}}\n\n',
      );
      res.write('event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"hi"}}\n\n');
      res.end('event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":80}}\n\n');
      return;
    }
    if ((req.url ?? '').includes('gemini')) {
      // Gemini's generateContent answer: usage in usageMetadata (60 + 50 tokens).
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' }],
          usageMetadata: { promptTokenCount: 60, candidatesTokenCount: 50, totalTokenCount: 110 },
          modelVersion: 'gemini-2.5-flash',
        }),
      );
      return;
    }
    if ((req.url ?? '').includes('tokens')) {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          choices: [],
          usage: { prompt_tokens: 60, completion_tokens: 50, total_tokens: 110 },
        }),
      );
    }
  });
  const route = (name: string, limits: string) => `    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies: {localRateLimit: ${limits}}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
${route('requests', '[{requests: 3, unit: Minutes, burst: 2}]')}
${route('tokens', '[{maxTokens: 100, tokensPerFill: 100, fillInterval: 1s, type: tokens}]')}
${route('stream', '[{maxTokens: 100, tokensPerFill: 100, fillInterval: 60s, type: tokens}]')}
${route('gemini', '[{maxTokens: 100, tokensPerFill: 100, fillInterval: 1h, type: tokens}]')}
${route('both', '[{requests: 100, unit: Minutes}, {tokens: 100, unit: Hours}]')}
${route('per-user', `[{maxTokens: 2, tokensPerFill: 2, fillInterval: 1h, key: 'request.headers["x-user"]'}]`)}
${route('per-user-tokens', `[{maxTokens: 100, tokensPerFill: 100, fillInterval: 1h, type: tokens, key: 'request.headers["x-user"]'}]`)}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function call(path: string, headers: Record<string, string> = {}) {
  const r = await request(proxy.url(path), { headers });
  return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
}

test('requests per unit plus burst; then 429 with a short text, not forwarded; x-ratelimit headers', async () => {
  const seen = () => up.seen.filter((s) => s.url.startsWith('/requests')).length;
  const remaining: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await call('/requests');
    assert.equal(r.status, 200, `request ${i + 1}`);
    assert.equal(r.headers['x-ratelimit-limit'], '5');
    remaining.push(String(r.headers['x-ratelimit-remaining']));
  }
  assert.deepEqual(remaining, ['4', '3', '2', '1', '0']);
  const limited = await call('/requests');
  assert.equal(limited.status, 429);
  assert.equal(limited.text, 'rate limit exceeded\n');
  assert.equal(limited.headers['x-ratelimit-remaining'], '0');
  assert.ok(Number(limited.headers['x-ratelimit-reset']) > 0);
  assert.equal(seen(), 5);
});

test('token budget: the request that crosses the limit succeeds, the next gets 429, the window resets', async (t) => {
  // The bucket refills by Date.now() (0.1 token a millisecond here): a mocked Date holds the time
  // still between the requests, however slow the machine, and then moves it past the window.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const first = await call('/tokens'); // 110 tokens against a budget of 100
  assert.equal(first.status, 200);
  assert.equal((await call('/tokens')).status, 429);
  t.mock.timers.tick(1_200);
  assert.equal((await call('/tokens')).status, 200, 'budget refilled after the window');
});

test('token usage is read from a streamed (SSE) response once it completes, cached tokens included', async () => {
  const r = await call('/stream');
  assert.equal(r.status, 200);
  assert.match(r.text, /message_delta/);
  // spent when the proxy has seen the stream end (a window of a minute: no refill meanwhile)
  let next = await call('/stream');
  for (let i = 0; i < 100 && next.status === 200; i++) {
    await sleep(20);
    next = await call('/stream');
  }
  assert.equal(next.status, 429);
});

test("token usage is read from Gemini's usageMetadata", async () => {
  assert.equal((await call('/gemini')).status, 200);
  assert.equal((await call('/gemini')).status, 429, '110 tokens spent the budget of 100');
});

test('a request limit and a token limit in one block are checked independently', async () => {
  const r = await call('/both/tokens');
  assert.equal(r.status, 200);
  assert.equal(r.headers['x-ratelimit-limit'], '100');
  assert.equal(
    (await call('/both/tokens')).status,
    429,
    'the token budget is spent even though requests remain',
  );
});

test('a key gives each value a bucket of its own; requests without one share a bucket', async () => {
  const as = (user?: string) => call('/per-user', user === undefined ? {} : { 'x-user': user });
  assert.deepEqual(
    [await as('alice'), await as('alice'), await as('alice')].map((r) => r.status),
    [200, 200, 429],
  );
  // bob's bucket is his own, and still full
  const bob = await as('bob');
  assert.equal(bob.status, 200);
  assert.equal(bob.headers['x-ratelimit-remaining'], '1');
  assert.equal((await as('alice')).status, 429);
  // no header: the key fails to evaluate, and those requests share one bucket
  assert.deepEqual(
    [await as(), await as(), await as()].map((r) => r.status),
    [200, 200, 429],
  );
});

test('a token limit with a key debits the usage from the bucket of the request that used it', async () => {
  const as = (user: string) => call('/per-user-tokens/tokens', { 'x-user': user });
  assert.equal((await as('carol')).status, 200); // 110 tokens against 100
  assert.equal((await as('carol')).status, 429);
  assert.equal((await as('dave')).status, 200, "carol's usage is not dave's");
});

test('the key is CEL, checked at load', () => {
  assert.throws(
    () =>
      loadConfigText(
        'gw.yaml',
        `binds:
- port: 0
  listeners:
  - routes:
    - policies:
        localRateLimit: [{maxTokens: 1, tokensPerFill: 1, fillInterval: 1s, key: 'jwt.sub +'}]
      backends: [{host: "127.0.0.1:1"}]
`,
        process.cwd(),
      ),
    /policies\.localRateLimit\[0\]\.key: invalid CEL expression/,
  );
});
