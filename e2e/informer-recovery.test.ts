// The controller's watches recover from a broken connection to the API server: the controller reaches
// the real API server (startKube) through a TCP relay the test controls; the relay drops every
// connection and refuses new ones for a while, a route is applied meanwhile, and once the relay is
// back the controller lists again and writes the route's status.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { type KubeHarness, startKube } from '@gw/testkit';
import { gatewayYaml, until as poll, routeYaml } from './support/controller-e2e.ts';
import { freePort } from './support/gw-process.ts';

const CONTROLLER_BIN = resolve(import.meta.dirname, '../bin/gw-controller');

let kube: KubeHarness;
let controller: ChildProcess;
const controllerLog: string[] = [];

/** A TCP relay to the API server that can drop its connections and stop accepting. */
interface Relay {
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

async function startRelay(target: { host: string; port: number }, port = 0): Promise<Relay> {
  const sockets = new Set<net.Socket>();
  let server: net.Server;
  const listen = (p: number) =>
    new Promise<number>((res, rej) => {
      server = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.once('error', rej);
      server.listen(p, '127.0.0.1', () => res((server.address() as net.AddressInfo).port));
    });
  const bound = await listen(port);
  const stop = () =>
    new Promise<void>((res) => {
      for (const s of sockets) s.destroy();
      server.close(() => res());
    });
  return { port: bound, cut: stop, restore: async () => void (await listen(bound)), close: stop };
}

let relay: Relay;

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await kube.kubectl(args, input === undefined ? {} : { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
const until = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> =>
  poll(what, fn, { timeoutMs, context: () => `\ncontroller log:\n${controllerLog.slice(-20).join('')}` });

before(async () => {
  kube = await startKube();
  const api = new URL(kube.server);
  relay = await startRelay({ host: api.hostname, port: Number(api.port) });
  // the harness's kubeconfig, pointed at the relay (the serving certificate is for 127.0.0.1)
  const kubeconfig = join(kube.dir, 'via-relay.kubeconfig');
  writeFileSync(
    kubeconfig,
    readFileSync(kube.kubeconfig, 'utf8').replaceAll(kube.server, `https://127.0.0.1:${relay.port}`),
  );
  const [xds, health, metrics] = [await freePort(), await freePort(), await freePort()];
  controller = spawn(
    CONTROLLER_BIN,
    [
      ...['--xds-port', String(xds), '--xds-address', '127.0.0.1'],
      ...['--health-port', String(health), '--metrics-port', String(metrics)],
    ],
    { env: { ...process.env, KUBECONFIG: kubeconfig }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  controller.stderr?.on('data', (c: Buffer) => controllerLog.push(c.toString()));
  await until('the controller to be ready', async () => {
    const r = await fetch(`http://127.0.0.1:${health}/readyz`).catch(() => undefined);
    return r?.status === 200 ? true : undefined;
  });
});

after(async () => {
  if (controller && controller.exitCode === null) {
    const exited = new Promise((r) => controller.once('exit', r));
    controller.kill('SIGTERM');
    await exited;
  }
  await relay?.close();
  await kube?.stop();
});

test('after the API server connection breaks, the watches come back and what changed meanwhile is handled', async () => {
  await kubectl(['apply', '--server-side', '-f', '-'], gatewayYaml('default', 18080));
  await until('the Gateway status', async () => {
    const out = await kubectl(['get', 'gateway', 'edge', '-o', 'jsonpath={.status.conditions[0].status}']);
    return out === 'True' ? true : undefined;
  });

  await relay.cut();
  await until('the controller to notice', async () =>
    controllerLog.join('').includes('watch failed; retrying') ? true : undefined,
  );
  // applied while the controller cannot see the API server
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    routeYaml('default', '{ group: "", kind: Service, name: missing, port: 80 }'),
  );
  await new Promise((r) => setTimeout(r, 1500));
  const before = await kubectl(['get', 'httproute', 'web', '-o', 'jsonpath={.status.parents}']);
  assert.equal(before, '', 'no status while the controller is cut off');

  await relay.restore();
  const accepted = await until('the route status after the watches recover', async () => {
    const out = await kubectl([
      'get',
      'httproute',
      'web',
      '-o',
      'jsonpath={.status.parents[0].conditions[0].type}',
    ]);
    return out || undefined;
  });
  assert.equal(accepted, 'Accepted');
});
