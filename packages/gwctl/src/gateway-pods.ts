// Which proxy pod `gwctl trace gateway/<name>` talks to: the label that marks a Gateway's proxy pods,
// the lookup through the Kubernetes API, and the pure choice among the pods it returns.
import type { V1Pod } from '@kubernetes/client-node';
import { GwctlError } from './errors.ts';
import { type Cluster, listPods } from './kube-client.ts';

/**
 * The label, valued with the Gateway's name, on every proxy pod provisioned for a Gateway (the name
 * Gateway API implementations share). The controller's deployer must put exactly this label on the
 * pods it creates, or gwctl finds none.
 */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';

export interface GatewayRef {
  namespace: string;
  name: string;
}

export const gatewaySelector = (name: string) => `${GATEWAY_NAME_LABEL}=${name}`;

const isReady = (p: V1Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

const created = (p: V1Pod) => {
  const t = p.metadata?.creationTimestamp;
  return t === undefined ? 0 : new Date(t).getTime() || 0;
};

/** How a pod that was not chosen looks, e.g. `web-1 (Pending)` or `web-2 (Running, not ready)`. */
function summary(p: V1Pod): string {
  const why = [p.status?.phase ?? 'no phase'];
  if (p.metadata?.deletionTimestamp) why.push('terminating');
  else if (p.status?.phase === 'Running' && !isReady(p)) why.push('not ready');
  return `${p.metadata?.name ?? '?'} (${why.join(', ')})`;
}

/**
 * The pod to trace: Running, Ready and not being deleted, the newest first (it has the latest config;
 * names break ties so the choice is stable). Throws when there is none, listing what there is.
 */
export function choosePod(pods: readonly V1Pod[], gw: GatewayRef): string {
  if (pods.length === 0) {
    throw new GwctlError(
      'GWCTL_ERR_NO_PROXY_POD',
      `no proxy pods for Gateway ${gw.namespace}/${gw.name} (label ${gatewaySelector(gw.name)})`,
    );
  }
  const usable = pods
    .filter((p) => p.status?.phase === 'Running' && isReady(p) && !p.metadata?.deletionTimestamp)
    .sort(
      (a, b) => created(b) - created(a) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    );
  const name = usable[0]?.metadata?.name;
  if (name === undefined) {
    throw new GwctlError(
      'GWCTL_ERR_NO_PROXY_POD',
      `no ready proxy pod for Gateway ${gw.namespace}/${gw.name}: ${pods.map(summary).join(', ')}`,
    );
  }
  return name;
}

/** Lists the Gateway's proxy pods and chooses one; see `choosePod`. */
export async function findProxyPod(c: Cluster, gw: GatewayRef): Promise<string> {
  return choosePod(await listPods(c, gw.namespace, gatewaySelector(gw.name)), gw);
}
