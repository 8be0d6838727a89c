// The GwParameters of a Gateway: its GatewayClass's (`spec.parametersRef`, any namespace) and its own
// (`spec.infrastructure.parametersRef`, its namespace). The deployer applies them to the proxy objects;
// the translator sends their `rawConfig` to the proxies as global settings.
import type { KubeObject } from './types.ts';

type Obj = Record<string, unknown>;

export interface ParametersSpec {
  workload?: 'Deployment' | 'DaemonSet';
  logging?: { level?: string; format?: 'json' | 'text' };
  image?: { registry?: string; repository?: string; tag?: string; pullPolicy?: string };
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
  if (c?.spec) out.class = c.spec as ParametersSpec;
  // a Gateway's parametersRef is local: its own namespace
  const g = isOurs(gwRef) ? find(ns, gwRef.name) : undefined;
  if (g?.spec) out.gateway = g.spec as ParametersSpec;
  return out;
}

/** `config:` keys a proxy takes only at start (from its flags and environment), never over xDS. */
const STARTUP_KEYS = ['adminAddr', 'statsAddr', 'readinessAddr', 'workerThreads', 'logging'];

/**
 * The `config:` section the Gateway's proxies get from GwParameters `rawConfig` (the class's, then the
 * gateway's, merged key by key), and what of rawConfig is not applied, for the Gateway's status.
 */
export function rawGlobalConfig(p: { class?: ParametersSpec; gateway?: ParametersSpec }): {
  config?: Obj;
  notApplied: string[];
} {
  const raw = mergeDeep(p.class?.rawConfig ?? {}, p.gateway?.rawConfig ?? {});
  const notApplied = Object.keys(raw)
    .filter((k) => k !== 'config')
    .map((k) => `rawConfig.${k}`);
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

/** Typed `shutdown.max` wins over rawConfig: how long a stopping proxy drains its connections. */
function withShutdown(
  r: { config?: Obj; notApplied: string[] },
  p: { class?: ParametersSpec; gateway?: ParametersSpec },
): { config?: Obj; notApplied: string[] } {
  const max = p.gateway?.shutdown?.max ?? p.class?.shutdown?.max;
  if (!max) return r;
  return { ...r, config: { ...(r.config ?? {}), connectionTerminationDeadline: max } };
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function mergeDeep(a: Obj, b: Obj): Obj {
  const out: Obj = { ...a };
  for (const [k, v] of Object.entries(b))
    out[k] = isObj(v) && isObj(out[k]) ? mergeDeep(out[k] as Obj, v) : v;
  return out;
}
