// The Gateway API Inference Extension's InferencePool (inference.networking.k8s.io/v1), read when the
// controller runs with --enable-inference-extension: model server Pods (the pool's selector, in its
// namespace) and the endpoint picker (EPP) that chooses one of them for each request. An HTTPRoute
// backendRef to a pool becomes an InferencePool resource: the ready Pods, each at every target port,
// and the picker as a named host backend. The proxy serves it as the standalone schema's `service`
// backend with inferenceRouting (proxy/src/xds-client/assemble.ts).
//
// The picker is the Service endpointPickerRef names, at its port, by cluster DNS name. The reference
// EPP serves gRPC over TLS with a self-signed certificate by default, so the picker is called over TLS
// without verifying it, unless the Service says otherwise: a port with appProtocol kubernetes.io/h2c
// is called in plaintext, and a BackendTLSPolicy or GwPolicy backend.tls on the Service is the TLS to
// use (verified as it says). A static GwBackend (group gw.dev) may be the picker instead: a picker
// outside the cluster, called at its address with its backendTLS (its other policies are for routes).
//
// Status: a parent per Gateway of ours whose HTTPRoutes name the pool (Accepted, or Accepted False,
// HTTPRouteNotAccepted, when it refused them all); ResolvedRefs False (InvalidExtensionRef) when the
// picker cannot be used, and then the routes that send to the pool answer 500.
import { bad, ok } from './conditions.ts';
import { GATEWAY_GROUP, matchesLabels } from './gateways.ts';
import type { ServicePolicyLookup } from './policy/context.ts';
import {
  type Condition,
  GW_GROUP,
  type KubeObject,
  type Lookup,
  type NamedResource,
  type StatusUpdate,
} from './types.ts';

export const INFERENCE_GROUP = 'inference.networking.k8s.io';

interface PoolSpec {
  selector?: { matchLabels?: Record<string, string> };
  targetPorts?: { number: number }[];
  endpointPickerRef?: {
    group?: string;
    kind?: string;
    name: string;
    port?: { number: number };
    failureMode?: 'FailOpen' | 'FailClose';
  };
}

interface PodStatus {
  phase?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  conditions?: { type: string; status: string }[];
}

export interface PoolInfo {
  /** `<namespace>/<name>` */
  key: string;
  object: KubeObject;
  /** The InferencePool resource; undefined when the pool cannot be used (`resolved` says why). */
  resource?: NamedResource;
  /** The named host backend of its picker, sent with the pool. */
  picker?: NamedResource;
  resolved: Condition;
}

/** The name of the host backend the controller makes for a pool's picker (one no GwBackend can have). */
export const pickerBackendName = (ns: string, pool: string) => `epp:${ns}/${pool}`;

