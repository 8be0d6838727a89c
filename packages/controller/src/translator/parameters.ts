// The GwParameters of a Gateway: its GatewayClass's (`spec.parametersRef`, any namespace) and its own
// (`spec.infrastructure.parametersRef`, its namespace). The deployer applies them to the proxy objects;
// the translator sends their `rawConfig` to the proxies as global settings.
import { notBuiltMessage } from '@gw/api/crd/types';
import type { KubeObject } from './types.ts';

type Obj = Record<string, unknown>;

export interface ParametersSpec {
  workload?: 'Deployment' | 'DaemonSet';
  logging?: { level?: string; format?: 'json' | 'text' };
  image?: { registry?: string; repository?: string; tag?: string; digest?: string; pullPolicy?: string };
  env?: Obj[];
  resources?: Obj;
  shutdown?: { min?: string; max?: string };
  rawConfig?: Obj;
  istio?: Obj;
  spiffe?: Obj;
  modelCatalog?: Obj;
  deployment?: Overlay;
  daemonSet?: Overlay;
  service?: Overlay;
  serviceAccount?: Overlay;
  podDisruptionBudget?: Overlay;
  horizontalPodAutoscaler?: Overlay;
}
export interface Overlay {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Obj;
}

/** The GwParameters a GatewayClass and a Gateway name, looked up in `find`. */
export function parametersOf(
  gatewayClass: KubeObject | undefined,
  gateway: KubeObject,
  find: (namespace: string, name: string) => KubeObject | undefined,
): { class?: ParametersSpec; gateway?: ParametersSpec } {
  type Ref = { group?: string; kind?: string; name: string; namespace?: string };
  const isOurs = (r: Ref | undefined): r is Ref => !!r && r.group === 'gw.dev' && r.kind === 'GwParameters';
  const classRef = (gatewayClass?.spec as { parametersRef?: Ref } | undefined)?.parametersRef;
  const gwRef = (gateway.spec as { infrastructure?: { parametersRef?: Ref } } | undefined)?.infrastructure
    ?.parametersRef;
  const ns = gateway.metadata.namespace ?? 'default';
  const out: { class?: ParametersSpec; gateway?: ParametersSpec } = {};
  const c = isOurs(classRef) ? find(classRef.namespace ?? ns, classRef.name) : undefined;
  if (c?.spec) out.class = fromResource(c.spec as Obj);
  // a Gateway's parametersRef is local: its own namespace
  const g = isOurs(gwRef) ? find(ns, gwRef.name) : undefined;
  if (g?.spec) out.gateway = fromResource(g.spec as Obj);
  return out;
}

/**
 * A GwParameters spec as stored (agentgateway's shapes: `workload.kind`, `shutdown` in seconds) →
 * ParametersSpec, which the deployer and the proxy config read (a workload kind, durations).
 */
export function fromResource(spec: Obj): ParametersSpec {
  const { workload, shutdown, ...rest } = spec as Obj & {
    workload?: { kind?: 'Deployment' | 'DaemonSet' };
    shutdown?: { min?: number; max?: number };
  };
  const out: ParametersSpec = rest;
  if (workload?.kind) out.workload = workload.kind;
  if (shutdown) {
    out.shutdown = {
      ...(shutdown.min !== undefined ? { min: `${shutdown.min}s` } : {}),
      ...(shutdown.max !== undefined ? { max: `${shutdown.max}s` } : {}),
    };
  }
  return out;
}

/** `config:` keys a proxy takes only at start (from its flags and environment), never over xDS. */
const STARTUP_KEYS = ['adminAddr', 'statsAddr', 'readinessAddr', 'workerThreads', 'logging'];

/**
 * The `config:` section the Gateway's proxies get from GwParameters `rawConfig` (the class's, then the
 * gateway's, merged key by key) and typed `shutdown`, and what of the parameters is not applied (of
 * rawConfig, and typed fields the proxy cannot act on), for the Gateway's status.
 */
export function rawGlobalConfig(p: { class?: ParametersSpec; gateway?: ParametersSpec }): {
  config?: Obj;
  notApplied: string[];
} {
  const raw = mergeDeep(p.class?.rawConfig ?? {}, p.gateway?.rawConfig ?? {});
  const notApplied = [
    ...Object.keys(raw)
      .filter((k) => k !== 'config')
      .map((k) => `rawConfig.${k}`),
    ...typedNotApplied(p),
  ];
  const section = raw.config;
  if (section === undefined) return withShutdown({ notApplied }, p);
  if (!isObj(section))
    return withShutdown({ notApplied: [...notApplied, 'rawConfig.config (not an object)'] }, p);
  const config: Obj = {};
  for (const [k, v] of Object.entries(section)) {
    if (STARTUP_KEYS.includes(k)) notApplied.push(`rawConfig.config.${k} (a start-up setting)`);
    else config[k] = v;
  }
  return withShutdown(Object.keys(config).length > 0 ? { config, notApplied } : { notApplied }, p);
}

