// The upstream of the llm-stream scenario, a program of its own (nginx cannot pace a response):
// POST …/chat/completions with `stream: true` answers OpenAI's chat.completion.chunk SSE, `--chunks`
// events `--interval-ms` apart on a fixed schedule (role, content deltas, finish), then the usage chunk
// when the request asks for `stream_options.include_usage`, then `data: [DONE]`. Every chunk carries
// `x_gw_bench_sent_us`, the monotonic clock (CLOCK_MONOTONIC, shared by all processes on the machine)
// when it was written, so the client can time each chunk's transit. GET / answers 200 (readiness).
//   node bench/lib/llm-stream-upstream.ts --port 8090 --chunks 64 --interval-ms 2
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    chunks: { type: 'string', default: '64' },
    'interval-ms': { type: 'string', default: '2' },
    'input-tokens': { type: 'string', default: '231' },
  },
});
const port = Number(values.port);
const chunks = Number(values.chunks);
const intervalMs = Number(values['interval-ms']);
const inputTokens = Number(values['input-tokens']);
if (!Number.isInteger(port) || port <= 0) throw new Error('--port is required');
if (!Number.isInteger(chunks) || chunks < 2) throw new Error('--chunks must be an integer ≥ 2');
if (!(intervalMs >= 0)) throw new Error('--interval-ms must be ≥ 0');

const WORDS = [' The', ' gateway', ' forwards', ' each', ' chunk', ' as', ' it', ' arrives', '.'];
const MODEL = 'gpt-4o-mini-2024-07-18';
const ID = 'chatcmpl-gwbench-stream000000000001';

const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

function chunk(delta: Record<string, unknown>, finish: string | null): string {
  return (
    `data: {"id":"${ID}","object":"chat.completion.chunk","created":1764000000,"model":"${MODEL}",` +
    `"system_fingerprint":"fp_gwbench","choices":[{"index":0,"delta":${JSON.stringify(delta)},` +
    `"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}],"usage":null,` +
    `"x_gw_bench_sent_us":${nowUs()}}\n\n`
  );
}

function usageChunk(): string {
  const completion = chunks - 2;
  return (
    `data: {"id":"${ID}","object":"chat.completion.chunk","created":1764000000,"model":"${MODEL}",` +
    `"system_fingerprint":"fp_gwbench","choices":[],"usage":{"prompt_tokens":${inputTokens},` +
    `"completion_tokens":${completion},"total_tokens":${inputTokens + completion},` +
    `"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":` +
    `{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},` +
    `"x_gw_bench_sent_us":${nowUs()}}\n\n`
  );
}

function stream(res: ServerResponse, includeUsage: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const start = performance.now();
  let i = 0;
  const tick = (): void => {
    if (res.destroyed) return;
    if (i === 0) res.write(chunk({ role: 'assistant', content: '', refusal: null }, null));
    else if (i < chunks - 1) res.write(chunk({ content: WORDS[(i - 1) % WORDS.length] }, null));
    else {
      // As OpenAI does: the finish chunk, the usage chunk and [DONE] together.
      res.end(`${chunk({}, 'stop')}${includeUsage ? usageChunk() : ''}data: [DONE]\n\n`);
      return;
    }
    i++;
    // A fixed schedule from the start, so timer lateness does not accumulate over the stream.
    setTimeout(tick, Math.max(0, start + i * intervalMs - performance.now()));
  };
  tick();
}

function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    return;
  }
  if (req.method !== 'POST' || !req.url?.split('?')[0]?.endsWith('/chat/completions')) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('body is not JSON\n');
    return;
  }
  if (json.stream !== true) {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('this upstream only streams\n');
    return;
  }
  const so = json.stream_options as Record<string, unknown> | undefined;
  stream(res, so?.include_usage === true);
}

const server = http.createServer({ keepAliveTimeout: 300_000, noDelay: true }, (req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => answer(req, res, Buffer.concat(parts).toString('utf8')));
});
server.listen(port, '127.0.0.1', () => {
  console.log(`llm-stream upstream on 127.0.0.1:${port}: ${chunks} chunks ${intervalMs} ms apart`);
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
