// Gateway API's BackendTLSPolicy (v1): TLS from the gateway to a Service, for every route backend
// and policy service call to it (the same lookup as a GwPolicy on the Service, attachment.ts
// servicePolicies). Its validation is a GwPolicy `backend.tls` in other words, translated by the same
// code (policy/backend/tls.ts): `hostname` is the SNI and the name verified, `subjectAltNames` the
// names verified instead, `caCertificateRefs` a ConfigMap's `ca.crt` (or `wellKnownCACertificates:
// System`, the system roots). A CA that cannot be read fails closed: calls to the Service are refused
// (their routes say so), never made with weaker TLS. Of two policies on one Service port the oldest
// wins; the other is Conflicted. Status: an ancestor per Gateway whose routes send to the Service.
import { bad, ok } from './conditions.ts';
import { GATEWAY_GROUP } from './gateways.ts';
import { backendTls } from './policy/backend/tls.ts';
import type { ServicePolicyLookup } from './policy/context.ts';
import { MapContext } from './policy/context.ts';
import { type Condition, type KubeObject, type Lookup, olderFirst, type StatusUpdate } from './types.ts';

interface BackendTlsPolicySpec {
  targetRefs?: { group?: string; kind?: string; name: string; sectionName?: string }[];
  validation?: {
    caCertificateRefs?: { group?: string; kind?: string; name: string }[];
    wellKnownCACertificates?: string;
    hostname?: string;
    subjectAltNames?: { type?: string; hostname?: string; uri?: string }[];
  };
  options?: Record<string, string>;
}

/** One policy's outcome for one Service port (or every port). */
interface Entry {
  policy: KubeObject;
  service: string;
  port?: number;
  backendTLS?: Record<string, unknown>;
  /** Why calls to the Service are refused (the CA cannot be read); set with resolved False. */
  problem?: string;
  accepted: Condition;
  resolved: Condition;
}

export interface BackendTlsPolicies {
  /** What a call to `namespace/name:port` takes: backendTLS, or a problem (no call is made). */
  lookup(
    namespace: string,
    name: string,
    port: number,
  ): { backendTLS?: Record<string, unknown>; problem?: string };
  /** The policies' statuses: an ancestor per Gateway in `used` (Service `ns/name` → Gateway keys). */
  statuses(used: (namespace: string, name: string) => string[], controllerName: string): StatusUpdate[];
}

const key = (o: KubeObject) => `${o.metadata.namespace ?? 'default'}/${o.metadata.name}`;

