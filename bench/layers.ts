// What each layer of a Node proxy costs (issues 11 and 17): the same traffic through proxies that do
// less and less, each pinned to core 0 with one thread, upstream and load on core 1, in interleaved
// rounds. Two measurements:
//   ttft   one streamed chat completion at a time (8 SSE chunks 2 ms apart, from the Node upstream
//          of make bench's llm-stream): the time to first token each proxy adds over direct, and
//          the CPU it spends and the wake-ups it takes per stream;
//   plain  wrk at 64 connections against an nginx upstream answering 200 (make bench's plain-http):
//          CPU per request and throughput.
// CPU time is each thread's schedstat (exact to the ns, where /proc's utime and stime count 10 ms
// ticks), summed over the process's threads.
//
// Peers, from the least work to the most:
//   nginx        proxy_pass, proxy_buffering off (C, one worker)
//   node-relay   node:net, bytes copied both ways unparsed (bench/peers/node-relay.ts)
//   node-raw     HTTP/1.1 on node:net with node's C llhttp binding, no node:http streams and no
//                undici: about the most a server path of gw's own could save (bench/peers/node-raw.ts)
//   node-raw-undici  as node-raw in, an undici Pool out: a server path of gw's own with its client
//                as it is (bench/peers/node-raw-undici.ts)
//   node-http    node:http in, node:http's client out (bench/peers/node-http.ts)
//   node-floor   node:http in, an undici Pool out (bench/peers/node-floor.ts, as in make bench)
//   gw           bin/gw, one worker, one plain route, logs off (as make bench runs it)
//   gw-net       the same with GW_HTTP1_SERVER=net: gw's own HTTP/1.1 server on node:net
//   gw-llm       (streams only) bin/gw with make bench's llm-stream config: the LLM layer's route
//
//   node bench/layers.ts           both; LAYERS=ttft or LAYERS=plain for one
//   LAYERS_ROUNDS=n                interleaved rounds (default 3)
//   LAYERS_STREAMS=n               streams one at a time per peer and round (default 200)
//   LAYERS_SECONDS=n               wrk seconds per peer and round (default 5)
//   LAYERS_PEERS=a,b               only these peers (direct always runs in ttft)
//   BENCH_GW_BIN=path              another gw launcher (e.g. with other node flags)
//
// Needs nginx, wrk and taskset (bench/setup.sh). Prints its tables; nothing is written to bench/.
// The scratch directory is removed unless BENCH_KEEP=1. Findings: bench/LAYERS.md.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gwConfig, startGw } from './lib/gw.ts';
import type { ClientSummary } from './lib/llm-stream-client.ts';
import { runWrk } from './lib/loadgen.ts';
import { freePorts, waitForHttp } from './lib/net.ts';
import { startNginx } from './lib/nginx.ts';
import { startNodeFloor } from './lib/node-floor.ts';
import { processTree, runTool, spawnTracked, stopAll, stopTracked, type Tracked } from './lib/procs.ts';
import { median } from './lib/stats.ts';
import { streamUpstreamArgv } from './lib/stream-comparison.ts';
import { ensureTools } from './lib/tools.ts';
import { chatRequest, llmGatewayYaml } from './scenarios/llm.ts';
import { KEEPALIVE, nginxProxy } from './scenarios/plain-http.ts';
import type { LoadSpec } from './scenarios/types.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '..');

function positiveInt(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  const v = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(v) || v < min) throw new Error(`${name} must be an integer ≥ ${min} (got ${raw})`);
  return v;
}
const rounds = positiveInt('LAYERS_ROUNDS', 3, 1);
const streams = positiveInt('LAYERS_STREAMS', 200, 20);
const wrkSeconds = positiveInt('LAYERS_SECONDS', 5, 1);
const which = process.env['LAYERS'] ?? 'ttft,plain';
const only = process.env['LAYERS_PEERS'] ? new Set(process.env['LAYERS_PEERS'].split(',')) : undefined;
for (const w of which.split(',')) {
  if (w !== 'ttft' && w !== 'plain') throw new Error(`LAYERS: unknown measurement ${w} (ttft, plain)`);
}
const gwBin = process.env['BENCH_GW_BIN'] ?? join(root, 'bin', 'gw');
const PROXY_CPU = '0';
const LOAD_CPU = '1';
const CHUNKS = 8;
const INTERVAL_MS = 2;

interface Peer {
  name: string;
  port: number;
  /** undefined for direct: the upstream alone, the baseline. */
  proc: Tracked | undefined;
}

