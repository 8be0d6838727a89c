// spec.traffic.apiKeyAuthentication → apiKey: keys from a Secret, or from every Secret/ConfigMap with
// the given labels (ConfigMaps hold only hashed keys). No usable keys: mode strict, every request is
// rejected. A CEL key location that does not compile is invalid.
import { checkTokenLocation } from '@gw/api';
import type { KubeObject } from '../../types.ts';
import { decodeBase64, defined, isSecretRef, lowerFirst, type MapContext, quote } from '../context.ts';
import { type TrafficMapper, type TrafficPolicies, type TrafficSpec, tokenLocation } from '../spec.ts';

type ApiKeySpec = NonNullable<TrafficSpec['apiKeyAuthentication']>;
const KEY_HASH = /^sha256:[0-9a-fA-F]{64}$/;

export const apiKeyAuthentication: TrafficMapper<'apiKeyAuthentication'> = {
  map(spec, ctx, out, at) {
    out.apiKey = apiKeyAuth(ctx, at.field, spec);
    if (spec.location) ctx.check(checkTokenLocation(tokenLocation(spec.location), [...at.path, 'location']));
  },
};

type ApiKeyAuth = NonNullable<TrafficPolicies['apiKey']>;
type ApiKeyEntry = string | { key: string; metadata?: unknown } | { keyHash: string; metadata?: unknown };

function apiKeyAuth(ctx: MapContext, field: string, spec: ApiKeySpec): ApiKeyAuth {
  const keys: Record<string, ApiKeyEntry> = {};
  const from = new Map<string, string>();
  const collect = (kind: 'Secret' | 'ConfigMap', obj: KubeObject, sf: string) => {
    const what = `${kind.toLowerCase()} ${quote(obj.metadata.name)}`;
    for (const [name, raw] of Object.entries(obj.data ?? {}).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    )) {
      const value = kind === 'Secret' ? decodeBase64(raw) : raw;
      const parsed = apiKeyEntry(value, kind === 'ConfigMap');
      if (typeof parsed === 'object' && 'error' in parsed) {
        ctx.problem(sf, `${what} entry ${quote(name)} ${parsed.error}; the entry is skipped`);
        continue;
      }
      const earlier = from.get(name);
      if (earlier !== undefined) {
        ctx.problem(sf, `entry ${quote(name)} is in ${earlier} and ${what}; the one in ${earlier} is used`);
        continue;
      }
      from.set(name, what);
      keys[name] = parsed;
    }
  };
  let broken = false;
  if (spec.secretRef) {
    const sf = `${field}.secretRef`;
    const ref = spec.secretRef;
    if (!isSecretRef(ctx, sf, ref)) broken = true;
    else {
      const obj = ctx.lookup.get('Secret', ctx.namespace, ref.name);
      if (obj) collect('Secret', obj, sf);
      else {
        broken = true;
        ctx.problem(sf, `secret ${quote(ref.name)} not found`);
      }
    }
  } else {
    const kind = spec.secretSelector ? 'Secret' : 'ConfigMap';
    const sf = `${field}.${spec.secretSelector ? 'secretSelector' : 'configMapSelector'}`;
    const labels = (spec.secretSelector ?? spec.configMapSelector)?.matchLabels ?? {};
    if (Object.keys(labels).length === 0) {
      // An empty selector selects every object of the namespace: service account tokens, TLS keys…
      ctx.problem(
        sf,
        `matchLabels is empty, which would select every ${kind} in the namespace; name a label`,
      );
      broken = true;
    } else {
      const matching = ctx.lookup
        .list(kind, ctx.namespace)
        .filter((o) => Object.entries(labels).every(([k, v]) => o.metadata.labels?.[k] === v))
        .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
      if (matching.length === 0) {
        ctx.problem(
          sf,
          `no ${kind} in namespace ${quote(ctx.namespace)} has the labels ${formatLabels(labels)}`,
        );
      }
      for (const o of matching) collect(kind, o, sf);
    }
  }
  if (Object.keys(keys).length === 0) {
    broken = true;
    ctx.problem(field, 'no usable API keys: every request is rejected');
  }
  return defined({
    mode: broken ? 'strict' : lowerFirst(spec.mode),
    keys,
    location: spec.location && tokenLocation(spec.location),
  });
}

const formatLabels = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

/**
 * One credential entry: a plain key, or JSON `{"key"|"keyHash": …, "metadata": …}`. Surrounding
 * whitespace is dropped (files made with `kubectl create secret --from-file` end in a newline).
 * Errors never quote the value: it is a credential.
 */
function apiKeyEntry(value: string, hashedOnly: boolean): ApiKeyEntry | { error: string } {
  const text = value.trim();
  if (text === '') return { error: 'is empty' };
  if (!text.startsWith('{')) {
    return hashedOnly
      ? { error: 'holds a raw key; ConfigMaps may only hold hashed keys ({"keyHash": "sha256:<hex>"})' }
      : text;
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'starts with "{" but is not valid JSON' };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { error: 'is not a JSON object' };
  const o = v as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => k !== 'key' && k !== 'keyHash' && k !== 'metadata');
  if (extra.length > 0) return { error: `has unknown fields ${extra.map((k) => quote(k)).join(', ')}` };
  const meta = o['metadata'] === undefined ? {} : { metadata: o['metadata'] };
  if (o['key'] !== undefined && o['keyHash'] !== undefined) return { error: 'has both key and keyHash' };
  if (o['key'] !== undefined) {
    if (hashedOnly)
      return { error: 'holds a raw key; ConfigMaps may only hold hashed keys ({"keyHash": "sha256:<hex>"})' };
    if (typeof o['key'] !== 'string' || o['key'] === '')
      return { error: 'has a key that is not a non-empty string' };
    return { key: o['key'], ...meta };
  }
  if (o['keyHash'] !== undefined) {
    if (typeof o['keyHash'] !== 'string' || !KEY_HASH.test(o['keyHash']))
      return { error: 'has a keyHash that is not sha256:<64 hex digits>' };
    return { keyHash: o['keyHash'], ...meta };
  }
  return { error: 'has neither key nor keyHash' };
}
