// Kubernetes strategic merge patch for the objects the deployer writes (GwParameters overlays on the
// Deployment, DaemonSet, Service, ServiceAccount and PodDisruptionBudget). No maintained Node
// implementation exists, so this one follows the API server's rules for these kinds, and
// e2e/strategic-merge.test.ts holds it to the API server's own merge (a server-side dry-run patch) on
// the same inputs:
// - maps merge key by key; a null value deletes the key;
// - `$patch: replace` on a map replaces it whole, `$patch: delete` empties it;
// - a list with a merge key (containers by name, ports by containerPort, …) merges element by element;
//   an element `{<key>: …, $patch: delete}` removes the match, and an element `{$patch: replace}` makes
//   the rest of the patch list the whole list. The result's order is the API server's: the elements
//   the patch names in the patch's order, and those only the original has in their order, interleaved
//   by their places in the original (an element new to it goes before the original's next one);
// - a list of scalars with the merge strategy (finalizers) is a union; any other list is replaced.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

/** Merge keys of the lists that merge, by kind and field path (list indices left out). */
const POD = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  imagePullSecrets: 'name',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  resourceClaims: 'name',
  'containers.env': 'name',
  'containers.ports': 'containerPort',
  'containers.volumeMounts': 'mountPath',
  'containers.volumeDevices': 'devicePath',
  'initContainers.env': 'name',
  'initContainers.ports': 'containerPort',
  'initContainers.volumeMounts': 'mountPath',
  'initContainers.volumeDevices': 'devicePath',
} as const;
const META = { 'metadata.ownerReferences': 'uid' } as const;
const withPrefix = (prefix: string, keys: Record<string, string>) =>
  Object.fromEntries(Object.entries(keys).map(([k, v]) => [`${prefix}${k}`, v]));

export const MERGE_KEYS: Record<string, Record<string, string>> = {
  Deployment: { ...META, ...withPrefix('spec.template.spec.', POD) },
  DaemonSet: { ...META, ...withPrefix('spec.template.spec.', POD) },
  Service: { ...META, 'spec.ports': 'port' },
  ServiceAccount: { ...META, secrets: 'name', imagePullSecrets: 'name' },
  PodDisruptionBudget: { ...META },
  HorizontalPodAutoscaler: { ...META },
};
/** Lists of scalars that merge as a set. */
const SET_LISTS = new Set(['metadata.finalizers']);

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `original` with `patch` applied; neither is changed. */
export function strategicMerge<T>(kind: string, original: T, patch: unknown): T {
  const keys = MERGE_KEYS[kind] ?? META;
  return mergeMap(original as unknown as Obj, patch as Obj, '', keys) as unknown as T;
}

function mergeValue(
  orig: Json | undefined,
  patch: Json,
  path: string,
  keys: Record<string, string>,
): Json | undefined {
  if (isObj(patch)) {
    if (patch.$patch === 'delete') return {};
    if (patch.$patch === 'replace') return withoutDirectives(patch);
    return mergeMap(isObj(orig) ? orig : {}, patch, path, keys);
  }
  if (Array.isArray(patch)) return mergeList(Array.isArray(orig) ? orig : [], patch, path, keys);
  return patch;
}

function mergeMap(orig: Obj, patch: Obj, path: string, keys: Record<string, string>): Obj {
  const out: Obj = { ...orig };
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch') continue;
    if (v === null) {
      delete out[k];
      continue;
    }
    const merged = mergeValue(orig[k], v, path ? `${path}.${k}` : k, keys);
    if (merged === undefined) delete out[k];
    else out[k] = merged;
  }
  return out;
}

function mergeList(orig: Json[], patch: Json[], path: string, keys: Record<string, string>): Json[] {
  const key = keys[path];
  if (!key) {
    if (SET_LISTS.has(path)) return [...orig, ...patch.filter((p) => !orig.includes(p))];
    return patch.map((p) => (isObj(p) ? withoutDirectives(p) : p));
  }
  // `{$patch: replace}` anywhere in the list: the other elements are the list
  if (patch.some((p) => isObj(p) && p.$patch === 'replace' && Object.keys(p).length === 1)) {
    return patch
      .filter((p) => !(isObj(p) && p.$patch === 'replace'))
      .map((p) => (isObj(p) ? withoutDirectives(p) : p));
  }
  const keyOf = (o: Json) => (isObj(o) ? o[key] : undefined);
  const deleted = new Set(patch.filter((p) => isObj(p) && p.$patch === 'delete').map(keyOf));
  const named = patch.filter((p) => isObj(p) && p.$patch !== 'delete') as Obj[];
  const inPatch = new Set(named.map(keyOf));
  // the patch's elements, merged into the original's of the same key, in the patch's order
  const patchItems = named.map((p) => {
    const o = orig.find((x) => keyOf(x) === p[key]);
    return isObj(o) ? mergeMap(o, p, path, keys) : withoutDirectives(p);
  });
  const serverOnly = orig.filter((o) => !inPatch.has(keyOf(o)) && !deleted.has(keyOf(o)));
  const place = (o: Json) => orig.findIndex((x) => keyOf(x) === keyOf(o));
  const out: Json[] = [];
  let i = 0;
  let j = 0;
  while (i < serverOnly.length && j < patchItems.length) {
    if (place(patchItems[j] as Json) < place(serverOnly[i] as Json)) out.push(patchItems[j++] as Json);
    else out.push(serverOnly[i++] as Json);
  }
  return [...out, ...serverOnly.slice(i), ...patchItems.slice(j)];
}

function withoutDirectives(o: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === '$patch') continue;
    out[k] = isObj(v)
      ? withoutDirectives(v)
      : Array.isArray(v)
        ? v.map((x) => (isObj(x) ? withoutDirectives(x) : x))
        : v;
  }
  return out;
}