/** A Pod that serves: running, ready, with an address, not going away. */
function podAddress(pod: KubeObject): string | undefined {
  if ((pod.metadata as { deletionTimestamp?: string }).deletionTimestamp) return undefined;
  const s = (pod.status ?? {}) as PodStatus;
  if (s.phase !== 'Running') return undefined;
  if (!s.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return undefined;
  return s.podIP || s.podIPs?.[0]?.ip || undefined;
}

export function collectInferencePools(
  objects: KubeObject[],
  lookup: Lookup,
  opts: {
    clusterDomain: string;
    /** What GwPolicies and BackendTLSPolicies on a Service give calls to one of its ports. */
    services?: ServicePolicyLookup;
    /** A GwBackend's static address and its backendTLS, or why it is not one. */
    staticBackend: (
      ns: string,
      name: string,
    ) => { host: string; port: number; backendTLS?: Record<string, unknown> } | string;
  },
): Map<string, PoolInfo> {
  const out = new Map<string, PoolInfo>();
  for (const o of objects.filter((x) => x.kind === 'InferencePool')) {
    const ns = o.metadata.namespace ?? 'default';
    const key = `${ns}/${o.metadata.name}`;
    const gen = o.metadata.generation;
    const spec = (o.spec ?? {}) as PoolSpec;
    const refused = (message: string): PoolInfo => ({
      key,
      object: o,
      resolved: bad('ResolvedRefs', 'InvalidExtensionRef', message, gen),
    });
    const ref = spec.endpointPickerRef;
    if (!ref) {
      out.set(key, refused('spec.endpointPickerRef is not set'));
      continue;
    }
    const group = ref.group ?? '';
    const kind = ref.kind ?? 'Service';
    const pickerName = pickerBackendName(ns, o.metadata.name);
    let picker: NamedResource;
    if (group === '' && kind === 'Service') {
      const found = servicePicker(ns, o.metadata.name, ref, lookup, opts);
      if (typeof found === 'string') {
        out.set(key, refused(found));
        continue;
      }
      picker = found;
    } else if (group === GW_GROUP && kind === 'GwBackend') {
      // its address and TLS only: the GwBackend's other policies are for routes to it
      const b = opts.staticBackend(ns, ref.name);
      if (typeof b === 'string') {
        out.set(key, refused(`endpointPickerRef: ${b}`));
        continue;
      }
      picker = pickerBackend(pickerName, { host: b.host, port: b.port }, b.backendTLS);
    } else {
      out.set(
        key,
        refused(
          `endpointPickerRef kind ${group ? `${group}/` : ''}${kind} is not supported (Service, gw.dev/GwBackend)`,
        ),
      );
      continue;
    }
    const ports = [...new Set((spec.targetPorts ?? []).map((p) => p.number))];
    // each ready Pod of the selector once, by name (the order the proxy's endpoints are built in)
    const selector = spec.selector?.matchLabels ?? {};
    const endpoints =
      Object.keys(selector).length === 0
        ? []
        : lookup
            .list('Pod', ns)
            .filter((p) => matchesLabels(p.metadata.labels, { matchLabels: selector }))
            .flatMap((p) => {
              const ip = podAddress(p);
              return ip ? [{ name: p.metadata.name, ip }] : [];
            });
    out.set(key, {
      key,
      object: o,
      resource: {
        name: `inferencepool/${key}`,
        resource: {
          inferencePool: {
            name: key,
            targetPorts: ports,
            ...(endpoints.length > 0 ? { endpoints } : {}),
            endpointPicker: pickerName,
            ...(ref.failureMode === 'FailOpen' ? { failOpen: true } : {}),
          },
        },
      },
      picker,
      resolved: ok('ResolvedRefs', 'ResolvedRefs', 'the endpoint picker resolved', gen),
    });
  }
  return out;
}

/** A Service endpoint picker as a named host backend with the TLS it is called with, or why it cannot be used. */
function servicePicker(
  ns: string,
  pool: string,
  ref: NonNullable<PoolSpec['endpointPickerRef']>,
  lookup: Lookup,
  opts: { clusterDomain: string; services?: ServicePolicyLookup },
): NamedResource | string {
  const svc = lookup.get('Service', ns, ref.name);
  if (!svc) return `endpointPickerRef: service ${ns}/${ref.name} not found`;
  const spec = (svc.spec ?? {}) as {
    type?: string;
    ports?: { port: number; appProtocol?: string }[];
  };
  // the Inference Extension forbids ExternalName Services (they may point outside the cluster)
  if (spec.type === 'ExternalName')
    return `endpointPickerRef: service ${ns}/${ref.name} is an ExternalName Service, which an endpoint picker may not be`;
  const port = ref.port?.number;
  if (port === undefined) return 'endpointPickerRef.port is required for a Service';
  const sp = spec.ports?.find((p) => p.port === port);
  if (!sp) return `endpointPickerRef: service ${ns}/${ref.name} has no port ${port}`;
  const attached = opts.services?.(ns, ref.name, port);
  if (attached?.problem)
    return `endpointPickerRef: service ${ns}/${ref.name} is not usable: ${attached.problem}`;
  const tls = attached?.policies?.backendTLS as Record<string, unknown> | undefined;
  const plaintext = sp.appProtocol === 'kubernetes.io/h2c';
  return pickerBackend(
    pickerBackendName(ns, pool),
    { host: `${ref.name}.${ns}.svc.${opts.clusterDomain}`, port },
    tls ?? (plaintext ? undefined : { insecure: true }),
  );
}

/** The picker as a named host backend: its address and the TLS it is called with (none: plain text). */
function pickerBackend(
  name: string,
  host: { host: string; port: number },
  backendTLS: Record<string, unknown> | undefined,
): NamedResource {
  return {
    name: `backend/${name}`,
    resource: {
      backend: {
        name,
        host,
        ...(backendTLS ? { policies: { backendTLS: structuredClone(backendTLS) } } : {}),
      },
    },
  };
}

/**
 * The pools' statuses from the Gateways of ours whose HTTPRoutes name them (`parents`, routes.ts
 * poolParents): a parent per Gateway, Accepted when it accepted such a route, else Accepted False
 * (HTTPRouteNotAccepted). A pool none of our Gateways names gets a status only while it still lists a
 * parent of ours (so that one leaves the list): the pools of other implementations, and those no
 * route names, are not written to.
 */
export function inferencePoolStatuses(
  pools: Map<string, PoolInfo>,
  parents: readonly { pool: string; gateway: string; accepted: boolean }[],
  controllerName: string,
): StatusUpdate[] {
  const out: StatusUpdate[] = [];
  for (const p of pools.values()) {
    const gen = p.object.metadata.generation;
    // per Gateway: whether it accepted any route to the pool
    const byGateway = new Map<string, boolean>();
    for (const x of parents)
      if (x.pool === p.key) byGateway.set(x.gateway, (byGateway.get(x.gateway) ?? false) || x.accepted);
    const listed = (
      (p.object.status as { parents?: { controllerName?: string }[] } | undefined)?.parents ?? []
    ).some((x) => x.controllerName === controllerName);
    if (byGateway.size === 0 && !listed) continue;
    out.push({
      kind: 'InferencePool',
      namespace: p.object.metadata.namespace ?? 'default',
      name: p.object.metadata.name,
      status: {
        parents: [...byGateway]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([gateway, accepted]) => {
            const [namespace, name] = gateway.split('/') as [string, string];
            return {
              parentRef: { group: GATEWAY_GROUP, kind: 'Gateway', namespace, name },
              controllerName,
              conditions: [
                accepted
                  ? ok('Accepted', 'Accepted', 'routes of this Gateway send to the pool', gen)
                  : bad(
                      'Accepted',
                      'HTTPRouteNotAccepted',
                      'the HTTPRoutes of this Gateway that send to the pool are not accepted (see their status)',
                      gen,
                    ),
                p.resolved,
              ],
            };
          }),
      },
    });
  }
  return out;
}
