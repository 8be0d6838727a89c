// A stand-in for the Kubernetes API server, just enough for `gwctl trace gateway/...`: the pods list
// (filtered by namespace and one `key=value` label selector) and pod port-forward over WebSocket in the
// `v4.channel.k8s.io` framing, where each pod port is a port on 127.0.0.1 (a real gw, in the tests).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';

export interface FakePod {
  name: string;
  namespace: string;
  labels?: Record<string, string>;
  phase?: string;
  ready?: boolean;
  /** ISO time; default: the epoch. */
  created?: string;
  terminating?: boolean;
}

export interface FakeKubeOptions {
  pods?: FakePod[];
  /** Answer every pods list with this status and a Status body instead. */
  listStatus?: number;
  /** How the port-forward upgrade is answered: accepted, refused with a status, or the socket dropped. */
  upgrade?: 'accept' | 'hang-up' | number;
  /** Pod port → local port it reaches; a port not here fails on the error channel like the kubelet. */
  podPorts?: Record<number, number>;
}

export interface FakeKubeApi {
  url: string;
  /** `METHOD path?query` of every request, upgrades included, in order. */
  requests: string[];
  /** The Authorization header of every request. */
  auth: string[];
  /** Writes a kubeconfig for this server (token `t0ken`); returns its path. */
  kubeconfig(opts?: { namespace?: string; extraContext?: { name: string; namespace: string } }): string;
  close(): Promise<void>;
}

const podJson = (p: FakePod) => ({
  metadata: {
    name: p.name,
    namespace: p.namespace,
    labels: p.labels ?? {},
    creationTimestamp: p.created ?? '1970-01-01T00:00:00Z',
    ...(p.terminating ? { deletionTimestamp: '2030-01-01T00:00:00Z' } : {}),
  },
  status: {
    phase: p.phase ?? 'Running',
    conditions: [{ type: 'Ready', status: p.ready === false ? 'False' : 'True' }],
  },
});

function matches(p: FakePod, selector: string): boolean {
  return selector.split(',').every((term) => {
    const [k, v] = term.split('=');
    return k !== undefined && p.labels?.[k] === v;
  });
}

export async function startFakeKubeApi(o: FakeKubeOptions = {}): Promise<FakeKubeApi> {
  const requests: string[] = [];
  const auth: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    auth.push(req.headers.authorization ?? '');
    const url = new URL(req.url ?? '/', 'http://x');
    const list = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' || !list) return json(404, { kind: 'Status', message: 'not found', code: 404 });
    if (o.listStatus !== undefined) {
      return json(o.listStatus, {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: `pods is forbidden: User "test" cannot list resource "pods" in API group "" in the namespace "${list[1]}"`,
        reason: 'Forbidden',
        code: o.listStatus,
      });
    }
    const selector = url.searchParams.get('labelSelector') ?? '';
    const items = (o.pods ?? []).filter((p) => p.namespace === list[1] && matches(p, selector)).map(podJson);
    json(200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
  });

  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => (offered.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false),
  });
  server.on('upgrade', (req, socket, head) => {
    requests.push(`${req.method} ${req.url}`);
    auth.push(req.headers.authorization ?? '');
    const url = new URL(req.url ?? '/', 'http://x');
    const pf = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/portforward$/.exec(url.pathname);
    const upgrade = o.upgrade ?? 'accept';
    if (upgrade === 'hang-up' || !pf) {
      socket.destroy();
      return;
    }
    if (typeof upgrade === 'number') {
      socket.end(`HTTP/1.1 ${upgrade} Refused\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
      return;
    }
    const podPort = Number(url.searchParams.get('ports'));
    wss.handleUpgrade(req, socket, head, (ws) => {
      // The first frame of each channel (data 0, error 1) is the port, little-endian.
      const prefix = (channel: number) => Buffer.from([channel, podPort & 0xff, podPort >> 8]);
      ws.send(prefix(0));
      ws.send(prefix(1));
      const local = o.podPorts?.[podPort];
      const pod = `${pf[1]}/${pf[2]}`;
      const target = net.connect(local ?? 1, '127.0.0.1');
      target.on('data', (chunk: Buffer) => ws.send(Buffer.concat([Buffer.from([0]), chunk])));
      target.on('error', (err) => {
        ws.send(
          Buffer.concat([
            Buffer.from([1]),
            Buffer.from(`error forwarding port ${podPort} to pod ${pod}: ${err.message}`),
          ]),
        );
        ws.close();
      });
      target.on('close', () => ws.close());
      ws.on('message', (data: Buffer) => {
        if (data[0] === 0) target.write(data.subarray(1));
      });
      ws.on('close', () => target.destroy());
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const dir = mkdtempSync(join(tmpdir(), 'gwctl-kube-'));
  let files = 0;
  return {
    url,
    requests,
    auth,
    kubeconfig(k = {}) {
      const file = join(dir, `kubeconfig-${files++}.yaml`);
      const ctx = (name: string, namespace: string | undefined) =>
        `- name: ${name}\n  context:\n    cluster: fake\n    user: tester\n${namespace ? `    namespace: ${namespace}\n` : ''}`;
      writeFileSync(
        file,
        `apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: ${url}
    insecure-skip-tls-verify: true
users:
- name: tester
  user:
    token: t0ken
contexts:
${ctx('main', k.namespace)}${k.extraContext ? ctx(k.extraContext.name, k.extraContext.namespace) : ''}current-context: main
`,
      );
      return file;
    },
    async close() {
      for (const ws of wss.clients) ws.terminate();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
