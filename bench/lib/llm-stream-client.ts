// The client of the llm-stream scenario, a program of its own so the harness's /proc sampling never
// stalls its event loop: POSTs a streamed chat request `--sequential` times one at a time, then
// `--requests` times over `--concurrency` keep-alive connections at once, and times every SSE event
// on arrival: time to first token (request written → first event), inter-chunk gap (between events)
// and transit (arrival minus the upstream's `x_gw_bench_sent_us`, both on CLOCK_MONOTONIC). Writes
// a summary of each phase to `--out` as JSON. Every request has a deadline; the run is bounded.
//   node bench/lib/llm-stream-client.ts --url http://127.0.0.1:8090/v1/chat/completions \
//     --body-file body.json --sequential 40 --requests 96 --concurrency 8 --out out.json
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { percentileSorted } from './stats.ts';

export interface Distribution {
  n: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  maxUs: number;
}

export interface PhaseSummary {
  /** Streams started. */
  streams: number;
  /** Streams that failed: a non-200 status, an error or timeout, or no `data: [DONE]`. */
  failed: number;
  /** The first failures, worded. */
  failures: string[];
  /** Fewest and most data events (before [DONE]) in one complete stream. */
  eventsMin: number;
  eventsMax: number;
  seconds: number;
  /** Request written → response headers. */
  ttfb: Distribution;
  /** Request written → first SSE event. */
  ttft: Distribution;
  /** Between consecutive events of a stream, at the client. */
  gap: Distribution;
  /** Each event's arrival minus its upstream send time. */
  transit: Distribution;
}

export interface ClientSummary {
  sequential: PhaseSummary;
  concurrent: PhaseSummary;
}

interface Sample {
  ok: boolean;
  failure: string | undefined;
  events: number;
  ttfbUs: number;
  ttftUs: number;
  gapsUs: number[];
  transitsUs: number[];
}

const SENT = /"x_gw_bench_sent_us":(\d+)/g;
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

function oneStream(url: URL, body: Buffer, agent: http.Agent, timeoutMs: number): Promise<Sample> {
  return new Promise((resolve) => {
    const s: Sample = {
      ok: false,
      failure: undefined,
      events: 0,
      ttfbUs: Number.NaN,
      ttftUs: Number.NaN,
      gapsUs: [],
      transitsUs: [],
    };
    let settled = false;
    const finish = (failure: string | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.ok = failure === undefined;
      s.failure = failure;
      resolve(s);
    };
    let start = 0;
    let lastEvent = Number.NaN;
    let pending = '';
    let done = false;
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        'content-length': body.length,
      },
    });
    const timer = setTimeout(() => {
      req.destroy(new Error(`no end of stream after ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (err) => finish(err.message));
    req.on('response', (res) => {
      s.ttfbUs = nowUs() - start;
      if (res.statusCode !== 200) {
        res.resume();
        res.on('end', () => finish(`status ${res.statusCode}`));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (text: string) => {
        // One arrival time for every event in this read: an event a proxy held back until the next
        // one came is late by that much, which is what the transit and gap figures are for.
        const at = nowUs();
        pending += text;
        let cut = pending.indexOf('\n\n');
        while (cut >= 0) {
          const event = pending.slice(0, cut);
          pending = pending.slice(cut + 2);
          cut = pending.indexOf('\n\n');
          if (event.startsWith('data: [DONE]')) {
            done = true;
            continue;
          }
          if (!event.startsWith('data:')) continue;
          s.events++;
          if (Number.isNaN(s.ttftUs)) s.ttftUs = at - start;
          else s.gapsUs.push(at - lastEvent);
          lastEvent = at;
          SENT.lastIndex = 0;
          const m = SENT.exec(event);
          if (m?.[1] !== undefined) s.transitsUs.push(at - Number(m[1]));
        }
      });
      res.on('end', () => finish(done ? undefined : `stream ended without [DONE] after ${s.events} events`));
      res.on('error', (err) => finish(err.message));
    });
    start = nowUs();
    req.end(body);
  });
}

function distribution(values: number[]): Distribution {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50Us: percentileSorted(sorted, 50),
    p90Us: percentileSorted(sorted, 90),
    p99Us: percentileSorted(sorted, 99),
    maxUs: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

function summarize(samples: readonly Sample[], seconds: number): PhaseSummary {
  const ok = samples.filter((s) => s.ok);
  const failed = samples.filter((s) => !s.ok);
  return {
    streams: samples.length,
    failed: failed.length,
    failures: [...new Set(failed.map((s) => s.failure ?? 'unknown'))].slice(0, 5),
    eventsMin: ok.length === 0 ? 0 : Math.min(...ok.map((s) => s.events)),
    eventsMax: ok.length === 0 ? 0 : Math.max(...ok.map((s) => s.events)),
    seconds,
    ttfb: distribution(ok.map((s) => s.ttfbUs)),
    ttft: distribution(ok.map((s) => s.ttftUs)),
    gap: distribution(ok.flatMap((s) => s.gapsUs)),
    transit: distribution(ok.flatMap((s) => s.transitsUs)),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      'body-file': { type: 'string' },
      sequential: { type: 'string', default: '0' },
      requests: { type: 'string', default: '0' },
      concurrency: { type: 'string', default: '8' },
      // Concurrent streams start this far apart, so their chunks do not all fall due at once.
      'stagger-us': { type: 'string', default: '0' },
      'timeout-ms': { type: 'string', default: '10000' },
      out: { type: 'string' },
    },
  });
  if (values.url === undefined || values['body-file'] === undefined || values.out === undefined)
    throw new Error('--url, --body-file and --out are required');
  const url = new URL(values.url);
  const body = readFileSync(values['body-file']);
  const sequential = Number(values.sequential);
  const requests = Number(values.requests);
  const concurrency = Math.max(1, Number(values.concurrency));
  const staggerMs = Number(values['stagger-us']) / 1000;
  const timeoutMs = Number(values['timeout-ms']);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, keepAliveMsecs: 60_000 });

  let t = performance.now();
  const seq: Sample[] = [];
  for (let i = 0; i < sequential; i++) seq.push(await oneStream(url, body, agent, timeoutMs));
  const seqSeconds = (performance.now() - t) / 1000;

  t = performance.now();
  const conc: Sample[] = [];
  let next = 0;
  const worker = async (k: number): Promise<void> => {
    await sleep(k * staggerMs);
    while (next < requests) {
      next++;
      conc.push(await oneStream(url, body, agent, timeoutMs));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, (_, k) => worker(k)));
  const concSeconds = (performance.now() - t) / 1000;
  agent.destroy();

  const summary: ClientSummary = {
    sequential: summarize(seq, seqSeconds),
    concurrent: summarize(conc, concSeconds),
  };
  writeFileSync(values.out, `${JSON.stringify(summary)}\n`);
}

// A program: the harness imports this file for its types only (`import type`, erased).
main().catch((err: unknown) => {
  console.error(`llm-stream-client: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
