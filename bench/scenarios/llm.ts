// Scenario 3: an OpenAI chat completion through gw's LLM layer (the `llm:` block, an `ai` backend):
// a 1 KiB non-streamed request, the answer's usage parsed and counted (metrics, a token rate limit).
// The upstream is nginx answering a fixed chat.completion, so it costs a few µs and never caps a peer.
// Peers: direct, gw llm, gw with scenario 1's plain route to the same upstream (the baseline that
// prices the LLM layer itself) and nginx proxy_pass (no LLM logic: the floor of proxying).
import { agentgatewayConfig } from '../lib/agentgateway.ts';
import { gwConfigWith } from '../lib/gw.ts';
import { runProxyComparison } from '../lib/proxy-comparison.ts';
import { configure as configurePlain, plainHttp } from './plain-http.ts';
import type { ConfigureInput, Mode, Ports, Scenario, ScenarioConfig } from './types.ts';

/** The model clients ask for, and the one gw sends to the provider instead. */
export const MODEL = 'bench-model';
export const PROVIDER_MODEL = 'gpt-4o-mini';
export const INPUT_TOKENS = 231;
const OUTPUT_TOKENS = 9;

/** A chat.completion as OpenAI answers one, usage included; no `'`, `\` or `$` (nginx string). */
const ANSWER = JSON.stringify({
  id: 'chatcmpl-gwbench0000000000000000001',
  object: 'chat.completion',
  created: 1764000000,
  model: `${PROVIDER_MODEL}-2024-07-18`,
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'The gateway is up and counting tokens.', refusal: null },
      logprobs: null,
      finish_reason: 'stop',
    },
  ],
  usage: {
    prompt_tokens: INPUT_TOKENS,
    completion_tokens: OUTPUT_TOKENS,
    total_tokens: INPUT_TOKENS + OUTPUT_TOKENS,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  },
  service_tier: 'default',
  system_fingerprint: 'fp_gwbench',
});

const REQUEST_BYTES = 1024;

/**
 * A chat request of exactly REQUEST_BYTES bytes: a system prompt and a user message, padded, plus
 * `extra` fields (e.g. `stream: true`).
 */
export function chatRequest(extra: Record<string, unknown> = {}): string {
  const build = (pad: string): string =>
    JSON.stringify({
      model: MODEL,
      messages: [
        {
          role: 'system',
          content:
            'You are a concise assistant for an operations team. Answer in plain sentences, cite the ' +
            'configuration field you rely on, and say so when the question cannot be answered from it.',
        },
        {
          role: 'user',
          content:
            'Our gateway fronts several model providers. Given the route below, which provider serves ' +
            `a request for ${MODEL}, and what happens when it answers 429? ${pad}`,
        },
      ],
      temperature: 0.2,
      max_tokens: 256,
      user: 'bench-client',
      ...extra,
    });
  const filler = 'The route lists providers by priority group and retries the next group on failure. ';
  const base = build('').length;
  if (base > REQUEST_BYTES) throw new Error(`llm: request body without padding is ${base} bytes`);
  const body = build(filler.repeat(Math.ceil(REQUEST_BYTES / filler.length)).slice(0, REQUEST_BYTES - base));
  if (Buffer.byteLength(body) !== REQUEST_BYTES) throw new Error('llm: request body is not 1 KiB');
  return body;
}

const BODY = chatRequest();

/**
 * gw serving the LLM API on a loopback gateway (llm.port would listen on every interface), one model
 * at the OpenAI-compatible upstream on ports.upstream. The token limit is never reached (10^10 an hour
 * against a few 10^7 tokens in a full run), but every answer spends it.
 */
