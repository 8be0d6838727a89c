// GwParameters → what the deployer writes: the GatewayClass's parameters (`spec.parametersRef`) and
// the Gateway's (`spec.infrastructure.parametersRef`), in the spec's order: class typed fields,
// gateway typed fields, class overlays, gateway overlays. Typed fields change the rendered objects
// (image, env, logging, resources, shutdown, workload); overlays are strategic merge patches of each
// object's metadata and spec (strategic-merge.ts). `istio`, `spiffe` and `modelCatalog` change
// nothing here: the proxy cannot act on them yet, and the Gateway's Accepted message says so
// (translator/parameters.ts typedNotApplied). Pure: the objects and parameters are passed in.
import { durationMs, type Overlay, type ParametersSpec, shutdownOf } from '../translator/parameters.ts';
import type { KubeObject } from '../translator/types.ts';
import { strategicMerge } from './strategic-merge.ts';

type Obj = Record<string, unknown>;

export type { ParametersSpec };

/**
 * The rendered objects with the parameters applied; a PodDisruptionBudget or HorizontalPodAutoscaler
 * when an overlay asks for one.
 */
export function applyParameters(
  objects: readonly KubeObject[],
  p: { class?: ParametersSpec; gateway?: ParametersSpec },
): KubeObject[] {
  let out = objects.map((o) => structuredClone(o));
  for (const params of [p.class, p.gateway]) if (params) out = applyTyped(out, params);
  // the pod lives as long as the proxy may drain: shutdown.max, raised to shutdown.min when that is longer
  const { max } = shutdownOf(p);
  const grace = max ? durationMs(max) : undefined;
  if (grace !== undefined)
    for (const o of out) {
      const pod = podSpec(o);
      if (pod) pod.terminationGracePeriodSeconds = Math.ceil(grace / 1000);
    }
  for (const params of [p.class, p.gateway]) if (params) out = applyOverlays(out, params);
  // a HorizontalPodAutoscaler owns the Deployment's replicas: applying ours would undo its scaling
  if (out.some((o) => o.kind === 'HorizontalPodAutoscaler'))
    for (const o of out) if (o.kind === 'Deployment') delete (o.spec as Obj).replicas;
  return out;
}

function podSpec(o: KubeObject): Obj | undefined {
  return ((o.spec as Obj | undefined)?.template as Obj | undefined)?.spec as Obj | undefined;
}

function applyTyped(objects: KubeObject[], t: ParametersSpec): KubeObject[] {
  return objects.map((o) => {
    if (o.kind !== 'Deployment' && o.kind !== 'DaemonSet') return o;
    let w = o;
    if (t.workload === 'DaemonSet' && o.kind === 'Deployment') {
      const { replicas: _r, ...spec } = o.spec as Obj;
      w = { ...o, kind: 'DaemonSet', spec };
    } else if (t.workload === 'Deployment' && o.kind === 'DaemonSet') {
      w = { ...o, kind: 'Deployment', spec: { replicas: 1, ...(o.spec as Obj) } };
    }
    const pod = podSpec(w) as Obj;
    const container = (pod.containers as Obj[])[0] as Obj;
    if (t.image) container.image = imageOf(String(container.image), t.image);
    if (t.image?.pullPolicy) container.imagePullPolicy = t.image.pullPolicy;
    const env = [...((container.env as Obj[]) ?? [])];
    const setEnv = (e: Obj) => {
      const at = env.findIndex((x) => x.name === e.name);
      if (at >= 0) env[at] = e;
      else env.push(e);
    };
    if (t.logging?.level) setEnv({ name: 'GW_LOG', value: t.logging.level });
    if (t.logging?.format) setEnv({ name: 'GW_LOG_FORMAT', value: t.logging.format });
    for (const e of t.env ?? []) setEnv(e);
    container.env = env;
    if (t.resources) container.resources = t.resources;
    return w;
  });
}

function applyOverlays(objects: KubeObject[], t: ParametersSpec): KubeObject[] {
  const out = objects.map((o) => {
    const overlay = overlayFor(o.kind, t);
    if (!overlay) return o;
    // a ServiceAccount has no spec: its overlay's spec fields are the object's own
    const patch = o.kind === 'ServiceAccount' ? { metadata: overlay.metadata, ...overlay.spec } : overlay;
    return strategicMerge(o.kind, o, patch as Obj);
  });
  if (t.podDisruptionBudget && !out.some((o) => o.kind === 'PodDisruptionBudget')) {
    const workload = out.find((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet');
    if (workload) {
      const base: KubeObject = {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: workload.metadata,
        spec: { selector: (workload.spec as Obj).selector, minAvailable: 1 },
      };
      out.push(strategicMerge('PodDisruptionBudget', base, t.podDisruptionBudget as Obj));
    }
  }
  const hpa = t.horizontalPodAutoscaler;
  const deployment = out.find((o) => o.kind === 'Deployment');
  if (hpa && deployment && !out.some((o) => o.kind === 'HorizontalPodAutoscaler')) {
    const base: KubeObject = {
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: deployment.metadata,
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name },
        minReplicas: 1,
        maxReplicas: 1,
      },
    };
    out.push(strategicMerge('HorizontalPodAutoscaler', base, hpa as Obj));
  }
  return out;
}

function overlayFor(kind: string, t: ParametersSpec): Overlay | undefined {
  switch (kind) {
    case 'Deployment':
      return t.deployment;
    case 'DaemonSet':
      return t.daemonSet;
    case 'Service':
      return t.service;
    case 'ServiceAccount':
      return t.serviceAccount;
    case 'PodDisruptionBudget':
      return t.podDisruptionBudget;
    case 'HorizontalPodAutoscaler':
      return t.horizontalPodAutoscaler;
    default:
      return undefined;
  }
}

/**
 * `registry/repository:tag`, each part replacing the current image's where set; with a digest
 * `registry/repository@digest` (`:tag@digest` when a tag is set too: the digest is what is pulled).
 */
function imageOf(full: string, i: NonNullable<ParametersSpec['image']>): string {
  const current = full.split('@')[0] as string;
  const at = current.lastIndexOf(':');
  const hasTag = at > current.lastIndexOf('/');
  const name = hasTag ? current.slice(0, at) : current;
  const tag = hasTag ? current.slice(at + 1) : 'latest';
  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : '';
  // a first segment with a dot or a port is a registry (Docker's rule)
  const hasRegistry = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  const registry = i.registry ?? (hasRegistry ? first : undefined);
  const repository = i.repository ?? (hasRegistry ? name.slice(slash + 1) : name);
  const ref = `${registry ? `${registry}/` : ''}${repository}`;
  if (i.digest) return `${ref}${i.tag ? `:${i.tag}` : ''}@${i.digest}`;
  return `${ref}:${i.tag ?? tag}`;
}
