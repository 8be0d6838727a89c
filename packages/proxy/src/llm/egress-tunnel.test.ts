// gw as an agent's egress proxy for its LLM calls: the official openai client, unchanged but for its
// proxy (HTTPS_PROXY as undici's ProxyAgent) and a CA that trusts gw, calls https://api.openai.com.
// Its CONNECT lands on an internal bind for port 443 (server/connect-tunnel.ts) whose listener holds a
// certificate for api.openai.com and whose route is an `ai` backend: gw terminates the TLS, swaps the
// agent's placeholder key for the real one, counts the tokens, and calls the provider (a fake that
// speaks OpenAI's wire format) itself. Nothing here reaches the internet.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  FAKE_REPLY,
  FAKE_STREAM_REPLY,
  type FakeOpenAI,
  makeTestPki,
  startFakeOpenAI,
  type TestPki,
} from '@gw/testkit';
import { eventuallyFound } from '@gw/testkit/eventually';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { fetch, ProxyAgent } from 'undici';

let fake: FakeOpenAI;
let pki: TestPki;
let proxy: TestProxy;
let dispatcher: ProxyAgent;
before(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-real-key' });
  pki = await makeTestPki(['api.openai.com']);
  const cert = pki.servers['api.openai.com'] as { certFile: string; keyFile: string };
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  tunnelProtocol: connect
  listeners: [{}]
- port: 443
  mode: internal
  listeners:
  - protocol: HTTPS
    hostname: api.openai.com
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    routes:
    - name: openai
      backends:
      - ai:
          name: openai
          provider: {openAI: {}}
          hostOverride: "127.0.0.1:${fake.port}"
          policies:
            backendAuth: {key: sk-real-key}
`);
  dispatcher = new ProxyAgent({ uri: `http://127.0.0.1:${proxy.port()}`, requestTls: { ca: pki.ca } });
});
after(async () => {
  await dispatcher.close();
  await proxy.close();
  await fake.close();
  await pki.cleanup();
});

/** The agent's client: OpenAI's default base URL, a key gw replaces, its calls through the proxy. */
const agent = () =>
  new OpenAI({
    apiKey: 'sk-agent-placeholder',
    maxRetries: 0,
    fetch: fetch as unknown as typeof globalThis.fetch,
    fetchOptions: { dispatcher } as Record<string, unknown>,
  });

test('a chat completion to api.openai.com is served by gw through the tunnel, with the real key and counted tokens', async () => {
  const r = await agent().chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Hello!' }],
  });
  assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
  const seen = fake.seen[fake.seen.length - 1];
  assert.equal(seen?.headers.authorization, 'Bearer sk-real-key', 'the provider got the real key');
  const line = await eventuallyFound('the completion logged', () =>
    proxy.accessLog.find(
      (l) => l['http.path'] === '/v1/chat/completions' && l['llm.outputTokens'] !== undefined,
    ),
  );
  assert.equal(line.gateway, 'bind/443');
  assert.equal(line['llm.provider'], 'openai');
  assert.ok((line['llm.inputTokens'] as number) > 0);
});

test('a streamed completion arrives chunk by chunk through the tunnel', async () => {
  const stream = await agent().chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Hello!' }],
    stream: true,
  });
  let text = '';
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(text, FAKE_STREAM_REPLY);
  assert.ok(chunks > 1, `${chunks} chunks`);
});
