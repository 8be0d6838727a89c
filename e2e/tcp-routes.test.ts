// TCPRoute and TLSRoute end to end on the real API server: `kubectl apply` of a Gateway with a TCP
// listener and a TLS passthrough listener, a TCPRoute and a TLSRoute to static GwBackends on
// loopback (the API server refuses loopback endpoints for Services); `bin/gw` takes its config from
// the controller over xDS, and real connections go through: bytes echoed over TCP, and over TLS the
// client's handshake reaches the backend, whose certificate it verifies (passthrough by SNI).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import { freePort, type KubeHarness, makeTestPki, startKube, type TestPki } from '@gw/testkit';
import { routeAccepted } from './support/controller-e2e.ts';
import {
  type ControllerProcess,
  kubectlOk,
  serviceAccountTokenFile,
  startController,
  startXdsProxy,
  untilWithLogs,
} from './support/controller-process.ts';
import { cleanupGw } from './support/gw-process.ts';

let kube: KubeHarness;
let pki: TestPki;
let controller: ControllerProcess;
let echo: net.Server;
let backend: tls.Server;
let tcpPort: number;
let tlsPort: number;
let termPort: number;
const kubectl = kubectlOk(() => kube);
const until = untilWithLogs(() => [['controller log', controller?.log ?? []]]);

const listen = async (server: net.Server): Promise<number> => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as net.AddressInfo).port;
};

before(async () => {
  [kube, pki, tcpPort, tlsPort, termPort] = await Promise.all([
    startKube(),
    makeTestPki(['app.example.com', 'term.example.net']),
    freePort(),
    freePort(),
    freePort(),
  ]);
  echo = net.createServer((s) => {
    s.on('error', () => {});
    s.on('data', (d) => s.write(`echo:${d}`));
  });
  const app = pki.servers['app.example.com'];
  backend = tls.createServer({ cert: app?.cert, key: app?.key }, (s) => {
    s.on('error', () => {});
    s.end(`backend saw ${(s as tls.TLSSocket).servername}`);
  });
  const [echoPort, backendPort] = await Promise.all([listen(echo), listen(backend)]);
  controller = await startController(kube.kubeconfig);
  await kubectl(
    ['apply', '--server-side', '-f', '-'],
    `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: edge, namespace: default }
spec:
  gatewayClassName: gw
  listeners:
    - { name: db, protocol: TCP, port: ${tcpPort} }
    - { name: apps, protocol: TLS, port: ${tlsPort}, hostname: "*.example.com", tls: { mode: Passthrough } }
    - name: term
      protocol: TLS
      port: ${termPort}
      hostname: term.example.net
      tls: { mode: Terminate, certificateRefs: [{ name: term-cert }] }
---
apiVersion: v1
kind: Secret
metadata: { name: term-cert, namespace: default }
type: kubernetes.io/tls
data:
  tls.crt: ${Buffer.from(pki.servers['term.example.net']?.cert ?? '').toString('base64')}
  tls.key: ${Buffer.from(pki.servers['term.example.net']?.key ?? '').toString('base64')}
---
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: echo, namespace: default }
spec:
  static: { host: 127.0.0.1, port: ${echoPort} }
---
apiVersion: gw.dev/v1alpha1
kind: GwBackend
metadata: { name: app, namespace: default }
spec:
  static: { host: 127.0.0.1, port: ${backendPort} }
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: { name: db, namespace: default }
spec:
  parentRefs: [{ name: edge, sectionName: db }]
  rules:
    - backendRefs: [{ group: gw.dev, kind: GwBackend, name: echo }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: { name: app, namespace: default }
spec:
  parentRefs: [{ name: edge }]
  hostnames: [app.example.com]
  rules:
    - backendRefs: [{ group: gw.dev, kind: GwBackend, name: app }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: { name: term, namespace: default }
spec:
  parentRefs: [{ name: edge, sectionName: term }]
  hostnames: [term.example.net]
  rules:
    - backendRefs: [{ group: gw.dev, kind: GwBackend, name: echo }]
`,
  );
  await startXdsProxy(controller, await serviceAccountTokenFile(kube, 'edge'));
});

