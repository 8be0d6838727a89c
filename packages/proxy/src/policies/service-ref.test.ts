// A policy's gRPC service given as a Service of the file's `services` (agentgateway's
// `service: {name: <namespace>/<hostname>, port}`): extAuthz, extProc and the endpoint picker call
// the Service's workloads, round robin; remoteRateLimit's is in remote-rate-limit.test.ts, the
// picker's in upstream/inference-routing.test.ts.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '@gw/api';
import { CLOSED_PORT, startUpstream, type TestServer } from '@gw/testkit';
import { type AuthzServer, type CheckAnswer, startAuthzServer } from '@gw/testkit/ext-authz-server';
import { type ExtProcServer, setRequestHeader, startExtProcServer } from '@gw/testkit/ext-proc-server';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';

const PERMISSION_DENIED = 7;

/** An authorization service that allows, saying which one it is, unless the path asks for a denial. */
const authzNamed = (name: string) =>
  startAuthzServer((req): CheckAnswer => {
    if (req.attributes?.request?.http?.path.includes('deny'))
      return {
        status: { code: PERMISSION_DENIED },
        httpResponse: {
          case: 'deniedResponse',
          value: { status: { code: 403 }, body: `denied by ${name}\n` },
        },
      };
    return {
      status: { code: 0 },
      httpResponse: {
        case: 'okResponse',
        value: { headers: [{ header: { key: 'x-checked-by', value: name } }] },
      },
    };
  });

/** A processor that adds a header naming it to each request. */
const processorNamed = (name: string) =>
  startExtProcServer((req) => setRequestHeader(req, 'x-processed-by', name));

