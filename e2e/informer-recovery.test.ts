// The controller's watches recover from a broken connection to the API server: the controller reaches
// the real API server (startKube) through a TCP relay the test controls; the relay drops every
// connection and refuses new ones for a while, a route is applied meanwhile, and once the relay is
// back the controller lists again and writes the route's status. And from 410 Gone: the API server is
// restarted while the controller is cut off, so the resourceVersions its watches resume from are older
// than the new watch cache; the API server refuses them with 410 ("too old resource version"), and the
// controller lists again, finding what changed while it was away and what changes afterwards.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort, type KubeHarness, startKube } from '@gw/testkit';
import { gatewayYaml, routeYaml } from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  startController,
  untilWithLogs,
} from './support/controller-process.ts';

let kube: KubeHarness;
let controller: ControllerProcess;

/** A TCP relay to the API server that can drop its connections and stop accepting. */
interface Relay {
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** `port`: from freePort by default, a port no other program can take while the relay is cut. */
async function startRelay(target: { host: string; port: number }, port?: number): Promise<Relay> {
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
  const bound = await listen(port ?? (await freePort()));
  const stop = () =>
    new Promise<void>((res) => {
      for (const s of sockets) s.destroy();
      server.close(() => res());
    });
  return { port: bound, cut: stop, restore: async () => void (await listen(bound)), close: stop };
}

let relay: Relay;

const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [['controller log', controller?.log ?? []]]);

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
  controller = await startController(kubeconfig);
});

after(async () => {
  await controller?.stop();
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
    controller.log.join('').includes('watch failed; retrying') ? true : undefined,
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

/** The route YAML of routeYaml under another name. */
const namedRoute = (name: string) =>
  routeYaml('default', '{ group: "", kind: Service, name: missing, port: 80 }').replace(
    'name: web,',
    `name: ${name},`,
  );

const routeCondition = (name: string) =>
  kubectl(['get', 'httproute', name, '-o', 'jsonpath={.status.parents[0].conditions[0].type}']);

test('a watch answered with 410 Gone lists again: changes made meanwhile and afterwards are reconciled', async () => {
  await relay.cut();
  await until('the controller to notice the cut', async () =>
    controller.log.join('').split('watch failed; retrying').length > 2 ? true : undefined,
  );
  const logged = controller.log.length;
  // a write the controller does not see: every resourceVersion it holds is now older than the newest
  await kubectl(['create', 'configmap', 'bump', '--from-literal=a=b']);
  await kube.restart();
  await kubectl(['apply', '--server-side', '-f', '-'], namedRoute('meanwhile'));

  await relay.restore();
  const expired = await until(
    'a 410 on the HTTPRoute watch',
    async () => {
      const lines = controller.log.slice(logged).join('').split('\n');
      return lines.find((l) => l.includes('watch expired (410 Gone)') && l.includes('"kind":"HTTPRoute"'));
    },
    60_000,
  );
  assert.match(expired, /too old resource version/);
  assert.equal(
    await until(
      'the status of the route applied while the controller was away',
      async () => (await routeCondition('meanwhile')) || undefined,
    ),
    'Accepted',
  );

  await kubectl(['apply', '--server-side', '-f', '-'], namedRoute('afterwards'));
  assert.equal(
    await until(
      'the status of a route applied after the relist',
      async () => (await routeCondition('afterwards')) || undefined,
    ),
    'Accepted',
  );
});
