// Resolves objects of a snapshot by kind, namespace and name (the translator's Lookup). Built once per
// snapshot; cluster-scoped objects (Namespaces, GatewayClasses) live under the namespace ''.
import type { KubeObject, Lookup } from './types.ts';

/** A Lookup over a fixed list of objects; `list` returns objects sorted by namespace, then name. */
export function inMemoryLookup(objects: readonly KubeObject[]): Lookup {
  const byKey = new Map<string, KubeObject>();
  const byKind = new Map<string, KubeObject[]>();
  for (const o of objects) {
    byKey.set(key(o.kind, o.metadata.namespace ?? '', o.metadata.name), o);
    const list = byKind.get(o.kind);
    if (list) list.push(o);
    else byKind.set(o.kind, [o]);
  }
  // Sorted once, so every consumer sees the same order whatever order the informers delivered.
  for (const list of byKind.values()) list.sort(byNamespaceAndName);
  return {
    get: (kind, namespace, name) => byKey.get(key(kind, namespace, name)),
    list: (kind, namespace) => {
      const all = byKind.get(kind) ?? [];
      return namespace === undefined
        ? [...all]
        : all.filter((o) => (o.metadata.namespace ?? '') === namespace);
    },
  };
}

const key = (kind: string, namespace: string, name: string) => `${kind}\u0000${namespace}\u0000${name}`;

function byNamespaceAndName(a: KubeObject, b: KubeObject): number {
  const an = a.metadata.namespace ?? '';
  const bn = b.metadata.namespace ?? '';
  if (an !== bn) return an < bn ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}
