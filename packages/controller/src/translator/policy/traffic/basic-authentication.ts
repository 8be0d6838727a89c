// spec.traffic.basicAuthentication → basicAuth, users inline or htpasswd lines from a Secret. Inline
// users with a hash the proxy cannot verify make the policy invalid; such a line in the Secret is
// skipped (its data is not the policy's spec). No usable users at all: every request is denied.
import { checkBasicAuth, checkTokenLocation, parseHtpasswd } from '@gw/api';
import { addDenyAll, defined, isSecretRef, lowerFirst, type MapContext, quote, readKey } from '../context.ts';
import { type TrafficMapper, type TrafficPolicies, type TrafficSpec, tokenLocation } from '../spec.ts';

type BasicSpec = NonNullable<TrafficSpec['basicAuthentication']>;
type BasicAuth = NonNullable<TrafficPolicies['basicAuth']>;

export const basicAuthentication: TrafficMapper<'basicAuthentication'> = {
  map(spec, ctx, out, at) {
    if (spec.location) ctx.check(checkTokenLocation(tokenLocation(spec.location), [...at.path, 'location']));
    const basic = basicAuth(ctx, at.field, spec);
    if (!basic) {
      addDenyAll(out);
      return;
    }
    out.basicAuth = basic;
    if (basic.users) ctx.check(checkBasicAuth({ users: basic.users }, at.path));
  },
};

/** undefined: no usable users (the caller denies every request). */
function basicAuth(ctx: MapContext, field: string, spec: BasicSpec): BasicAuth | undefined {
  const common = {
    mode: lowerFirst(spec.mode),
    realm: spec.realm,
    location: spec.location && tokenLocation(spec.location),
  };
  if (spec.users) return defined({ ...common, users: [...spec.users] });
  const ref = spec.secretRef;
  if (!ref) return undefined;
  const rf = `${field}.secretRef`;
  const denied = () => {
    ctx.problem(field, 'no usable users: every request is denied');
    return undefined;
  };
  if (!isSecretRef(ctx, rf, ref)) return denied();
  const key = ref.key ?? '.htaccess';
  const text = readKey(ctx, rf, 'Secret', ref.name, key);
  if (text === undefined) return denied();
  const lines = text.split('\n').map((l) => l.trim());
  const { entries, problems } = parseHtpasswd(lines);
  for (const p of problems) {
    // the message names the user, never the line: it holds a password hash
    ctx.problem(
      rf,
      `secret ${quote(ref.name)} key ${quote(key)} line ${p.index + 1}: ${p.message}; it is skipped`,
    );
  }
  if (entries.length === 0) return denied();
  return defined({ ...common, htpasswd: `${entries.map((e) => `${e.user}:${e.hash}`).join('\n')}\n` });
}
