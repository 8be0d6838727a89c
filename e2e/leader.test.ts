// Two controller replicas on the real API server (startKube) with --leader-elect: one holds the Lease
// and writes statuses, the other serves xDS only; killed without a goodbye, the leader is replaced
// once its Lease runs out, and the new leader writes the status of a route applied meanwhile.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type KubeHarness, startKube } from '@gw/testkit';
import { gatewayYaml, routeYaml } from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  startController,
  untilWithLogs,
} from './support/controller-process.ts';

const LEASE_SECONDS = 3;

let kube: KubeHarness;
interface Replica {
  name: string;
  controller: ControllerProcess;
}
const replicas: Replica[] = [];

const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => replicas.map((r) => [r.name, r.controller.log]));

async function startReplica(name: string): Promise<Replica> {
  const controller = await startController(
    kube.kubeconfig,
    [
      ...['--leader-elect', '--leader-election-namespace', 'default'],
      ...['--leader-lease-seconds', String(LEASE_SECONDS)],
    ],
    { env: { POD_NAME: name } },
  );
  const r = { name, controller };
  replicas.push(r);
  return r;
}

const leaderGauge = async (r: Replica) => {
  const res = await fetch(`http://127.0.0.1:${r.controller.metricsPort}/metrics`).catch(() => undefined);
  const m = /gw_controller_leader (\d)/.exec((await res?.text()) ?? '');
  return m ? Number(m[1]) : undefined;
};
const lease = async () => {
  const r = await kube.kubectl(['get', 'lease', 'gw-controller', '-o', 'json']);
  return r.code === 0
    ? (
        JSON.parse(r.stdout) as {
          spec: {
            holderIdentity?: string;
            leaseTransitions?: number;
            renewTime?: string;
            acquireTime?: string;
          };
        }
      ).spec
    : undefined;
};

before(async () => {
  kube = await startKube();
  await startReplica('replica-a');
  await startReplica('replica-b');
});

after(async () => {
  for (const r of replicas) await r.controller.stop();
  await kube?.stop();
});

test('one replica leads and writes status; killed, it is replaced and the new leader writes status', async () => {
  const first = await until('a Lease holder', async () => (await lease())?.holderIdentity || undefined);
  const leader = replicas.find((r) => r.name === first) as Replica;
  const follower = replicas.find((r) => r.name !== first) as Replica;
  await until('the gauges to agree', async () =>
    (await leaderGauge(leader)) === 1 && (await leaderGauge(follower)) === 0 ? true : undefined,
  );
  // Beside its own counters, the controller serves the process figures and its build.
  const metrics = await (await fetch(`http://127.0.0.1:${leader.controller.metricsPort}/metrics`)).text();
  assert.ok(Number(/^process_resident_memory_bytes (\d+)$/m.exec(metrics)?.[1]) > 10 * 1024 * 1024, metrics);
  assert.match(metrics, /^gw_controller_build_info\{version="[^"]+",node_version="v\d+[^"]*"\} 1$/m);

  await kubectl(['apply', '--server-side', '-f', '-'], gatewayYaml('default', 18080));
  await until('the Gateway status, written by the leader', async () => {
    const out = await kubectl(['get', 'gateway', 'edge', '-o', 'jsonpath={.status.conditions[0].status}']);
    return out === 'True' ? true : undefined;
  });

  const transitions = (await lease())?.leaseTransitions ?? 0;
  leader.controller.child.kill('SIGKILL');
  // the dead leader's last renewal: the Lease runs out LEASE_SECONDS after it, not after the kill
  const renewed = (await lease())?.renewTime;
  assert.ok(renewed, 'the Lease has a renewTime');
  const taken = await until(`${follower.name} to take the Lease`, async () => {
    const l = await lease();
    return l?.holderIdentity === follower.name ? l : undefined;
  });
  assert.ok(taken.acquireTime, 'the new holder set acquireTime');
  // MicroTime (RFC 3339 with microseconds): Date.parse reads it to the millisecond
  const waited = Date.parse(taken.acquireTime) - Date.parse(renewed);
  assert.ok(
    waited >= LEASE_SECONDS * 1000 - 500,
    `taken ${waited} ms after the last renewal (${renewed} → ${taken.acquireTime}): not before the Lease ran out`,
  );
  assert.equal(taken.leaseTransitions, transitions + 1);
  await until('the new leader to say so in its gauge', async () =>
    (await leaderGauge(follower)) === 1 ? true : undefined,
  );

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
