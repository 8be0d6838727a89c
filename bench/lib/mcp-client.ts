// The client of the mcp scenario, a program of its own so the harness's /proc sampling never stalls
// its event loop. It speaks MCP streamable HTTP with raw JSON-RPC POSTs over keep-alive node:http
// connections (the same few lines for every peer, so client overhead is equal and small): opens a
// session (initialize, then notifications/initialized, carrying Mcp-Session-Id), then times
// `--sequential` tools/list one at a time, `--sequential` tools/call of `--tool` one at a time, and
// `--requests` tools/call `--concurrency` at a time, each concurrent worker on a session and a
// connection of its own. With `--url2` (direct to both targets) each tools/list goes to both servers
// at once and is done when both have answered: the floor of a federated list on this machine, with
// no gateway in the way. Every answer is checked (the tool count, the echoed text); an answer may be
// JSON or a one-event SSE stream. With `--cpu-pid`, the proxy's CPU time (all its threads, from
// /proc/<pid>/task/*/schedstat, in ns) is read right before and after each timed phase, so session
// set-up is not counted. Writes the summary to `--out` as JSON; every request has a deadline.
//   node bench/lib/mcp-client.ts --url http://127.0.0.1:3000/mcp --tool alpha_echo --tools 6 \
//     --lists 400 --calls 400 --concurrent-calls 2000 --concurrency 8 --out out.json
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
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
  requests: number;
  /** Requests that failed: a non-200 status, a JSON-RPC error, a wrong answer, an error or timeout. */
  failed: number;
  /** The first failures, worded. */
  failures: string[];
  seconds: number;
  /** Answered requests per second over the phase. */
  rps: number;
  /** Request written → whole answer parsed. */
  latency: Distribution;
  /** The proxy's CPU time over the phase, when --cpu-pid was given. */
  cpuNs: number | undefined;
}

export interface ClientSummary {
  /** tools/list, one at a time. */
  list: PhaseSummary;
  /** tools/call, one at a time. */
  call: PhaseSummary;
  /** tools/call, `concurrency` at a time. */
  callConcurrent: PhaseSummary;
}

const PROTOCOL_VERSION = '2025-06-18';
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function post(
  url: URL,
  agent: http.Agent,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(body);
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': payload.length,
        ...headers,
      },
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer after ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(parts).toString('utf8'),
        });
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    req.end(payload);
  });
}

/** The JSON-RPC response with this id, from a JSON body or from the `data:` lines of an SSE body. */
function responseFor(a: Answer, id: number): Record<string, unknown> | undefined {
  const type = String(a.headers['content-type'] ?? '');
  const candidates = type.startsWith('text/event-stream')
    ? a.body
        .split(/\r?\n\r?\n/)
        .map((event) =>
          event
            .split(/\r?\n/)
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n'),
        )
        .filter((d) => d !== '')
    : [a.body];
  for (const c of candidates) {
    try {
      const m = JSON.parse(c) as Record<string, unknown>;
      if (m['id'] === id) return m;
    } catch {
      // Not JSON: another event.
    }
  }
  return undefined;
}

class Session {
  private nextId = 1;
  private sid: string | undefined;
  private readonly agent: http.Agent;
  private readonly url: URL;
  private readonly timeoutMs: number;

  constructor(url: URL, timeoutMs: number) {
    this.url = url;
    this.timeoutMs = timeoutMs;
    // One connection per session, kept for the whole run.
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1, keepAliveMsecs: 60_000 });
  }

  private headers(): Record<string, string> {
    return this.sid === undefined
      ? {}
      : { 'mcp-session-id': this.sid, 'mcp-protocol-version': PROTOCOL_VERSION };
  }

  async open(): Promise<void> {
    const a = await post(
      this.url,
      this.agent,
      {},
      JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 'gw-bench', version: '1.0.0' },
        },
      }),
      this.timeoutMs,
    );
    const r = responseFor(a, 0);
    if (a.status !== 200 || r?.['result'] === undefined)
      throw new Error(`initialize answered ${a.status} ${a.body.slice(0, 200)}`);
    const sid = a.headers['mcp-session-id'];
    if (typeof sid === 'string') this.sid = sid;
    const n = await post(
      this.url,
      this.agent,
      this.headers(),
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      this.timeoutMs,
    );
    if (n.status !== 202 && n.status !== 200)
      throw new Error(`notifications/initialized answered ${n.status} ${n.body.slice(0, 200)}`);
  }

  /** One request; resolves with a failure's words, or undefined when `check` accepts the result. */
  async request(
    method: string,
    params: Record<string, unknown>,
    check: (result: Record<string, unknown>) => string | undefined,
  ): Promise<string | undefined> {
    const id = this.nextId++;
    try {
      const a = await post(
        this.url,
        this.agent,
        this.headers(),
        JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        this.timeoutMs,
      );
      if (a.status !== 200) return `${method}: status ${a.status}`;
      const r = responseFor(a, id);
      if (r === undefined) return `${method}: no response with id ${id}`;
      const err = r['error'] as { message?: string } | undefined;
      if (err !== undefined) return `${method}: error ${err.message ?? JSON.stringify(err)}`;
      return check((r['result'] ?? {}) as Record<string, unknown>);
    } catch (e) {
      return `${method}: ${(e as Error).message}`;
    }
  }

  async close(): Promise<void> {
    if (this.sid !== undefined) {
      await new Promise<void>((resolve) => {
        const req = http.request(this.url, { method: 'DELETE', agent: this.agent, headers: this.headers() });
        req.on('error', () => resolve());
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve());
        });
        req.setTimeout(this.timeoutMs, () => req.destroy());
        req.end();
      });
    }
    this.agent.destroy();
  }
}

