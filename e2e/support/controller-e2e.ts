// What the controller end-to-end suites share, on the test API server (e2e/controller.test.ts) and on
// kind (e2e/controller.kind.test.ts): polling, one HTTP GET through the proxy, the manifests a user
// applies, and reading conditions back.
import assert from 'node:assert/strict';
import http from 'node:http';
import { sleep } from './gw-process.ts';

/** Polls `fn` until it returns something other than undefined; on timeout says what it waited for, the last error and `context()`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  opts: { timeoutMs?: number; intervalMs?: number; context?: () => string | Promise<string> } = {},
): Promise<T> {
  const end = Date.now() + (opts.timeoutMs ?? 20_000);
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await sleep(opts.intervalMs ?? 50);
  }
  const context = opts.context ? await opts.context() : '';
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}${context}`);
}

/**
 * Waits until GwPolicy `namespace/name` says Attached for its first ancestor (with `message`, when
 * given). The controller writes status after it pushes the config, so traffic can show a policy
 * before its status does.
 */
export async function untilPolicyAttached(
  wait: <T>(what: string, fn: () => Promise<T | undefined>) => Promise<T>,
  kubectl: (args: string[]) => Promise<string>,
  name: string,
  opts: { namespace?: string; message?: string } = {},
): Promise<void> {
  await wait(`GwPolicy ${name} Attached`, async () => {
    const out = await kubectl(['-n', opts.namespace ?? 'default', 'get', 'gwpolicy', name, '-o', 'json']);
    const conditions = (JSON.parse(out).status?.ancestors?.[0]?.conditions ?? []) as {
      type: string;
      reason: string;
      message: string;
    }[];
    const attached = conditions.find((c) => c.type === 'Attached');
    if (attached?.reason !== 'Attached' || (opts.message !== undefined && attached.message !== opts.message))
      throw new Error(`Attached is ${JSON.stringify(attached)}`);
    return true;
  });
}

export interface Reply {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** One GET to 127.0.0.1:`port` on a fresh connection. */
export function httpGet(port: number, path = '/', headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false, headers }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () =>
        res({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: r.headers }),
      );
    });
    req.on('error', rej);
    req.end();
  });
}

/** The status of condition `type` in a list of conditions. */
export function conditionStatus(list: { type: string; status: string }[] | undefined, type: string) {
  return list?.find((c) => c.type === type)?.status;
}

/** Gateway `edge` of class gw with one HTTP listener. */
export const gatewayYaml = (namespace: string, port: number) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: edge, namespace: ${namespace} }
spec:
  gatewayClassName: gw
  listeners:
    - { name: http, protocol: HTTP, port: ${port} }
`;

/** HTTPRoute `web` on Gateway `edge`, all traffic to one backendRef (given as a YAML flow mapping). */
export const routeYaml = (namespace: string, backendRef: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: web, namespace: ${namespace} }
spec:
  parentRefs: [{ name: edge }]
  rules:
    - backendRefs: [${backendRef}]
`;

/** GwPolicy `maintenance` on route `web`: every request answered with `status`. */
export const maintenancePolicyYaml = (namespace: string, status: number) => `
apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: maintenance, namespace: ${namespace} }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: web }]
  traffic:
    directResponse: { status: ${status}, body: maintenance }
`;

/** GwPolicy `headers` on route `web`: sets `x-policy: applied` on responses. */
export const headersPolicyYaml = (namespace: string) => `
apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: headers, namespace: ${namespace} }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: web }]
  traffic:
    headerModifiers:
      response:
        set: [{ name: x-policy, value: applied }]
`;

/** GwPolicy `broken` on route `web`: valid to the API server, a CEL syntax error the controller reports. */
export const brokenPolicyYaml = (namespace: string) => `
apiVersion: gw.dev/v1alpha1
kind: GwPolicy
metadata: { name: broken, namespace: ${namespace} }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: web }]
  traffic:
    authorization:
      policy: { matchExpressions: ["request.path.startsWith("] }
`;

// PEM framing around bytes that are no certificate or key: the controller sees PEM, the proxy cannot
// load the pair and rejects the configuration (a NACK).
const NOT_A_CERT = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
const NOT_A_KEY = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';

/** Gateway `edge` with a second, HTTPS listener on `httpsPort` whose Secret the proxy cannot load. */
export const gatewayWithBrokenTlsYaml = (namespace: string, port: number, httpsPort: number) => `
apiVersion: v1
kind: Secret
metadata: { name: broken-tls, namespace: ${namespace} }
type: Opaque
data:
  tls.crt: ${Buffer.from(NOT_A_CERT).toString('base64')}
  tls.key: ${Buffer.from(NOT_A_KEY).toString('base64')}
---${gatewayYaml(namespace, port)}    - name: https
      protocol: HTTPS
      port: ${httpsPort}
      tls: { certificateRefs: [{ name: broken-tls }] }
`;

