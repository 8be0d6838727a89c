// ReferenceGrants: whether an object in one namespace may refer to one in another.
import { GATEWAY_GROUP } from './gateways.ts';
import { GW_GROUP, type KubeObject } from './types.ts';

export type Grants = (
  fromKind: string,
  fromNs: string,
  toKind: string,
  toNs: string,
  toName: string,
) => boolean;

/** Group of a kind as ReferenceGrants name it. */
function groupOf(kind: string): string {
  if (kind === 'Service' || kind === 'Secret' || kind === 'ConfigMap') return '';
  if (kind.startsWith('Gw')) return GW_GROUP;
  return GATEWAY_GROUP;
}

export function referenceGrants(objects: KubeObject[]): Grants {
  const grants = objects.filter((o) => o.kind === 'ReferenceGrant');
  return (fromKind, fromNs, toKind, toNs, toName) =>
    grants.some((g) => {
      if ((g.metadata.namespace ?? 'default') !== toNs) return false;
      const spec = g.spec as {
        from?: { group: string; kind: string; namespace: string }[];
        to?: { group: string; kind: string; name?: string }[];
      };
      const fromOk = (spec.from ?? []).some(
        (f) => f.group === groupOf(fromKind) && f.kind === fromKind && f.namespace === fromNs,
      );
      const toOk = (spec.to ?? []).some(
        (t) => t.group === groupOf(toKind) && t.kind === toKind && (!t.name || t.name === toName),
      );
      return fromOk && toOk;
    });
}
