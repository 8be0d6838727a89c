// `gwctl trace gateway/<name>`: cluster mode. Finding a proxy pod through the Kubernetes API and
// port-forwarding to it is not built yet; the command checks its arguments and says what to do instead.
import { GwctlError, usageError } from './errors.ts';

export interface GatewayTraceOptions {
  target: string | undefined;
  namespace: string | undefined;
}

export function runGatewayTrace(o: GatewayTraceOptions): Promise<number> {
  const m = /^(?:gateway|gateways|gtw)\/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/.exec(o.target ?? '');
  if (!m) throw usageError(`expected gateway/<name>, got ${o.target ?? 'nothing'}`);
  const ns = o.namespace ?? 'default';
  throw new GwctlError(
    'GWCTL_ERR_NOT_AVAILABLE',
    `gwctl trace gateway/${m[1]}: finding the proxy pod through the Kubernetes API is not available in this build.\n` +
      `Instead: kubectl -n ${ns} port-forward pod/<proxy pod of ${m[1]}> 15000 and run 'gwctl proxy trace -p 15000 ...'`,
  );
}