export function backendTlsPolicies(objects: KubeObject[], lookup: Lookup): BackendTlsPolicies {
  const policies = objects.filter((o) => o.kind === 'BackendTLSPolicy').sort(olderFirst);
  const entries: Entry[] = [];
  /** The oldest policy on each Service port (`ns/name:port`, or `ns/name:*` for every port). */
  const winner = new Map<string, Entry>();
  for (const p of policies) {
    const ns = p.metadata.namespace ?? 'default';
    const gen = p.metadata.generation;
    const spec = (p.spec ?? {}) as BackendTlsPolicySpec;
    const v = spec.validation ?? {};
    const ctx = new MapContext(ns, lookup, 'BackendTLSPolicy');
    const sans = (v.subjectAltNames ?? []).flatMap((s) =>
      s.type === 'URI' ? [s.uri ?? ''] : [s.hostname ?? ''],
    );
    const ca = v.caCertificateRefs?.[0];
    const { policy, failClosed } = backendTls(ctx, 'spec.validation', {
      ...(v.hostname ? { sni: v.hostname } : {}),
      ...(sans.length > 0 ? { verifySubjectAltNames: sans } : {}),
      ...(ca
        ? { caCertificateRefs: [{ kind: (ca.kind ?? 'ConfigMap') as 'ConfigMap', name: ca.name }] }
        : {}),
    } as Parameters<typeof backendTls>[2]);
    const caRefProblem =
      ca && ((ca.group ?? '') !== '' || !['ConfigMap', 'Secret'].includes(ca.kind ?? 'ConfigMap'))
        ? `caCertificateRefs[0]: kind ${ca.group ? `${ca.group}/` : ''}${ca.kind} is not supported (ConfigMap, Secret)`
        : undefined;
    const problems = [...(caRefProblem ? [caRefProblem] : []), ...ctx.problems];
    const options = Object.keys(spec.options ?? {});
    const resolved =
      problems.length > 0 || failClosed
        ? bad('ResolvedRefs', 'InvalidCACertificateRef', problems.join('; ') || 'the CA cannot be read', gen)
        : ok('ResolvedRefs', 'ResolvedRefs', 'all references resolved', gen);
    for (const t of spec.targetRefs ?? []) {
      if ((t.group ?? '') !== '' || (t.kind ?? 'Service') !== 'Service') continue;
      const svc = lookup.get('Service', ns, t.name);
      const port = t.sectionName
        ? (svc?.spec as { ports?: { name?: string; port: number }[] } | undefined)?.ports?.find(
            (x) => x.name === t.sectionName,
          )?.port
        : undefined;
      const at = `${ns}/${t.name}:${t.sectionName ? (port ?? `?${t.sectionName}`) : '*'}`;
      const first = winner.get(at);
      const accepted = first
        ? bad(
            'Accepted',
            'Conflicted',
            `BackendTLSPolicy ${key(first.policy)} already sets TLS to this Service${t.sectionName ? ` port ${t.sectionName}` : ''}`,
            gen,
          )
        : options.length > 0
          ? bad('Accepted', 'Invalid', `options are not supported by gw: ${options.join(', ')}`, gen)
          : !svc
            ? bad('Accepted', 'TargetNotFound', `service ${ns}/${t.name} not found`, gen)
            : t.sectionName && port === undefined
              ? bad(
                  'Accepted',
                  'TargetNotFound',
                  `service ${ns}/${t.name} has no port named ${t.sectionName}`,
                  gen,
                )
              : ok('Accepted', 'Accepted', 'accepted', gen);
      const e: Entry = {
        policy: p,
        service: `${ns}/${t.name}`,
        ...(port !== undefined ? { port } : {}),
        accepted,
        resolved,
        ...(resolved.status === 'True'
          ? { backendTLS: policy as Record<string, unknown> }
          : { problem: `BackendTLSPolicy ${key(p)}: ${resolved.message}` }),
      };
      entries.push(e);
      if (!first && accepted.status === 'True') winner.set(at, e);
    }
  }
  return {
    lookup(namespace, name, port) {
      // a policy on the port wins over one on the whole Service
      const e = winner.get(`${namespace}/${name}:${port}`) ?? winner.get(`${namespace}/${name}:*`);
      if (!e) return {};
      return e.problem
        ? { problem: e.problem }
        : { backendTLS: structuredClone(e.backendTLS) as Record<string, unknown> };
    },
    statuses(used, controllerName) {
      // by policy, its Gateways: each with the conditions of the first target that reaches it
      const byPolicy = new Map<string, { policy: KubeObject; gateways: Map<string, Condition[]> }>();
      for (const e of entries) {
        const [ns, name] = e.service.split('/') as [string, string];
        const slot = byPolicy.get(key(e.policy)) ?? { policy: e.policy, gateways: new Map() };
        for (const g of used(ns, name))
          if (!slot.gateways.has(g)) slot.gateways.set(g, [e.accepted, e.resolved]);
        byPolicy.set(key(e.policy), slot);
      }
      return [...byPolicy.values()]
        .filter((s) => s.gateways.size > 0)
        .map((s) => ({
          kind: 'BackendTLSPolicy',
          namespace: s.policy.metadata.namespace ?? 'default',
          name: s.policy.metadata.name,
          status: {
            ancestors: [...s.gateways].slice(0, 16).map(([g, conditions]) => {
              const [namespace, name] = g.split('/') as [string, string];
              return {
                ancestorRef: { group: GATEWAY_GROUP, kind: 'Gateway', namespace, name },
                controllerName,
                conditions,
              };
            }),
          },
        }));
    },
  };
}

/**
 * The Service lookup route backends and policy service calls use: a GwPolicy's backend settings over
 * a BackendTLSPolicy's TLS (a GwPolicy's own `tls` wins); a problem of either refuses the calls.
 */
export function withBackendTls(
  gwPolicies: ServicePolicyLookup,
  tls: BackendTlsPolicies,
): ServicePolicyLookup {
  return (namespace, name, port) => {
    const t = tls.lookup(namespace, name, port);
    if (t.problem) return { problem: t.problem };
    const g = gwPolicies(namespace, name, port);
    if (g.problem || !t.backendTLS) return g;
    return { policies: { backendTLS: t.backendTLS, ...(g.policies ?? {}) } };
  };
}