let authz: AuthzServer[];
let procs: ExtProcServer[];
/** HTTP authorization services, slow enough that checks at once need connections of their own. */
let httpAuthz: Server[];
/** The Host of each HTTP check, by the service that got it. */
const httpHosts: string[][] = [[], []];
let up: TestServer;
let proxy: TestProxy;
before(async () => {
  authz = await Promise.all([authzNamed('a'), authzNamed('b')]);
  procs = await Promise.all([processorNamed('a'), processorNamed('b')]);
  httpAuthz = [0, 1].map((i) =>
    createServer((req, res) => {
      httpHosts[i]?.push(req.headers.host ?? '');
      void sleep(100).then(() => res.writeHead(req.url?.includes('deny') ? 403 : 200).end());
    }),
  );
  for (const s of httpAuthz) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const httpPort = (i: number) => ((httpAuthz[i] as Server).address() as AddressInfo).port;
  up = await startUpstream();
  const workload = (name: string, service: string, port: number, target: number) =>
    `- {name: ${name}, namespace: auth, workloadIps: [127.0.0.1], services: {"auth/${service}": {"${port}": ${target}}}}`;
  proxy = await startProxy(`services:
- {name: authz, namespace: auth, hostname: authz.auth.svc.cluster.local, vips: [], ports: {"9000": 0}}
- {name: proc, namespace: auth, hostname: proc, vips: [], ports: {"9001": 0}}
- {name: authz-http, namespace: auth, hostname: authz-http, vips: [], ports: {"9100": 0}}
- {name: authz-half, namespace: auth, hostname: authz-half, vips: [], ports: {"9100": 0}}
- {name: authz-grpc-half, namespace: auth, hostname: authz-grpc-half, vips: [], ports: {"9000": 0}}
- {name: authz-weighted, namespace: auth, hostname: authz-weighted, vips: [], ports: {"9000": 0}}
workloads:
- {name: weighted-a, namespace: auth, workloadIps: [127.0.0.1], capacity: 3, services: {"auth/authz-weighted": {"9000": ${authz[0]!.port}}}}
- {name: weighted-b, namespace: auth, workloadIps: [127.0.0.1], services: {"auth/authz-weighted": {"9000": ${authz[1]!.port}}}}
${workload('grpc-half-stopped', 'authz-grpc-half', 9000, CLOSED_PORT)}
${workload('grpc-half-up', 'authz-grpc-half', 9000, authz[1]!.port)}
${workload('half-stopped', 'authz-half', 9100, CLOSED_PORT)}
${workload('half-up', 'authz-half', 9100, httpPort(1))}
${workload('http-a', 'authz-http', 9100, httpPort(0))}
${workload('http-b', 'authz-http', 9100, httpPort(1))}
${workload('authz-a', 'authz.auth.svc.cluster.local', 9000, authz[0]!.port)}
${workload('authz-b', 'authz.auth.svc.cluster.local', 9000, authz[1]!.port)}
${workload('proc-a', 'proc', 9001, procs[0]!.port)}
${workload('proc-b', 'proc', 9001, procs[1]!.port)}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - matches: [{path: {pathPrefix: /authz}}]
      policies:
        extAuthz: {service: {name: auth/authz.auth.svc.cluster.local, port: 9000}, timeout: 5s}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - matches: [{path: {pathPrefix: /http-authz}}]
      policies:
        extAuthz: {service: {name: auth/authz-http, port: 9100}, protocol: {http: {}}, timeout: 5s}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - matches: [{path: {pathPrefix: /weighted-authz}}]
      policies:
        extAuthz: {service: {name: auth/authz-weighted, port: 9000}, timeout: 5s}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - matches: [{path: {pathPrefix: /half-grpc-authz}}]
      policies:
        extAuthz: {service: {name: auth/authz-grpc-half, port: 9000}, timeout: 5s}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - matches: [{path: {pathPrefix: /half-authz}}]
      policies:
        extAuthz: {service: {name: auth/authz-half, port: 9100}, protocol: {http: {}}, timeout: 5s}
      backends: [{host: "127.0.0.1:${up.port}"}]
    - matches: [{path: {pathPrefix: /proc}}]
      policies:
        extProc:
          service: {name: auth/proc, port: 9001}
          timeout: 5s
          processingOptions: {requestBodyMode: none, responseBodyMode: none, responseHeaderMode: skip}
      backends: [{host: "127.0.0.1:${up.port}"}]
`);
});
after(async () => {
  await proxy?.close();
  await up?.close();
  for (const s of [...(authz ?? []), ...(procs ?? [])]) await s.close();
  for (const s of httpAuthz ?? []) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** The upstream's echo of `path` through the proxy: the status and the request headers it got. */
async function echo(
  path: string,
): Promise<{ status: number; headers: Record<string, string>; text: string }> {
  const r = await request(proxy.url(path));
  const text = await r.body.text();
  return { status: r.statusCode, headers: r.statusCode === 200 ? JSON.parse(text).headers : {}, text };
}

describe('a policy service by Service reference', () => {
  test("extAuthz calls each of the Service's workloads in turn, and their verdicts apply", async () => {
    const by: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await echo(`/authz/${i}`);
      assert.equal(r.status, 200, r.text);
      by.push(r.headers['x-checked-by'] ?? '');
    }
    // grpc-js's round robin starts on whichever connected first, then alternates
    assert.ok(by.includes('a') && by.includes('b'), `checks went to ${by.join(',')}`);
    assert.equal(authz[0]!.seen.length + authz[1]!.seen.length, 12, 'one check per request');
    // the calls name the Service, not the address dialled
    assert.deepEqual(
      [...new Set([...authz[0]!.authorities, ...authz[1]!.authorities])],
      ['authz.auth.svc.cluster.local:9000'],
    );
    const denied = await request(proxy.url('/authz/deny'));
    assert.equal(denied.statusCode, 403);
    assert.match(await denied.body.text(), /^denied by [ab]\n$/);
  });

  test("an HTTP extAuthz is called by the Service's name, its connections at each workload in turn", async () => {
    const statuses = await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const r = await request(proxy.url(`/http-authz/${i}`));
        await r.body.text();
        return r.statusCode;
      }),
    );
    assert.deepEqual(statuses, [200, 200, 200, 200]);
    const [a, b] = httpHosts as [string[], string[]];
    assert.equal(a.length + b.length, 4, 'one check per request');
    assert.ok(a.length > 0 && b.length > 0, `one service got every check: ${a.length}, ${b.length}`);
    assert.deepEqual([...new Set([...a, ...b])], ['authz-http:9100']);
    const denied = await request(proxy.url('/http-authz/deny'));
    await denied.body.text();
    assert.equal(denied.statusCode, 403);
  });

  test('a stopped workload of an HTTP extAuthz Service fails no check: its connections go to the next', async () => {
    const b = httpHosts[1] as string[];
    const before = b.length;
    const statuses = await Promise.all(
      [0, 1, 2, 3, 4, 5].map(async (i) => {
        const r = await request(proxy.url(`/half-authz/${i}`));
        await r.body.text();
        return r.statusCode;
      }),
    );
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200]);
    assert.equal(b.length - before, 6, 'the workload that runs got every check');
    assert.deepEqual([...new Set(b.slice(before))], ['authz-half:9100']);
  });

  test('a stopped workload of a gRPC extAuthz Service fails no check: the channel uses the one that answers', async () => {
    const before = authz[1]!.seen.length;
    for (let i = 0; i < 6; i++) {
      const r = await echo(`/half-grpc-authz/${i}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers['x-checked-by'], 'b');
    }
    assert.equal(authz[1]!.seen.length - before, 6);
  });

  test("a gRPC extAuthz Service's calls go to its workloads by capacity (3:1)", async () => {
    // until the channel has both workloads ready (it starts on whichever connects first)
    const by = async () => (await echo('/weighted-authz/x')).headers['x-checked-by'];
    const seen = new Set<string | undefined>();
    for (let i = 0; i < 100 && seen.size < 2; i++) seen.add(await by());
    assert.equal(seen.size, 2, 'both workloads answered');
    const counts: Record<string, number> = {};
    for (let i = 0; i < 16; i++) {
      const who = (await by()) ?? 'none';
      counts[who] = (counts[who] ?? 0) + 1;
    }
    assert.deepEqual(counts, { a: 12, b: 4 });
  });

  test("extProc streams go to each of the Service's workloads in turn", async () => {
    const by: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await echo(`/proc/${i}`);
      assert.equal(r.status, 200, r.text);
      by.push(r.headers['x-processed-by'] ?? '');
    }
    assert.ok(by.includes('a') && by.includes('b'), `streams went to ${by.join(',')}`);
    assert.equal(procs[0]!.streams.length + procs[1]!.streams.length, 12, 'one stream per request');
  });
});

test('a reload that changes the workloads moves the calls to the new ones', async () => {
  const third = await authzNamed('c');
  const fourth = await authzNamed('d');
  const config = (ports: number[]) => `services:
- {name: authz, namespace: auth, hostname: authz.auth, vips: [], ports: {"9000": 0}}
workloads:
${ports.map((port, i) => `- {name: w${i}, namespace: auth, workloadIps: [127.0.0.1], services: {"auth/authz.auth": {"9000": ${port}}}}`).join('\n')}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {extAuthz: {service: {name: auth/authz.auth, port: 9000}, timeout: 5s}}
      backends: [{host: "127.0.0.1:${up.port}"}]
`;
  const own = await startProxy(config([authz[0]!.port]));
  try {
    const checkedBy = async () =>
      (await request(own.url('/r'))).body.json() as Promise<{ headers: Record<string, string> }>;
    assert.equal((await checkedBy()).headers['x-checked-by'], 'a');
    await own.reload(config([third.port, fourth.port]));
    const by = new Set<string>();
    for (let i = 0; i < 6; i++) by.add((await checkedBy()).headers['x-checked-by'] ?? '');
    assert.deepEqual([...by].sort(), ['c', 'd']);
  } finally {
    await own.close();
    await third.close();
    await fourth.close();
  }
});

describe('config', () => {
  const services = `services:
- {name: authz, namespace: auth, hostname: authz.auth, vips: [], ports: {"9000": 0}}
- {name: one, namespace: auth, hostname: one, vips: [], ports: {"9000": 9100}}
- {name: six, namespace: auth, hostname: six, vips: [], ports: {"9000": 0}}
- {name: mixed, namespace: auth, hostname: mixed, vips: [], ports: {"9000": 0}}
- {name: nobody, namespace: auth, hostname: nobody, vips: [], ports: {"9000": 9000}}
- {name: big, namespace: auth, hostname: big, vips: [], ports: {"9000": 9000}}
workloads:
- {namespace: auth, workloadIps: [10.0.1.1], capacity: 3, services: {"auth/big": {}}}
- {namespace: auth, workloadIps: [10.0.1.2], services: {"auth/big": {}}}
- {namespace: auth, workloadIps: [10.0.0.1], services: {"auth/authz.auth": {"9000": 9001}, "auth/mixed": {"9000": 9001}}}
- {namespace: auth, workloadIps: [10.0.0.2], services: {"auth/authz.auth": {"9000": 9002}}}
- {namespace: auth, workloadIps: [10.0.0.3], services: {"auth/one": {}}}
- {namespace: auth, workloadIps: ["fd00::1"], services: {"auth/six": {"9000": 9001}, "auth/mixed": {"9000": 9001}}}
- {namespace: auth, workloadIps: ["fd00::2"], services: {"auth/six": {"9000": 9002}}}
`;
  const withPolicy = (policy: string) => `${services}binds:
- port: 8080
  listeners:
  - routes:
    - policies: {${policy}}
      backends: [{host: "127.0.0.1:9"}]
`;
  const policies = (policy: string) =>
    loadConfigText('gw.yaml', withPolicy(policy), process.cwd()).ir.binds[0]?.listeners[0]?.routes[0]
      ?.policies;
  const issues = (policy: string) => {
    try {
      loadConfigText('gw.yaml', withPolicy(policy), process.cwd());
    } catch (err) {
      assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
      return err.issues.map((i) => `${i.path}: ${i.message}`);
    }
    assert.fail('config was accepted');
  };
  const P = 'binds[0].listeners[0].routes[0].policies';
  /** The loaded extProc or remoteRateLimit call: the host it dials and its TLS. */
  const called = (key: 'extProc' | 'remoteRateLimit', policy: string) =>
    policies(`${key}: ${policy}`)?.[key] as
      | { host?: string; policies?: { backendTLS?: { hostname?: string } } }
      | undefined;

  test("the channel's address: one endpoint as host:port, several as grpc-js's address list", () => {
    assert.deepEqual(policies('extAuthz: {service: {name: auth/authz.auth, port: 9000}}')?.extAuthz, {
      grpc: { host: 'ipv4://authz.auth:9000/10.0.0.1:9001,10.0.0.2:9002' },
    });
    // over HTTP: called by the Service's name, its workloads dialled in turn
    assert.deepEqual(
      policies('extAuthz: {service: {name: auth/authz.auth, port: 9000}, protocol: {http: {}}}')?.extAuthz,
      {
        http: {
          host: 'authz.auth:9000',
          endpoints: [
            { host: '10.0.0.1', port: 9001 },
            { host: '10.0.0.2', port: 9002 },
          ],
        },
      },
    );
    // a workload with no mapping of its own is called at the Service's target port
    assert.equal(
      called('extProc', '{service: {name: auth/one, port: 9000}}')?.host,
      'ipv4://one:9000/10.0.0.3:9100',
    );
    assert.equal(
      called(
        'remoteRateLimit',
        `{service: {name: auth/six, port: 9000}, domain: d, descriptors: [{entries: [{key: k, value: "'v'"}]}]}`,
      )?.host,
      'ipv6://six:9000/[fd00::1]:9001,[fd00::2]:9002',
    );
  });

  test("a workload's capacity is its share of the calls: listed that often for gRPC, weighed for HTTP", () => {
    assert.deepEqual(policies('extAuthz: {service: {name: auth/big, port: 9000}}')?.extAuthz, {
      grpc: { host: 'ipv4://big:9000/10.0.1.1:9000,10.0.1.1:9000,10.0.1.1:9000,10.0.1.2:9000' },
    });
    assert.deepEqual(
      policies('extAuthz: {service: {name: auth/big, port: 9000}, protocol: {http: {}}}')?.extAuthz,
      {
        http: {
          host: 'big:9000',
          endpoints: [
            { host: '10.0.1.1', port: 9000, weight: 3 },
            { host: '10.0.1.2', port: 9000 },
          ],
        },
      },
    );
  });

  test('TLS to the Service sends and verifies its hostname, unless backendTLS names another', () => {
    const tls = (extra: string) =>
      called(
        'extProc',
        `{service: {name: auth/authz.auth, port: 9000}, policies: {backendTLS: {insecureHost: true${extra}}}}`,
      )?.policies?.backendTLS?.hostname;
    assert.equal(tls(''), 'authz.auth');
    assert.equal(tls(', hostname: authz.example'), 'authz.example');
  });

  test('a Service with no workload loads with a warning: its calls go to its name, by DNS', () => {
    const loaded = loadConfigText(
      'gw.yaml',
      withPolicy('extAuthz: {service: {name: auth/nobody, port: 9000}}'),
      process.cwd(),
    );
    assert.deepEqual(loaded.ir.binds[0]?.listeners[0]?.routes[0]?.policies?.extAuthz, {
      grpc: { host: 'nobody:9000' },
    });
    assert.deepEqual(
      loaded.warnings.map((w) => `${w.path}: ${w.message}`),
      [
        `${P}.extAuthz.service: service auth/nobody has no workload for the extAuthz service to call (a healthy one in workloads that names it, with a port for 9000): its calls go to nobody:9000, resolved by DNS`,
      ],
    );
  });

  test('what cannot be called is an error at the field', () => {
    const extAuthz = (service: string, extra = '') => issues(`extAuthz: {service: ${service}${extra}}`);
    assert.deepEqual(extAuthz('{name: auth/nope, port: 9000}'), [
      `${P}.extAuthz.service.name: no service "auth/nope" in services (services: auth/authz.auth, auth/one, auth/six, auth/mixed, auth/nobody, auth/big)`,
    ]);
    assert.deepEqual(extAuthz('{name: auth/authz.auth, port: 80}'), [
      `${P}.extAuthz.service.port: service auth/authz.auth has no port 80 (ports: 9000)`,
    ]);
    assert.deepEqual(issues('extProc: {service: {name: auth/mixed, port: 9000}}'), [
      `${P}.extProc.service: service auth/mixed has IPv4 and IPv6 workload addresses, which one gRPC channel to the extProc service cannot balance over`,
    ]);
    assert.deepEqual(extAuthz('{name: auth/one, port: 9000}', ', host: "a:1"'), [
      `${P}.extAuthz.service: set one of host, backend and service, not host and service`,
    ]);
    assert.deepEqual(issues('extProc: {service: {name: auth/one, port: 9000}, backend: b}'), [
      `${P}.extProc.service: set one of host, backend and service, not backend and service`,
    ]);
  });
});
