// The mcp scenario's configs are ones the proxies accept, and its client, upstreams and gw config work
// together: a short run through gw federating the two targets answers every request correctly.
//   node --test bench/scenarios/mcp.test.ts   (or node hack/test.ts bench/scenarios/mcp.test.ts)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { findAgentgateway } from '../lib/agentgateway.ts';
import { startGw } from '../lib/gw.ts';
import type { ClientSummary } from '../lib/mcp-client.ts';
import { mcpUpstreamArgv } from '../lib/mcp-comparison.ts';
import { freePorts, waitForHttp } from '../lib/net.ts';
import { runTool, spawnTracked, stopTracked, type Tracked } from '../lib/procs.ts';
import { configure, TARGETS, TOOLS_PER_TARGET } from './mcp.ts';
import type { Mode, Ports } from './types.ts';

const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const gwBin = join(repoRoot, 'bin', 'gw');
const work = mkdtempSync(join(tmpdir(), 'gw-bench-mcp-test-'));
const started: Tracked[] = [];
after(async () => {
  for (const t of started.reverse()) await stopTracked(t);
  rmSync(work, { recursive: true, force: true });
});

const MODE: Mode = {
  name: 'unpinned',
  label: 'test',
  workers: 1,
  proxyCpus: undefined,
  loadCpus: undefined,
  loadThreads: 1,
};

async function ports(): Promise<Ports> {
  const [gw, upstream, upstream2, admin, stats, ready] = await freePorts(6);
  if (ready === undefined || gw === undefined || upstream === undefined || upstream2 === undefined)
    throw new Error('no ports');
  return { gw, nginx: 0, upstream, upstream2, admin: admin ?? 0, stats: stats ?? 0, ready };
}

function validate(argv: string[], yaml: string, name: string): { status: number | null; out: string } {
  const file = join(work, name);
  writeFileSync(file, yaml);
  const [cmd, ...args] = argv;
  const r = spawnSync(cmd ?? '', [...args, file], { encoding: 'utf8', cwd: work });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('gw accepts the scenario config, an mcp backend with both targets on loopback', async () => {
  const p = await ports();
  const cfg = configure({ mode: MODE, ports: p });
  for (const [i, name] of TARGETS.entries()) {
    const port = i === 0 ? p.upstream : p.upstream2;
    assert.match(
      cfg.gwYaml,
      new RegExp(`name: ${name}\\n\\s+mcp: \\{host: "http://127.0.0.1:${port}/mcp"\\}`),
    );
  }
  assert.match(cfg.gwYaml, /address: 127\.0\.0\.1/);
  const r = validate([gwBin, '--validate-only', '-f'], cfg.gwYaml, 'gw.yaml');
  assert.equal(r.status, 0, r.out);
  // The timed call through a gateway is the first target's echo, prefixed (prefixMode Conditional).
  assert.equal(JSON.parse(cfg.load.body ?? '{}').params.name, `${TARGETS[0]}_echo`);
});

test('agentgateway accepts its equivalent config', {
  skip: findAgentgateway(repoRoot) === undefined,
}, async () => {
  const bin = findAgentgateway(repoRoot) ?? '';
  const yaml = configure({ mode: MODE, ports: await ports() }).agentgatewayYaml;
  assert.ok(yaml !== undefined);
  const r = validate([bin, '--validate-only', '-f'], yaml, 'agentgateway.yaml');
  assert.equal(r.status, 0, r.out);
});

test('a short client run directly and through gw answers every request', async () => {
  const p = await ports();
  for (const [name, port] of [
    [TARGETS[0], p.upstream],
    [TARGETS[1], p.upstream2 ?? 0],
  ] as const) {
    const up = spawnTracked(`upstream-${name}`, mcpUpstreamArgv(port, name), {
      cpus: undefined,
      logFile: join(work, `upstream-${name}.log`),
    });
    started.push(up);
    await waitForHttp(`http://127.0.0.1:${port}/`, up, { timeoutMs: 10_000, status: 200 });
  }
  const gw = await startGw({
    gwBin,
    workDir: work,
    yaml: configure({ mode: MODE, ports: p }).gwYaml,
    readyPort: p.ready,
    cpus: undefined,
  });
  started.push(gw);
  const client = fileURLToPath(new URL('../lib/mcp-client.ts', import.meta.url));
  const run = async (name: string, args: string[]): Promise<ClientSummary> => {
    const out = join(work, `${name}.json`);
    const { status, stdout } = await runTool(
      'mcp-client',
      [process.execPath, client, ...args, '--lists', '5', '--concurrency', '2', '--out', out],
      { cpus: undefined, logFile: join(work, `${name}.log`), timeoutMs: 30_000 },
    );
    assert.equal(status, 0, stdout);
    return JSON.parse(readFileSync(out, 'utf8')) as ClientSummary;
  };
  const upstream = `http://127.0.0.1:${p.upstream}/mcp`;
  const both = TARGETS.length * TOOLS_PER_TARGET;
  const runs: [string, ClientSummary, boolean][] = [
    [
      'direct',
      await run('direct', [
        ...['--url', upstream, '--tool', 'echo', '--tools', String(TOOLS_PER_TARGET)],
        ...['--calls', '5', '--concurrent-calls', '8'],
      ]),
      true,
    ],
    [
      'direct-both',
      await run('direct-both', [
        ...['--url', upstream, '--url2', `http://127.0.0.1:${p.upstream2}/mcp`],
        ...['--tool', 'echo', '--tools', String(both)],
      ]),
      false,
    ],
    [
      'gw',
      await run('gw', [
        ...['--url', `http://127.0.0.1:${p.gw}/mcp`, '--tool', `${TARGETS[0]}_echo`],
        ...['--tools', String(both), '--calls', '5', '--concurrent-calls', '8', '--cpu-pid', String(gw.pid)],
      ]),
      true,
    ],
  ];
  for (const [name, s, calls] of runs) {
    for (const phase of [s.list, s.call, s.callConcurrent])
      assert.equal(phase.failed, 0, `${name}: ${phase.failures}`);
    assert.equal(s.list.latency.n, 5, name);
    assert.equal(s.call.latency.n + s.callConcurrent.latency.n, calls ? 13 : 0, name);
  }
  const gwRun = runs[2]?.[1];
  assert.ok((gwRun?.callConcurrent.cpuNs ?? 0) > 0, 'gw CPU time was read');
});
