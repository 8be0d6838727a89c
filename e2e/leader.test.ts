// Two controller replicas on the real API server (startKube) with --leader-elect: one holds the Lease
// and writes statuses, the other serves xDS only; killed without a goodbye, the leader is replaced
// once its Lease runs out, and the new leader writes the status of a route applied meanwhile.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { type KubeHarness, startKube } from '@gw/testkit';
import { gatewayYaml, until as poll, routeYaml } from './support/controller-e2e.ts';
import { freePort } from './support/gw-process.ts';

const CONTROLLER_BIN = resolve(import.meta.dirname, '../bin/gw-controller');
const LEASE_SECONDS = 3;

let kube: KubeHarness;
interface Replica {
  name: string;
  child: ChildProcess;
  metrics: number;
  log: string[];
}
const replicas: Replica[] = [];

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await kube.kubectl(args, input === undefined ? {} : { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
const until = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> =>
  poll(what, fn, {
    timeoutMs,
    context: () => replicas.map((r) => `\n${r.name}:\n${r.log.slice(-8).join('')}`).join(''),
  });

async function startReplica(name: string): Promise<Replica> {
  const [xds, health, metrics] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(
    CONTROLLER_BIN,
    [
      ...['--xds-port', String(xds), '--xds-address', '127.0.0.1'],
      ...['--health-port', String(health), '--metrics-port', String(metrics)],
      ...['--leader-elect', '--leader-election-namespace', 'default'],
      ...['--leader-lease-seconds', String(LEASE_SECONDS)],
    ],
    {
      env: { ...process.env, KUBECONFIG: kube.kubeconfig, POD_NAME: name },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const r: Replica = { name, child, metrics, log: [] };
  child.stderr?.on('data', (c: Buffer) => r.log.push(c.toString()));
  replicas.push(r);
  return r;
}

const leaderGauge = async (r: Replica) => {
  const res = await fetch(`http://127.0.0.1:${r.metrics}/metrics`).catch(() => undefined);
  const m = /gw_controller_leader (\d)/.exec((await res?.text()) ?? '');
  return m ? Number(m[1]) : undefined;
};
const lease = async () => {
  const r = await kube.kubectl(['get', 'lease', 'gw-controller', '-o', 'json']);
  return r.code === 0
    ? (JSON.parse(r.stdout) as { spec: { holderIdentity?: string; leaseTransitions?: number } }).spec
    : undefined;
};

before(async () => {
  kube = await startKube();
  await startReplica('replica-a');
  await startReplica('replica-b');
});

after(async () => {
  for (const r of replicas) {
    if (r.child.exitCode !== null || r.child.signalCode !== null) continue;
    const exited = new Promise((res) => r.child.once('exit', res));
    r.child.kill('SIGTERM');
    await exited;
  }
  await kube?.stop();
});

test('one replica leads and writes status; killed, it is replaced and the new leader writes status', async () => {
  const first = await until('a Lease holder', async () => (await lease())?.holderIdentity || undefined);
  const leader = replicas.find((r) => r.name === first) as Replica;
  const follower = replicas.find((r) => r.name !== first) as Replica;
  await until('the gauges to agree', async () =>
    (await leaderGauge(leader)) === 1 && (await leaderGauge(follower)) === 0 ? true : undefined,
  );

  await kubectl(['apply', '--server-side', '-f', '-'], gatewayYaml('default', 18080));
  await until('the Gateway status, written by the leader', async () => {
    const out = await kubectl(['get', 'gateway', 'edge', '-o', 'jsonpath={.status.conditions[0].status}']);
    return out === 'True' ? true : undefined;
  });

  const transitions = (await lease())?.leaseTransitions ?? 0;
  leader.child.kill('SIGKILL');
  const started = Date.now();
  await until(`${follower.name} to take the Lease`, async () =>
    (await lease())?.holderIdentity === follower.name ? true : undefined,
  );
  const took = Date.now() - started;
  assert.ok(took >= (LEASE_SECONDS - 1) * 1000, `took over after ${took} ms: not before the Lease ran out`);
  assert.equal((await lease())?.leaseTransitions, transitions + 1);
  assert.equal(await leaderGauge(follower), 1);

  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    routeYaml('default', '{ group: "", kind: Service, name: missing, port: 80 }'),
  );
  const accepted = await until('the route status, written by the new leader', async () => {
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
