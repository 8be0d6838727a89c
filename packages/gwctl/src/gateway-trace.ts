// `gwctl trace gateway/<name>`: cluster mode of the trace tool. Finds a ready proxy pod of the Gateway,
// port-forwards to its admin port (and, to inject a request, its listener port), then runs the same
// trace as `gwctl proxy trace` against those local ports.
import { usageError } from './errors.ts';
import { findProxyPod } from './gateway-pods.ts';
import { loadCluster } from './kube-client.ts';
import { type LocalForward, openForward } from './port-forward.ts';
import { checkTerminal, parseInject, runTrace } from './trace-command.ts';

/** Where the proxy container serves its admin interface (the spec's default `adminAddr`). */
export const PROXY_ADMIN_PORT = 15000;

export interface GatewayTraceOptions {
  target: string | undefined;
  namespace: string | undefined;
  context: string | undefined;
  raw: boolean;
  /** The proxy listener port in the pod that an injected request goes to. */
  listenerPort: number | undefined;
  expression: string | undefined;
  curl: string[] | undefined;
}

/** The Gateway name in `gateway/<name>` (kubectl's resource/name form; `gateways` and `gtw` too). */
export function parseGatewayTarget(target: string | undefined): string {
  const m = /^(?:gateway|gateways|gtw)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(target ?? '');
  if (!m?.[1] || m[1].length > 253) throw usageError(`expected gateway/<name>, got ${target ?? 'nothing'}`);
  return m[1];
}

export async function runGatewayTrace(o: GatewayTraceOptions): Promise<number> {
  // Everything the command line alone can get wrong is reported before the cluster is asked anything.
  const name = parseGatewayTarget(o.target);
  if (o.curl !== undefined && o.listenerPort === undefined) {
    throw usageError("inject mode needs --port <listener port>: the proxy pod's port the request is sent to");
  }
  const inject = parseInject(o);
  checkTerminal(o.raw);

  const cluster = loadCluster({ context: o.context });
  const namespace = o.namespace ?? cluster.namespace;
  const pod = await findProxyPod(cluster, { namespace, name });

  const forwards: LocalForward[] = [];
  const closeAll = () => {
    for (const f of forwards) f.close();
  };
  // The default SIGINT exit would leave nothing behind either, but say so rather than rely on it.
  const onSigint = () => {
    closeAll();
    process.exit(130);
  };
  process.once('SIGINT', onSigint);
  try {
    const admin = await openForward(cluster, { namespace, pod, port: PROXY_ADMIN_PORT });
    forwards.push(admin);
    const listener =
      inject && o.listenerPort !== undefined
        ? await openForward(cluster, { namespace, pod, port: o.listenerPort })
        : undefined;
    if (listener) forwards.push(listener);
    if (o.raw) {
      process.stderr.write(
        `gwctl: pod ${namespace}/${pod} of Gateway ${namespace}/${name}: admin port ${PROXY_ADMIN_PORT} forwarded to 127.0.0.1:${admin.port}\n`,
      );
    }
    return await runTrace(
      {
        adminPort: admin.port,
        listenerPort: listener?.port,
        ...(listener ? { listenerName: `pod ${namespace}/${pod} port ${o.listenerPort}` } : {}),
        expression: o.expression,
        raw: o.raw,
        curl: o.curl,
        target: `gateway ${namespace}/${name} (pod ${pod})`,
      },
      inject,
    );
  } catch (err) {
    // A broken forward reaches the trace as a reset local connection; report what actually broke.
    throw forwards.map((f) => f.failure()).find((f) => f !== undefined) ?? err;
  } finally {
    process.off('SIGINT', onSigint);
    closeAll();
  }
}
