// Scenario 4: a streamed OpenAI chat completion (SSE) through gw's LLM layer: what gw adds to the time
// to first token and to every chunk's way, against the same stream taken directly. The upstream is a
// small Node program pacing 64 chat.completion.chunk events 2 ms apart (nginx cannot pace a response);
// the client times each event on arrival. gw counts the stream's usage chunk (the request asks for
// it, so all peers carry the same bytes). Peers: direct, gw llm, gw with scenario 1's plain route to
// the same upstream (the LLM layer's own cost), nginx proxy_pass with proxy_buffering off, node-floor
// and agentgateway with scenario 3's LLM config.
import {
  runStreamComparison,
  type StreamLoad,
  streamUpstreamArgv,
  WARM_CONCURRENCY,
  warmStreams,
} from '../lib/stream-comparison.ts';
import { chatRequest, llmAgentgatewayYaml, llmGatewayYaml, TOKENS_COUNTED } from './llm.ts';
import { configure as configurePlain, plainHttp } from './plain-http.ts';
import type { ConfigureInput, Scenario, ScenarioConfig, Settings } from './types.ts';

const CHUNKS = 64;
const INTERVAL_MS = 2;
const CONCURRENCY = 8;

/** Per peer and round: 40 + 96 streams of ~0.13 s (about 7 s); quick: 12 + 24 (about 2 s). */
function streamLoad(quick: boolean): StreamLoad {
  return quick
    ? { sequential: 12, requests: 24, concurrency: CONCURRENCY, intervalMs: INTERVAL_MS }
    : { sequential: 40, requests: 96, concurrency: CONCURRENCY, intervalMs: INTERVAL_MS };
}

const BODY = chatRequest({ stream: true, stream_options: { include_usage: true } });

export function configure(input: ConfigureInput): ScenarioConfig {
  const { ports } = input;
  const plain = configurePlain(input);
  return {
    upstream: {
      kind: 'command',
      argv: streamUpstreamArgv({ port: ports.upstream, chunks: CHUNKS, intervalMs: INTERVAL_MS }),
      readyPath: '/',
    },
    // Scenario 1's nginx peer, passing each chunk on as it comes instead of filling a buffer first.
    nginxHttp: plain.nginxHttp.replace(
      'proxy_set_header Connection "";',
      'proxy_set_header Connection "";\n      proxy_buffering off;',
    ),
    gwYaml: llmGatewayYaml(input),
    agentgatewayYaml: llmAgentgatewayYaml(input),
    load: {
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
      connections: CONCURRENCY,
      // No fixed-rate run: the client paces itself (one stream at a time, then CONCURRENCY at once).
      rateRps: 0,
      latencyConnections: CONCURRENCY,
    },
    gwMetricsExpect: TOKENS_COUNTED,
  };
}

function describeLoad(settings: Settings): string {
  const l = streamLoad(settings.quick);
  return (
    `${l.sequential} streams one at a time, then ${l.requests} streams ${l.concurrency} at a time; each ` +
    `stream a 1 KiB request and ${CHUNKS} SSE chunks ${INTERVAL_MS} ms apart (then usage and [DONE]) from ` +
    'a Node upstream, timed per chunk by a Node client (bench/lib/llm-stream-client.ts), after an ' +
    `unrecorded warm-up of ${warmStreams(settings.quick)} streams ${WARM_CONCURRENCY} at a time per peer`
  );
}

export const llmStream: Scenario = {
  name: 'llm-stream',
  // BENCH_QUICK=1: one round, so that every scenario fits the quick run's 3 minutes.
  quick: { pairs: 1 },
  title: '4. LLM streaming: SSE chat completion, time to first token and per-chunk delay added',
  reference:
    'Target for gw (issue 11): ≤ 0.5 ms added to time to first token at p50. "Added" is the peer minus ' +
    'direct in the same round; TTFT is request written → first SSE event; per-chunk delay is each ' +
    "event's arrival minus its send time at the upstream (one monotonic clock); inter-chunk gap is " +
    'between events of one stream at the client. agentgateway v1.6.0 published no streaming figure.',
  configure,
  gwBaseline: plainHttp,
  peerLabels: { gw: 'gw llm', gwBaseline: 'gw plain route', nginx: 'nginx proxy_pass' },
  describeLoad,
  run: (ctx) => runStreamComparison(ctx, { ...llmStream, streamLoad }),
};
