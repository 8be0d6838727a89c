// GwModel (behind the models flag): the data plane has no LLM routing yet, so each parent says so
// instead of the model silently doing nothing.
import { validateResource } from '@gw/api/crd/crds';
import { formatError } from '@gw/api/crd/validate';
import { bad } from './conditions.ts';
import { GATEWAY_GROUP } from './gateways.ts';
import type { KubeObject, StatusUpdate } from './types.ts';

export function modelStatuses(objects: KubeObject[], controllerName: string): StatusUpdate[] {
  const statuses: StatusUpdate[] = [];
  for (const m of objects.filter((o) => o.kind === 'GwModel')) {
    const ns = m.metadata.namespace ?? 'default';
    const gen = m.metadata.generation;
    const v = validateResource(m);
    const raw = (v.ok ? v.spec : m.spec) as {
      parentRefs?: {
        group?: string;
        kind?: string;
        namespace?: string;
        name: string;
        sectionName?: string;
      }[];
    };
    const parents = (raw?.parentRefs ?? []).slice(0, 16).map((ref) => ({
      parentRef: {
        group: ref.group ?? GATEWAY_GROUP,
        kind: ref.kind ?? 'Gateway',
        namespace: ref.namespace ?? ns,
        name: ref.name,
        ...(ref.sectionName ? { sectionName: ref.sectionName } : {}),
      },
      controllerName,
      conditions: [
        v.ok
          ? bad(
              'Accepted',
              'Unsupported',
              'model routing needs LLM support in the data plane, which this gw build does not have yet',
              gen,
            )
          : bad('Accepted', 'Invalid', v.errors.map(formatError).join('; '), gen),
      ],
    }));
    statuses.push({ kind: 'GwModel', namespace: ns, name: m.metadata.name, status: { parents } });
  }
  return statuses;
}