interface Usage {
  cpuNs: number;
  switches: number;
}

/** CPU time (schedstat, ns) and context switches (voluntary and involuntary) over a process's threads. */
function usage(pid: number): Usage {
  const u = { cpuNs: 0, switches: 0 };
  for (const p of processTree(pid)) {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      continue; // exited
    }
    for (const t of tasks) {
      try {
        u.cpuNs += Number(readFileSync(`/proc/${p}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
        const status = readFileSync(`/proc/${p}/task/${t}/status`, 'utf8');
        for (const m of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm))
          u.switches += Number(m[1]);
      } catch {
        // the thread has exited
      }
    }
  }
  return u;
}

/** The proxies, each on PROXY_CPU with one thread serving, in front of the upstream on `upstreamPort`. */
async function startPeers(dir: string, upstreamPort: number, streaming: boolean): Promise<Peer[]> {
  // freePorts(n) gives n distinct ports
  const free = await freePorts(18);
  const [nginxPort, relayPort, rawPort, rawUndiciPort, httpPort, floorPort, gwPort, admin, stats, ready] =
    free as [number, number, number, number, number, number, number, number, number, number];
  const [gwNetPort, adminNet, statsNet, readyNet] = free.slice(10) as [number, number, number, number];
  const [gwLlmPort, adminLlm, statsLlm, readyLlm] = free.slice(14) as [number, number, number, number];
  const sub = join(dir, streaming ? 'ttft' : 'plain');
  mkdirSync(sub, { recursive: true });
  const node = (name: string, port: number): Tracked =>
    spawnTracked(
      name,
      [
        process.execPath,
        '--disable-warning=ExperimentalWarning',
        join(here, 'peers', `${name}.ts`),
        String(port),
        String(upstreamPort),
      ],
      { cpus: PROXY_CPU, logFile: join(sub, `${name}.log`) },
    );
  const relay = node('node-relay', relayPort);
  const raw = node('node-raw', rawPort);
  const rawUndici = node('node-raw-undici', rawUndiciPort);
  const http = node('node-http', httpPort);
  const ports = {
    gw: gwPort,
    nginx: nginxPort,
    upstream: upstreamPort,
    admin: admin,
    stats: stats,
    ready: ready,
  };
  const nginx = await startNginx({
    name: 'nginx',
    workDir: sub,
    workers: 1,
    cpus: PROXY_CPU,
    port: ports.nginx,
    httpBody: nginxProxy(ports, streaming ? '\n      proxy_buffering off;' : ''),
  });
  const floor = await startNodeFloor({
    workDir: sub,
    port: floorPort,
    upstreamPort,
    workers: 1,
    cpus: PROXY_CPU,
  });
  const plainRoute = (p: typeof ports): string =>
    gwConfig(
      p,
      1,
      `- port: ${p.gw}
  address: 127.0.0.1
  listeners:
  - routes:
    - backends:
      - host: 127.0.0.1:${upstreamPort}
`,
    );
  const gwPeer = async (
    name: string,
    p: typeof ports,
    yaml: string,
    env?: Record<string, string>,
  ): Promise<Tracked> =>
    startGw({
      name,
      gwBin,
      workDir: sub,
      readyPort: p.ready,
      cpus: PROXY_CPU,
      yaml,
      ...(env ? { env } : {}),
    });
  const gw = await gwPeer('gw', ports, plainRoute(ports));
  const netPorts = { ...ports, gw: gwNetPort, admin: adminNet, stats: statsNet, ready: readyNet };
  const gwNet = await gwPeer('gw-net', netPorts, plainRoute(netPorts), { GW_HTTP1_SERVER: 'net' });
  // Streams only: the same gw as make bench's llm-stream runs it, the LLM layer in front of the upstream.
  const llmPorts = { ...ports, gw: gwLlmPort, admin: adminLlm, stats: statsLlm, ready: readyLlm };
  const gwLlm = streaming
    ? await gwPeer('gw-llm', llmPorts, llmGatewayYaml({ mode: { workers: 1 }, ports: llmPorts }))
    : undefined;
  const peers: Peer[] = [
    { name: 'direct', port: upstreamPort, proc: undefined },
    { name: 'nginx', port: ports.nginx, proc: nginx },
    { name: 'node-relay', port: relayPort, proc: relay },
    { name: 'node-raw', port: rawPort, proc: raw },
    { name: 'node-raw-undici', port: rawUndiciPort, proc: rawUndici },
    { name: 'node-http', port: httpPort, proc: http },
    { name: 'node-floor', port: floorPort, proc: floor },
    { name: 'gw', port: ports.gw, proc: gw },
    { name: 'gw-net', port: gwNetPort, proc: gwNet },
    ...(gwLlm === undefined ? [] : [{ name: 'gw-llm', port: gwLlmPort, proc: gwLlm }]),
  ];
  for (const p of peers) {
    if (p.proc !== undefined) await waitForHttp(`http://127.0.0.1:${p.port}/`, p.proc, { timeoutMs: 10_000 });
  }
  if (only === undefined) return peers;
  for (const p of peers) if (p.proc !== undefined && !only.has(p.name)) await stopTracked(p.proc);
  return peers.filter((p) => p.proc === undefined || only.has(p.name));
}

const us = (v: number): string => (Number.isNaN(v) ? '–' : `${Math.round(v)} µs`);
const cell = (v: number[], f: (x: number) => string): string =>
  v.length === 0 ? '–' : `${f(median(v))} (${f(Math.min(...v))} – ${f(Math.max(...v))})`;

function printTable(rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  for (const r of rows)
    console.log(
      r
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    );
  console.log('');
}

async function ttft(dir: string): Promise<void> {
  const [upstreamPort] = await freePorts(1);
  if (upstreamPort === undefined) throw new Error('no free port');
  const bodyFile = join(dir, 'request.json');
  writeFileSync(bodyFile, chatRequest({ stream: true, stream_options: { include_usage: true } }));
  const upstream = spawnTracked(
    'upstream',
    streamUpstreamArgv({ port: upstreamPort, chunks: CHUNKS, intervalMs: INTERVAL_MS }),
    { cpus: LOAD_CPU, logFile: join(dir, 'stream-upstream.log') },
  );
  await waitForHttp(`http://127.0.0.1:${upstreamPort}/`, upstream, { timeoutMs: 10_000 });
  const peers = await startPeers(dir, upstreamPort, true);

  let runs = 0;
  const client = async (peer: Peer, sequential: number, requests: number): Promise<ClientSummary> => {
    const out = join(dir, `client-${++runs}-${peer.name}.json`);
    const argv = [
      process.execPath,
      '--disable-warning=ExperimentalWarning',
      join(here, 'lib', 'llm-stream-client.ts'),
      ...['--url', `http://127.0.0.1:${peer.port}/v1/chat/completions`, '--body-file', bodyFile],
      ...['--sequential', String(sequential), '--requests', String(requests), '--concurrency', '8'],
      ...['--stagger-us', '250', '--timeout-ms', '10000', '--out', out],
    ];
    const { status, stdout } = await runTool('stream-client', argv, {
      cpus: LOAD_CPU,
      logFile: join(dir, `client-${runs}.log`),
      timeoutMs: 60_000 + (sequential + requests) * 1000,
    });
    if (status !== 0) throw new Error(`stream client failed (${status}) against ${peer.name}:\n${stdout}`);
    return JSON.parse(readFileSync(out, 'utf8')) as ClientSummary;
  };

  // Unrecorded: enough streams for the JIT to have compiled each proxy's path.
  process.stderr.write('ttft: warming up');
  for (const peer of peers) {
    await client(peer, 100, 400);
    process.stderr.write('.');
  }
  process.stderr.write('\n');

  const rows = new Map(
    peers.map((p) => [
      p.name,
      {
        ttft: [] as number[],
        added: [] as number[],
        transit: [] as number[],
        cpu: [] as number[],
        switches: [] as number[],
      },
    ]),
  );
  for (let r = 1; r <= rounds; r++) {
    let direct = Number.NaN;
    for (const peer of peers) {
      const before = peer.proc === undefined ? undefined : usage(peer.proc.pid);
      const s = (await client(peer, streams, 0)).sequential;
      const after = peer.proc === undefined ? undefined : usage(peer.proc.pid);
      if (s.failed > 0) throw new Error(`${peer.name}: ${s.failed} streams failed: ${s.failures.join('; ')}`);
      const row = rows.get(peer.name);
      if (row === undefined) continue;
      if (peer.proc === undefined) direct = s.ttft.p50Us;
      row.ttft.push(s.ttft.p50Us);
      row.added.push(s.ttft.p50Us - direct);
      row.transit.push(s.transit.p50Us);
      if (before !== undefined && after !== undefined) {
        row.cpu.push((after.cpuNs - before.cpuNs) / 1000 / streams);
        row.switches.push((after.switches - before.switches) / streams);
      }
    }
    process.stderr.write(`ttft: round ${r} of ${rounds} done\n`);
  }
  console.log(
    `Time to first token, one stream at a time: ${streams} streams per peer and round, ${rounds} round(s); ` +
      `each a 1 KiB chat request and ${CHUNKS} SSE chunks ${INTERVAL_MS} ms apart. Proxies on core ` +
      `${PROXY_CPU}, upstream and client on core ${LOAD_CPU}. Medians over rounds (min – max).\n`,
  );
  printTable([
    ['peer', 'TTFT p50', 'added TTFT p50', 'chunk transit p50', 'CPU per stream', 'wake-ups per stream'],
    ...peers.map((p) => {
      const row = rows.get(p.name);
      if (row === undefined) return [p.name];
      return [
        p.name,
        cell(row.ttft, us),
        p.proc === undefined ? '–' : cell(row.added, us),
        cell(row.transit, us),
        cell(row.cpu, us),
        cell(row.switches, (x) => x.toFixed(1)),
      ];
    }),
  ]);
  for (const p of peers) if (p.proc !== undefined) await stopTracked(p.proc);
  await stopTracked(upstream);
}

async function plain(dir: string): Promise<void> {
  const [upstreamPort] = await freePorts(1);
  if (upstreamPort === undefined) throw new Error('no free port');
  const upstream = await startNginx({
    name: 'upstream',
    workDir: dir,
    workers: 1,
    cpus: LOAD_CPU,
    port: upstreamPort,
    httpBody: `${KEEPALIVE}
  server {
    listen 127.0.0.1:${upstreamPort};
    location / {
      default_type text/plain;
      return 200 'hello from the upstream\\n';
    }
  }`,
  });
  const peers = (await startPeers(dir, upstreamPort, false)).filter((p) => p.proc !== undefined);
  const load: LoadSpec = {
    path: '/',
    method: 'GET',
    headers: {},
    body: undefined,
    connections: 64,
    rateRps: 0,
    latencyConnections: 64,
  };
  const wrk = (peer: Peer, seconds: number) =>
    runWrk({ url: `http://127.0.0.1:${peer.port}`, load, seconds, threads: 1, cpus: LOAD_CPU, dir });
  process.stderr.write('plain: warming up');
  for (const peer of peers) {
    await wrk(peer, 2);
    process.stderr.write('.');
  }
  process.stderr.write('\n');
  const rows = new Map(peers.map((p) => [p.name, { rps: [] as number[], cpu: [] as number[] }]));
  for (let r = 1; r <= rounds; r++) {
    for (const peer of peers) {
      if (peer.proc === undefined) continue;
      const before = usage(peer.proc.pid);
      const w = await wrk(peer, wrkSeconds);
      const after = usage(peer.proc.pid);
      if (w.ok === 0) throw new Error(`${peer.name}: wrk had no answer below 400`);
      rows.get(peer.name)?.rps.push(w.rps);
      rows.get(peer.name)?.cpu.push((after.cpuNs - before.cpuNs) / 1000 / w.requests);
    }
    process.stderr.write(`plain: round ${r} of ${rounds} done\n`);
  }
  console.log(
    `Plain proxying under load: wrk, 64 connections, ${wrkSeconds} s per peer and round, ${rounds} round(s), ` +
      `against an nginx upstream answering 200. Proxies on core ${PROXY_CPU}, wrk and the upstream on core ` +
      `${LOAD_CPU}. Medians over rounds (min – max).\n`,
  );
  const floorCpu = median(rows.get('node-floor')?.cpu ?? []);
  printTable([
    ['peer', 'throughput', 'CPU per request', 'CPU / node-floor'],
    ...peers.map((p) => {
      const row = rows.get(p.name);
      if (row === undefined) return [p.name];
      return [
        p.name,
        cell(row.rps, (x) => `${Math.round(x).toLocaleString('en-US')} req/s`),
        cell(row.cpu, (x) => `${x.toFixed(1)} µs`),
        `${(median(row.cpu) / floorCpu).toFixed(2)}×`,
      ];
    }),
  ]);
  for (const p of peers) if (p.proc !== undefined) await stopTracked(p.proc);
  await stopTracked(upstream);
}

ensureTools(here);
const dir = mkdtempSync(join(tmpdir(), 'gw-layers-'));
try {
  if (which.includes('ttft')) await ttft(dir);
  if (which.includes('plain')) await plain(dir);
} finally {
  await stopAll();
  if (process.env['BENCH_KEEP']) console.log(`scratch: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
