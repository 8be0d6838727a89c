// What the controller end-to-end suites share, on the test API server (e2e/controller.test.ts) and on
// kind (e2e/controller.kind.test.ts): polling, one HTTP GET through the proxy, the manifests a user
// applies, and reading conditions back.
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

export interface Reply {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

/** One GET to 127.0.0.1:`port` on a fresh connection. */
export function httpGet(port: number, path = '/'): Promise<Reply> {
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false }, (r) => {
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

/** GwPolicy `broken` on route `web`: valid to the API server, a CEL syntax error to the proxy (a NACK). */
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

/** "median X ms, max Y ms (n=N, …)" of apply-to-effect times. */
export function applyToEffect(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  return `kubectl apply → effect at the proxy: median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, max ${sorted[sorted.length - 1]?.toFixed(0)} ms (n=${times.length}, includes kubectl's own run time)`;
}