/** The proxy's drain deadline when nothing sets one (its connectionTerminationDeadline default). */
const DEFAULT_DEADLINE_MS = 30_000;

/** A duration such as 30s, 1m30s or 250ms in milliseconds; undefined when it is not one. */
export function durationMs(d: string): number | undefined {
  const m = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/.exec(d);
  if (!m || d === '') return undefined;
  const [h, min, s, ms] = m.slice(1).map((x) => Number(x ?? 0)) as [number, number, number, number];
  return ((h * 60 + min) * 60 + s) * 1000 + ms;
}

/**
 * The effective `shutdown` (each field the gateway's, else the class's). `min` is how long a stopping
 * proxy keeps serving while its readiness fails; `max` when it exits at the latest (its drain deadline
 * and the pod's termination grace period). A `min` past `max`, or past the default deadline when no
 * `max` is set, raises `max` to it: the proxy must be allowed to live that long.
 */
export function shutdownOf(p: { class?: ParametersSpec; gateway?: ParametersSpec }): {
  min?: string;
  max?: string;
} {
  const min = p.gateway?.shutdown?.min ?? p.class?.shutdown?.min;
  let max = p.gateway?.shutdown?.max ?? p.class?.shutdown?.max;
  const minMs = min ? durationMs(min) : undefined;
  const maxMs = max ? durationMs(max) : undefined;
  if (min && minMs !== undefined && minMs > (maxMs ?? DEFAULT_DEADLINE_MS)) max = min;
  return { ...(min ? { min } : {}), ...(max ? { max } : {}) };
}

/** Typed `shutdown` wins over rawConfig: the proxies' drain minimum and deadline. */
function withShutdown(
  r: { config?: Obj; notApplied: string[] },
  p: { class?: ParametersSpec; gateway?: ParametersSpec },
): { config?: Obj; notApplied: string[] } {
  const { min, max } = shutdownOf(p);
  if (!min && !max) return r;
  return {
    ...r,
    config: {
      ...(r.config ?? {}),
      ...(max ? { connectionTerminationDeadline: max } : {}),
      ...(min ? { connectionMinTerminationDeadline: min } : {}),
    },
  };
}

/**
 * Typed fields the proxy cannot act on yet, named for the Gateway's status rather than ignored:
 * `istio` (enabled) and `spiffe` (enabled, or configured without `enabled: false`) need an Istio or
 * SPIFFE workload identity the proxy does not have; `modelCatalog` needs a model cost catalog it does
 * not have, and on the GatewayClass's parameters is never effective (the spec: Gateway level only).
 */
export function typedNotApplied(p: { class?: ParametersSpec; gateway?: ParametersSpec }): string[] {
  const out: string[] = [];
  const istio = (p.gateway?.istio ?? p.class?.istio) as { enabled?: boolean } | undefined;
  if (istio?.enabled === true) out.push('istio (the proxy has no Istio mTLS yet)');
  const spiffe = (p.gateway?.spiffe ?? p.class?.spiffe) as
    | { enabled?: boolean; socketPath?: string; trustDomain?: string; source?: unknown }
    | undefined;
  if (
    spiffe &&
    (spiffe.enabled === true || (spiffe.enabled !== false && (spiffe.socketPath || spiffe.trustDomain)))
  )
    out.push('spiffe (the proxy has no SPIFFE workload identity yet)');
  if (p.class?.modelCatalog) out.push("modelCatalog on the GatewayClass's parameters (Gateway level only)");
  const catalog = p.gateway?.modelCatalog as { enabled?: boolean } | undefined;
  if (catalog && catalog.enabled !== false) out.push('modelCatalog (the proxy has no model catalog yet)');
  return out;
}

/** agentgateway's fields this build accepts and refuses by name, in the CRD's words. */
export function typedNotBuilt(p: { class?: ParametersSpec; gateway?: ParametersSpec }): string[] {
  const out: string[] = [];
  for (const [level, t] of [
    ['GatewayClass', p.class],
    ['Gateway', p.gateway],
  ] as const) {
    if ((t?.spiffe as { source?: unknown } | undefined)?.source !== undefined)
      out.push(`${notBuiltMessage('spiffe.source')} (the ${level}'s GwParameters)`);
    if ((t?.modelCatalog as { sources?: unknown } | undefined)?.sources !== undefined)
      out.push(`${notBuiltMessage('modelCatalog.sources')} (the ${level}'s GwParameters)`);
  }
  return out;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function mergeDeep(a: Obj, b: Obj): Obj {
  const out: Obj = { ...a };
  for (const [k, v] of Object.entries(b))
    out[k] = isObj(v) && isObj(out[k]) ? mergeDeep(out[k] as Obj, v) : v;
  return out;
}