after(async () => {
  await cleanupGw();
  await controller?.stop();
  echo?.close();
  backend?.close();
  await pki?.cleanup();
  await kube?.stop();
});

/** What the other end sends back after `data`, until it closes or 2 s pass. */
function exchange(socket: net.Socket | tls.TLSSocket, data?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(got);
    }, 2_000);
    socket.on('data', (d) => {
      got += d;
      if (data !== undefined && got.length >= `echo:${data}`.length) {
        clearTimeout(timer);
        socket.end();
        resolve(got);
      }
    });
    socket.on('end', () => {
      clearTimeout(timer);
      resolve(got);
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    if (data !== undefined) socket.write(data);
  });
}

test('TCPRoute: the bytes reach the static backend and come back', async () => {
  const answer = await until('an echo through the TCP listener', async () => {
    const s = net.connect(tcpPort, '127.0.0.1');
    const got = await exchange(s, 'ping').catch(() => '');
    return got === 'echo:ping' ? got : undefined;
  });
  assert.equal(answer, 'echo:ping');
});

test("TLSRoute (passthrough): the handshake is the backend's, chosen by SNI", async () => {
  const answer = await until('a TLS answer through the TLS listener', async () => {
    const s = tls.connect({ port: tlsPort, host: '127.0.0.1', servername: 'app.example.com', ca: pki.ca });
    const got = await exchange(s).catch(() => '');
    return got || undefined;
  });
  assert.equal(answer, 'backend saw app.example.com');
  // a name no TLSRoute takes: closed without a handshake
  const other = tls.connect({
    port: tlsPort,
    host: '127.0.0.1',
    servername: 'other.example.com',
    ca: pki.ca,
  });
  let secured = false;
  other.on('secureConnect', () => {
    secured = true;
  });
  const closed = await exchange(other).then(
    (got) => `answered ${JSON.stringify(got)}`,
    (err: Error) => err.message,
  );
  assert.equal(secured, false);
  // closed by the gateway: an end, or the error TLS makes of it, and nothing from a backend
  assert.match(closed, /^answered ""$|disconnected before secure TLS connection was established/);
});

test("TLS listener that terminates: the gateway's certificate from the Secret, the plaintext to the backend", async () => {
  const answer = await until('an echo through the terminating TLS listener', async () => {
    const s = tls.connect({ port: termPort, host: '127.0.0.1', servername: 'term.example.net', ca: pki.ca });
    const got = await exchange(s, 'ping').catch(() => '');
    return got === 'echo:ping' ? got : undefined;
  });
  // the client verified the certificate for term.example.net (ca: the test CA) and the echo server,
  // which speaks no TLS, got the bytes in clear
  assert.equal(answer, 'echo:ping');
});

test('the routes are Accepted and counted on their listeners', async () => {
  for (const kind of ['tcproute/db', 'tlsroute/app', 'tlsroute/term']) {
    const accepted = await until(`${kind} Accepted`, () => routeAccepted(kubectl, kind));
    assert.equal(accepted, 'True', kind);
  }
  // the Gateway's status is written apart from the routes': wait for the counts, then compare
  const want = JSON.stringify([
    ['db', 1, ['TCPRoute']],
    ['apps', 1, ['TLSRoute']],
    ['term', 1, ['TLSRoute']],
  ]);
  let seen = '';
  await until('the listeners to count their routes', async () => {
    const text = await kubectl(['get', 'gateway', 'edge', '-o', 'jsonpath={.status.listeners}']);
    const listeners = JSON.parse(text || '[]') as {
      name: string;
      attachedRoutes: number;
      supportedKinds: { kind: string }[];
    }[];
    seen = JSON.stringify(
      listeners.map((l) => [l.name, l.attachedRoutes, l.supportedKinds.map((k) => k.kind)]),
    );
    return seen === want ? true : undefined;
  }).catch(() => undefined);
  assert.equal(seen, want);
});
