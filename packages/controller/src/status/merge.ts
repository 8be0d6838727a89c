// Merging the status the translator wants with the status an object has: entries of other
// controllers are kept, a condition keeps its lastTransitionTime while its status does not change,
// and a write happens only when something other than those times differs. Pure: `now` is passed in.
import type { Condition } from '../translator/types.ts';

export interface StoredCondition extends Condition {
  lastTransitionTime: string;
}

export function mergeConditions(
  existing: readonly StoredCondition[] | undefined,
  desired: readonly Condition[],
  now: string,
): StoredCondition[] {
  return desired.map((d) => {
    const e = existing?.find((c) => c.type === d.type);
    return { ...d, lastTransitionTime: e && e.status === d.status ? e.lastTransitionTime : now };
  });
}

type Obj = Record<string, unknown>;
const asList = (v: unknown): Obj[] => (Array.isArray(v) ? (v as Obj[]) : []);
const conditionsOf = (v: unknown) => asList(v) as unknown as StoredCondition[];

function sameRef(a: unknown, b: unknown): boolean {
  const norm = (r: unknown) => {
    const o = (r ?? {}) as Obj;
    return JSON.stringify([
      o['group'] ?? '',
      o['kind'] ?? '',
      o['namespace'] ?? '',
      o['name'],
      o['sectionName'] ?? '',
      o['port'] ?? 0,
    ]);
  };
  return norm(a) === norm(b);
}

/** Route parents / policy ancestors: ours replaced, other controllers' kept. */
function mergeEntries(
  current: unknown,
  desired: unknown,
  refKey: 'parentRef' | 'ancestorRef',
  controllerName: string,
  now: string,
  max: number,
): Obj[] {
  const others = asList(current).filter((e) => e['controllerName'] !== controllerName);
  const ours = asList(desired).map((d) => {
    const before = asList(current).find(
      (e) => e['controllerName'] === controllerName && sameRef(e[refKey], d[refKey]),
    );
    return {
      ...d,
      conditions: mergeConditions(conditionsOf(before?.['conditions']), conditionsOf(d['conditions']), now),
    };
  });
  return [...others, ...ours].slice(0, max);
}

function mergeListeners(current: unknown, desired: unknown, now: string): Obj[] {
  return asList(desired).map((d) => {
    const before = asList(current).find((e) => e['name'] === d['name']);
    return {
      ...d,
      conditions: mergeConditions(conditionsOf(before?.['conditions']), conditionsOf(d['conditions']), now),
    };
  });
}

/** The status to write for `kind`, given the current one and what the translator wants. */
export function mergeStatus(
  kind: string,
  current: Obj | undefined,
  desired: Obj,
  controllerName: string,
  now: string,
): Obj {
  const cur = current ?? {};
  switch (kind) {
    case 'HTTPRoute':
    case 'GRPCRoute':
    case 'TCPRoute':
    case 'TLSRoute':
    case 'InferencePool':
      return {
        ...cur,
        parents: mergeEntries(cur['parents'], desired['parents'], 'parentRef', controllerName, now, 32),
      };
    case 'GwModel':
      return {
        ...cur,
        parents: mergeEntries(cur['parents'], desired['parents'], 'parentRef', controllerName, now, 16),
      };
    case 'GwPolicy':
    case 'BackendTLSPolicy':
      return {
        ...cur,
        ancestors: mergeEntries(
          cur['ancestors'],
          desired['ancestors'],
          'ancestorRef',
          controllerName,
          now,
          16,
        ),
      };
    default: {
      const out: Obj = {
        ...cur,
        conditions: mergeConditions(
          conditionsOf(cur['conditions']),
          conditionsOf(desired['conditions']),
          now,
        ),
      };
      if ('listeners' in desired)
        out['listeners'] = mergeListeners(cur['listeners'], desired['listeners'], now);
      // a Gateway's addresses follow its proxy Service (written whole; absent: left as they are)
      if ('addresses' in desired) out['addresses'] = desired['addresses'];
      return out;
    }
  }
}

function withoutTimes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutTimes);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.entries(v as Obj)
        .filter(([k]) => k !== 'lastTransitionTime')
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, x]) => [k, withoutTimes(x)]),
    );
  }
  return v;
}

/** Whether two statuses differ in anything but condition times. */
export function statusChanged(current: unknown, next: unknown): boolean {
  return JSON.stringify(withoutTimes(current ?? {})) !== JSON.stringify(withoutTimes(next));
}