/** "median X ms, max Y ms (n=N, …)" of apply-to-effect times. */
export function applyToEffect(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  return `kubectl apply → effect at the proxy: median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, max ${sorted[sorted.length - 1]?.toFixed(0)} ms (n=${times.length}, includes kubectl's own run time)`;
}

/** What the shared steps below need from a suite: kubectl, the namespace, polling and a GET through the proxy. */
export interface Steps {
  ns: string;
  kubectl(args: string[], input?: string): Promise<string>;
  until<T>(what: string, fn: () => Promise<T | undefined>): Promise<T>;
  get(path?: string): Promise<Reply>;
}

export async function expectGatewayClassAccepted(s: Steps): Promise<void> {
  const status = await s.until('GatewayClass gw Accepted', async () => {
    const out = await s.kubectl([
      'get',
      'gatewayclass',
      'gw',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Accepted")].status}',
    ]);
    return out === 'True' ? out : undefined;
  });
  assert.equal(status, 'True');
  assert.equal(
    await s.kubectl(['get', 'gatewayclass', 'gw', '-o', 'jsonpath={.spec.controllerName}']),
    'gw.dev/gw',
  );
}

/** The Gateway `edge` condition `type`, once `ok` accepts it. */
async function gatewayCondition(
  s: Steps,
  type: string,
  ok: (c: { status: string; reason: string; message: string }) => boolean,
) {
  return s.until(`Gateway edge ${type}`, async () => {
    const st = JSON.parse(await s.kubectl(['-n', s.ns, 'get', 'gateway', 'edge', '-o', 'json'])).status;
    const c = (
      st?.conditions as { type: string; status: string; reason: string; message: string }[] | undefined
    )?.find((x) => x.type === type);
    return c && ok(c) ? c : undefined;
  });
}

/**
 * Gateway `edge` Accepted, and Programmed once its proxy acknowledged the configuration, with one
 * attached route; HTTPRoute `web` Accepted with refs resolved.
 */
export async function expectGatewayAndRouteStatus(s: Steps): Promise<void> {
  const programmed = await gatewayCondition(s, 'Programmed', (c) => c.reason === 'Programmed');
  assert.equal(programmed.status, 'True');
  assert.match(programmed.message, /^acknowledged by the connected proxy/);
  const gwStatus = JSON.parse(await s.kubectl(['-n', s.ns, 'get', 'gateway', 'edge', '-o', 'json'])).status;
  assert.equal(conditionStatus(gwStatus.conditions, 'Accepted'), 'True');
  assert.equal(gwStatus.listeners[0].attachedRoutes, 1);
  const routeStatus = JSON.parse(
    await s.kubectl(['-n', s.ns, 'get', 'httproute', 'web', '-o', 'json']),
  ).status;
  assert.equal(routeStatus.parents[0].controllerName, 'gw.dev/gw');
  assert.equal(conditionStatus(routeStatus.parents[0].conditions, 'Accepted'), 'True');
  assert.equal(conditionStatus(routeStatus.parents[0].conditions, 'ResolvedRefs'), 'True');
}

/** Applies a direct-response GwPolicy three times and deletes it, timing each until traffic shows it. */
export async function measurePolicyApplyToEffect(s: Steps): Promise<string> {
  const times: number[] = [];
  for (const status of [503, 418, 503]) {
    const start = performance.now();
    await s.kubectl(['apply', '--server-side', '-f', '-'], maintenancePolicyYaml(s.ns, status));
    await s.until(`status ${status} through the proxy`, async () =>
      (await s.get('/')).status === status ? true : undefined,
    );
    times.push(performance.now() - start);
  }
  await s.kubectl(['-n', s.ns, 'delete', 'gwpolicy', 'maintenance']);
  const start = performance.now();
  await s.until('the policy removed', async () => ((await s.get('/')).status === 200 ? true : undefined));
  times.push(performance.now() - start);
  return applyToEffect(times);
}