/** CPU time in ns of every thread of a process (schedstat's first field: time on a CPU). */
function processCpuNs(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread exited between listing and reading.
    }
  }
  return total;
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

interface Op {
  method: string;
  params: Record<string, unknown>;
  check: (result: Record<string, unknown>) => string | undefined;
}

/**
 * One worker's way of sending a request: to its session, or to all its sessions at once when the
 * client fans out itself (--url2); the first failure, if any.
 */
type Send = (op: Op) => Promise<string | undefined>;

async function phase(
  workers: readonly Send[],
  op: Op,
  requests: number,
  cpuPid: number | undefined,
): Promise<PhaseSummary> {
  const latencies: number[] = [];
  const failures: string[] = [];
  let next = 0;
  const cpu0 = cpuPid === undefined ? 0 : processCpuNs(cpuPid);
  const t0 = performance.now();
  await Promise.all(
    workers.map(async (send) => {
      while (next < requests) {
        next++;
        const start = nowUs();
        const failure = await send(op);
        if (failure === undefined) latencies.push(nowUs() - start);
        else failures.push(failure);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpuNs = cpuPid === undefined ? undefined : processCpuNs(cpuPid) - cpu0;
  return {
    requests,
    failed: failures.length,
    failures: [...new Set(failures)].slice(0, 5),
    seconds,
    rps: latencies.length / seconds,
    latency: distribution(latencies),
    cpuNs,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      tool: { type: 'string', default: 'echo' },
      tools: { type: 'string' },
      url2: { type: 'string' },
      lists: { type: 'string', default: '0' },
      calls: { type: 'string', default: '0' },
      'concurrent-calls': { type: 'string', default: '0' },
      concurrency: { type: 'string', default: '8' },
      'cpu-pid': { type: 'string' },
      'timeout-ms': { type: 'string', default: '10000' },
      out: { type: 'string' },
    },
  });
  if (values.url === undefined || values.out === undefined || values.tools === undefined)
    throw new Error('--url, --tools and --out are required');
  const url = new URL(values.url);
  const tools = Number(values.tools);
  const url2 = values.url2 === undefined ? undefined : new URL(values.url2);
  const lists = Number(values.lists);
  const calls = Number(values.calls);
  const concurrentCalls = Number(values['concurrent-calls']);
  const concurrency = Math.max(1, Number(values.concurrency));
  const timeoutMs = Number(values['timeout-ms']);
  const cpuPid = values['cpu-pid'] === undefined ? undefined : Number(values['cpu-pid']);
  const message = 'hello from the gw bench';

  const list: Op = {
    method: 'tools/list',
    params: {},
    // Fanned out by the client, each server lists its share.
    check: (r) => {
      const n = Array.isArray(r['tools']) ? r['tools'].length : -1;
      const want = url2 === undefined ? tools : tools / 2;
      return n === want ? undefined : `tools/list: ${n} tools, expected ${want}`;
    },
  };
  const call: Op = {
    method: 'tools/call',
    params: { name: values.tool, arguments: { message } },
    check: (r) => {
      const content = r['content'] as { text?: unknown }[] | undefined;
      const text = content?.[0]?.text;
      return text === message ? undefined : `tools/call: answered ${JSON.stringify(r).slice(0, 120)}`;
    },
  };

  const sessions = Array.from({ length: concurrency }, () => new Session(url, timeoutMs));
  const fanOut = url2 === undefined ? undefined : new Session(url2, timeoutMs);
  try {
    await Promise.all([...sessions, ...(fanOut === undefined ? [] : [fanOut])].map((s) => s.open()));
    const send =
      (s: Session): Send =>
      (op) =>
        s.request(op.method, op.params, op.check);
    const first = sessions[0];
    if (first === undefined) throw new Error('no session');
    // A federated list done by the client: both servers at once, finished when both have answered.
    const sendList: Send =
      fanOut === undefined
        ? send(first)
        : async (op) => {
            const [a, b] = await Promise.all([send(first)(op), send(fanOut)(op)]);
            return a ?? b;
          };
    const summary: ClientSummary = {
      list: await phase([sendList], list, lists, cpuPid),
      call: await phase([send(first)], call, calls, cpuPid),
      callConcurrent: await phase(sessions.map(send), call, concurrentCalls, cpuPid),
    };
    writeFileSync(values.out, `${JSON.stringify(summary)}\n`);
  } finally {
    await Promise.all([...sessions, ...(fanOut === undefined ? [] : [fanOut])].map((s) => s.close()));
  }
}

// A program: the harness imports this file for its types only (`import type`, erased).
main().catch((err: unknown) => {
  console.error(`mcp-client: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