export function llmGatewayYaml({ mode, ports }: { mode: Pick<Mode, 'workers'>; ports: Ports }): string {
  return gwConfigWith(
    ports,
    mode.workers,
    `gateways:
  bench: {port: ${ports.gw}, address: 127.0.0.1}
llm:
  gateways: [bench]
  policies:
    localRateLimit: [{tokens: 10000000000, unit: Hours}]
  models:
  - name: ${MODEL}
    provider: openai
    params: {baseUrl: "http://127.0.0.1:${ports.upstream}/v1", apiKey: sk-gw-bench, model: ${PROVIDER_MODEL}}
`,
  );
}

/**
 * agentgateway's llmGatewayYaml: the same gateway and model; its local rate limit is a token bucket
 * (maxTokens refilled per fillInterval) of type tokens, as large as gw's.
 */
export function llmAgentgatewayYaml({ mode, ports }: ConfigureInput): string {
  return agentgatewayConfig(
    ports,
    mode.workers,
    `gateways:
  bench: {port: ${ports.gw}}
llm:
  gateways: [bench]
  policies:
    localRateLimit: [{maxTokens: 10000000000, tokensPerFill: 10000000000, fillInterval: 1h, type: tokens}]
  models:
  - name: ${MODEL}
    provider: openai
    params: {baseUrl: "http://127.0.0.1:${ports.upstream}/v1", apiKey: sk-gw-bench, model: ${PROVIDER_MODEL}}
`,
  );
}

/** Metrics lines that show the LLM layer counted the answers' tokens. */
export const TOKENS_COUNTED: NonNullable<ScenarioConfig['gwMetricsExpect']> = [
  {
    what: 'the LLM layer counted the input tokens of the answers so far',
    pattern: `^gw_llm_tokens_total\\{[^}]*model="${PROVIDER_MODEL}"[^}]*kind="input"[^}]*\\} [1-9]`,
  },
  {
    what: 'the LLM layer counted the output tokens of the answers so far',
    pattern: `^gw_llm_tokens_total\\{[^}]*model="${PROVIDER_MODEL}"[^}]*kind="output"[^}]*\\} [1-9]`,
  },
];

export function configure(input: ConfigureInput): ScenarioConfig {
  const plain = configurePlain(input);
  if (plain.upstream.kind !== 'nginx') throw new Error('llm: expected the nginx upstream of plain-http');
  return {
    // Scenario 1's nginx upstream (keep-alive settings and workers), answering the chat completion.
    upstream: {
      ...plain.upstream,
      http: plain.upstream.http.replace(
        /location \/ \{[^}]*\}/,
        `location / {
      default_type application/json;
      return 200 '${ANSWER}';
    }`,
      ),
    },
    nginxHttp: plain.nginxHttp,
    gwYaml: llmGatewayYaml(input),
    agentgatewayYaml: llmAgentgatewayYaml(input),
    load: {
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
      connections: 64,
      rateRps: 1000,
      latencyConnections: 20,
    },
    gwExpect: [
      {
        what: 'the llm route answers with the token rate limit applied',
        headers: { 'content-type': 'application/json' },
        status: 200,
        responseHeader: 'x-ratelimit-remaining',
      },
    ],
    gwMetricsExpect: TOKENS_COUNTED,
  };
}

export const llm: Scenario = {
  name: 'llm',
  // BENCH_QUICK=1: one round, so that every scenario fits the quick run's 3 minutes.
  quick: { pairs: 1 },
  title: '3. LLM: OpenAI chat completion, non-streamed 1 KiB, token counting and a token rate limit',
  reference:
    'agentgateway v1.6.0 (published, 2 cores): ~142 µs CPU per 1 KiB OpenAI request. Target for gw ' +
    '(issue 11): ≤ 150 µs CPU per llm request. nginx has no LLM logic: "nginx proxy_pass" is the floor of ' +
    'proxying the same bytes; "gw plain route" is gw without the LLM layer, measured in the same rounds.',
  configure,
  gwBaseline: plainHttp,
  peerLabels: { gw: 'gw llm', gwBaseline: 'gw plain route', nginx: 'nginx proxy_pass' },
  run: (ctx) => runProxyComparison(ctx, llm),
};