/** A header policy reaches traffic, and its status (and kubectl's printer columns) say Accepted and Attached. */
export async function expectPolicyAcceptedAttached(s: Steps): Promise<void> {
  await s.kubectl(['apply', '--server-side', '-f', '-'], headersPolicyYaml(s.ns));
  await s.until('the header through the proxy', async () =>
    (await s.get('/')).headers['x-policy'] === 'applied' ? true : undefined,
  );
  const out = await s.until('the policy status', async () => {
    const st = JSON.parse(await s.kubectl(['-n', s.ns, 'get', 'gwpolicy', 'headers', '-o', 'json'])).status;
    return st?.ancestors?.[0] ? st : undefined;
  });
  const conds = out.ancestors[0].conditions as { type: string; status: string }[];
  assert.equal(conditionStatus(conds, 'Accepted'), 'True');
  assert.equal(conditionStatus(conds, 'Attached'), 'True');
  assert.match(await s.kubectl(['-n', s.ns, 'get', 'gwpol', 'headers']), /headers\s+True\s+True/);
}

/**
 * A GwPolicy with a CEL error: its status says Invalid and names the field, the proxy is not sent it
 * (no NACK), and the route it targets denies every request until the policy is fixed or deleted.
 */
export async function expectInvalidPolicyStatus(s: Steps): Promise<void> {
  await s.kubectl(['apply', '--server-side', '-f', '-'], brokenPolicyYaml(s.ns));
  const conds = await s.until('the broken policy status', async () => {
    const st = JSON.parse(await s.kubectl(['-n', s.ns, 'get', 'gwpolicy', 'broken', '-o', 'json'])).status;
    return st?.ancestors?.[0]?.conditions as {
      type: string;
      status: string;
      reason: string;
      message: string;
    }[];
  });
  const attached = conds.find((c) => c.type === 'Attached');
  assert.equal(conditionStatus(conds, 'Accepted'), 'False');
  assert.equal(attached?.status, 'False');
  assert.equal(attached?.reason, 'Invalid');
  assert.match(
    attached?.message ?? '',
    /spec\.traffic\.authorization\.policy\.matchExpressions\[0\]: invalid CEL expression/,
  );
  await s.until('the route denies', async () => ((await s.get('/')).status === 403 ? true : undefined));
  const programmed = await gatewayCondition(s, 'Programmed', (c) => c.reason === 'Programmed');
  assert.equal(programmed.status, 'True', 'the proxy took the rest of the configuration');
  await s.kubectl(['-n', s.ns, 'delete', 'gwpolicy', 'broken']);
  await s.until('the route serves again', async () => ((await s.get('/')).status === 200 ? true : undefined));
}

/**
 * Applies a configuration the proxy must refuse (an HTTPS listener whose Secret does not load) and waits
 * for the Warning Event and for Programmed False with the proxy's words on Gateway `edge`; `restore`
 * puts the Gateway back, after which Programmed is True again.
 */
export async function expectConfigRejected(
  s: Steps,
  port: number,
  httpsPort: number,
): Promise<{ restore(): Promise<void> }> {
  await s.kubectl(['apply', '--server-side', '-f', '-'], gatewayWithBrokenTlsYaml(s.ns, port, httpsPort));
  const events = await s.until('a Warning Event on the Gateway', async () => {
    const out = await s.kubectl([
      'get',
      'events',
      '-n',
      s.ns,
      '--field-selector',
      'involvedObject.kind=Gateway,involvedObject.name=edge,type=Warning',
      '-o',
      'json',
    ]);
    const items = JSON.parse(out).items as { reason: string; message: string }[];
    return items.length > 0 ? items : undefined;
  });
  assert.equal(events[0]?.reason, 'ConfigRejected');
  assert.match(events[0]?.message ?? '', /rejected its configuration/);
  const programmed = await gatewayCondition(s, 'Programmed', (c) => c.reason === 'ConfigRejected');
  assert.equal(programmed.status, 'False');
  assert.match(programmed.message, /rejected the configuration: .*certificate and key do not load/);
  return {
    async restore() {
      await s.kubectl(['apply', '--server-side', '-f', '-'], gatewayYaml(s.ns, port));
      await gatewayCondition(s, 'Programmed', (c) => c.reason === 'Programmed' && c.status === 'True');
      await s.kubectl(['-n', s.ns, 'delete', 'secret', 'broken-tls']);
    },
  };
}

/**
 * The status ('True', 'False') of the Accepted condition of a route's first parent, `resource` as
 * kubectl names it (httproute/web, tcproute/db); undefined while it has none.
 */
export async function routeAccepted(
  kubectl: (args: string[]) => Promise<string>,
  resource: string,
): Promise<string | undefined> {
  const out = await kubectl([
    'get',
    resource,
    '-o',
    'jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].status}',
  ]);
  return out || undefined;
}
