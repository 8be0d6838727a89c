// `bin/gw-controller` as the end-to-end suites on the test API server run it: free ports for xDS,
// health and metrics, its log kept for failure messages, started and stopped by pid. Also kubectl that
// must succeed and polling that prints the log tail when it times out.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { KubeHarness } from '@gw/testkit';
import { until as poll } from './controller-e2e.ts';
import { freePort, type GwProcess, startGw } from './gw-process.ts';

export const CONTROLLER_BIN = resolve(import.meta.dirname, '../../bin/gw-controller');

export interface ControllerProcess {
  child: ChildProcess;
  xdsPort: number;
  healthPort: number;
  metricsPort: number;
  /** What it wrote to stderr (its JSON log), chunk by chunk. */
  log: string[];
  /** SIGTERM, and wait for it to exit (nothing when it has exited already). */
  stop(): Promise<void>;
}

/**
 * Starts the controller against `kubeconfig` with `args` after the port flags, and waits until it is
 * ready (`waitReady`, default true). The ports are free when picked but may be taken before the
 * controller binds them (the suites run in parallel): a controller that exits on EADDRINUSE before it
 * is ready is started again on new ports, up to three times. Pass `args` as a function to have a port
 * the test names (--proxy-xds-address) follow; ports the test picked itself are not changed.
 */
export async function startController(
  kubeconfig: string,
  /** After the port flags; a function gets the ports (e.g. for --proxy-xds-address). */
  args: string[] | ((ports: { xds: number }) => string[]) = [],
  opts: { env?: Record<string, string>; waitReady?: boolean } = {},
): Promise<ControllerProcess> {
  for (let attempt = 1; ; attempt++) {
    const c = await spawnController(kubeconfig, args, opts.env);
    if (!(opts.waitReady ?? true)) return c;
    const context = () => `\ncontroller log:\n${c.log.slice(-20).join('')}`;
    const state = await poll(
      'the controller to be ready',
      async () => {
        if (c.child.exitCode !== null || c.child.signalCode !== null) return 'exited';
        const r = await fetch(`http://127.0.0.1:${c.healthPort}/readyz`).catch(() => undefined);
        return r?.status === 200 ? 'ready' : undefined;
      },
      { timeoutMs: 30_000, context },
    ).catch(async (err: unknown) => {
      await c.stop();
      throw err;
    });
    if (state === 'ready') return c;
    if (!/EADDRINUSE/.test(c.log.join('')) || attempt >= 3)
      throw new Error(`the controller exited before it was ready${context()}`);
  }
}

async function spawnController(
  kubeconfig: string,
  args: string[] | ((ports: { xds: number }) => string[]),
  env: Record<string, string> = {},
): Promise<ControllerProcess> {
  const [xdsPort, healthPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(
    CONTROLLER_BIN,
    [
      ...['--xds-port', String(xdsPort), '--xds-address', '127.0.0.1'],
      ...['--health-port', String(healthPort), '--metrics-port', String(metricsPort)],
      ...(typeof args === 'function' ? args({ xds: xdsPort }) : args),
    ],
    { env: { ...process.env, KUBECONFIG: kubeconfig, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const log: string[] = [];
  child.stderr?.on('data', (c: Buffer) => log.push(c.toString()));
  return {
    child,
    xdsPort,
    healthPort,
    metricsPort,
    log,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** kubectl through the harness that must exit 0; its stdout. */
export function kubectlOk(kube: () => KubeHarness) {
  return async (args: string[], input?: string): Promise<string> => {
    const r = await kube().kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
}

/** Polling whose timeout message ends with the tail of `logs` (each a name and its lines). */
export function untilWithLogs(logs: () => [string, string[]][]) {
  return <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> =>
    poll(what, fn, {
      timeoutMs,
      context: () =>
        logs()
          .map(([name, lines]) => `\n${name}:\n${lines.slice(-20).join('')}`)
          .join(''),
    });
}

/**
 * `bin/gw` in xDS mode for `gateway` of `controller`, presenting the token in `tokenFile`; its admin,
 * stats and readiness ports moved off the defaults, which other processes may hold.
 */
export function startXdsProxy(
  controller: ControllerProcess,
  tokenFile: string,
  opts: { gateway?: string; waitReady?: boolean } = {},
): Promise<GwProcess> {
  const { gateway = 'default/edge', ...rest } = opts;
  return startGw({
    args: [
      ...['--xds-address', `http://127.0.0.1:${controller.xdsPort}`, '--gateway', gateway],
      ...['--xds-token-file', tokenFile, '--admin-addr', '127.0.0.1:0'],
      ...['--stats-addr', '127.0.0.1:0', '--readiness-addr', '127.0.0.1:0'],
    ],
    ...rest,
  });
}

/** A new service account's token (the API server's), written to a file in the harness's directory. */
export async function serviceAccountTokenFile(
  kube: KubeHarness,
  name: string,
  ns = 'default',
): Promise<string> {
  const kubectl = kubectlOk(() => kube);
  await kubectl(['create', 'serviceaccount', name, '-n', ns]);
  const file = join(kube.dir, `${name}.token`);
  writeFileSync(file, (await kubectl(['create', 'token', name, '-n', ns])).trim());
  return file;
}
