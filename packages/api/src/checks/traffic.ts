// Checks of traffic policies (the standalone TrafficPolicies shape) that the schema cannot make: CEL
// expressions compile, JWKS documents parse, htpasswd lines carry a supported hash, ext_authz sends no
// pseudo-headers over HTTP, and the either/or rules of the agentgateway forms. Each block has its own
// function so a caller that maps another shape (the controller's GwPolicy) can check one block at its
// own field path.
import type { ExplicitOrConditional } from '../config/conditional.ts';
import {
  type Authorization,
  EXTPROC_GRPC_METADATA_NAMESPACE,
  type ExtAuthz,
  type ExtProc,
  type RemoteRateLimit,
  type TrafficPolicies,
} from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { parseGoDuration } from '../duration.ts';
import { checkTls } from './backend.ts';
import { checkCel, checkCelMap } from './cel.ts';
import { isCidr } from './cidr.ts';
import { checkExplicitOrConditional } from './conditional.ts';
import { parseHtpasswd } from './htpasswd.ts';
import { checkJwks } from './jwks.ts';
import { checkMcpAuthentication } from './mcp-authentication.ts';
import type { Problem } from './problem.ts';
import { checkTransformations } from './transformations.ts';

type JwtAuth = NonNullable<TrafficPolicies['jwtAuth']>;
type BasicAuth = NonNullable<TrafficPolicies['basicAuth']>;
type Delay = NonNullable<TrafficPolicies['delay']>;
export type TokenLocation = NonNullable<JwtAuth['location']>;

/** Every check of a traffic policy block, in the order the fields are listed in the problems. */
export function checkTrafficPolicies(p: TrafficPolicies, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (p.delay) out.push(...checkDelay(p.delay, [...path, 'delay']));
  if (p.authorization) out.push(...checkAuthorization(p.authorization, [...path, 'authorization']));
  for (const k of ['jwtAuth', 'basicAuth', 'apiKey'] as const) {
    const loc = p[k]?.location;
    if (loc) out.push(...checkTokenLocation(loc, [...path, k, 'location']));
  }
  if (p.extAuthz) out.push(...checkExtAuthz(p.extAuthz, [...path, 'extAuthz']));
  if (p.extProc)
    out.push(
      ...checkExplicitOrConditional(p.extProc, [...path, 'extProc'], (e, at) => [
        ...serviceTls(e, at),
        ...checkExtProcCel(e, at),
      ]),
    );
  if (p.localRateLimit) {
    // a bucket's key is CEL (the spec's form has none)
    const key = (l: object, at: FieldPath) =>
      'key' in l && typeof l.key === 'string' ? checkCel(l.key, [...at, 'key']) : [];
    const lp = [...path, 'localRateLimit'];
    out.push(
      ...(Array.isArray(p.localRateLimit)
        ? p.localRateLimit.flatMap((l, i) => key(l, [...lp, i]))
        : checkExplicitOrConditional(p.localRateLimit, lp, key)),
    );
  }
  if (p.remoteRateLimit) out.push(...checkRemoteRateLimit(p.remoteRateLimit, [...path, 'remoteRateLimit']));
  if (p.mcpRemoteRateLimit) {
    const at = [...path, 'mcpRemoteRateLimit'];
    out.push(...checkRemoteRateLimit(p.mcpRemoteRateLimit, at));
    // an MCP request has no LLM usage to count: a tokens descriptor would never be sent
    p.mcpRemoteRateLimit.descriptors.forEach((d, i) => {
      if (d.type === 'tokens')
        out.push({
          path: [...at, 'descriptors', i, 'type'],
          message: 'an MCP request has no LLM usage: mcpRemoteRateLimit counts requests',
        });
    });
  }
  if (p.concurrencyLimit)
    out.push(...checkConcurrencyLimit(p.concurrencyLimit, [...path, 'concurrencyLimit']));
  if (p.directResponse) out.push(...checkDirectResponse(p.directResponse, [...path, 'directResponse']));
  for (const k of ['condition', 'precondition'] as const) {
    const expr = p.retry?.[k];
    if (expr !== undefined) out.push(...checkCel(expr, [...path, 'retry', k]));
  }
  if (p.jwtAuth) out.push(...checkJwtAuth(p.jwtAuth, [...path, 'jwtAuth']));
  if (p.basicAuth) out.push(...checkBasicAuth(p.basicAuth, [...path, 'basicAuth']));
  if (p.mcpAuthentication)
    out.push(...checkMcpAuthentication(p.mcpAuthentication, [...path, 'mcpAuthentication']));
  if (p.transformations) out.push(...checkTransformations(p.transformations, [...path, 'transformations']));
  if (p.ipAccessControl) out.push(...checkIpAccessControl(p.ipAccessControl, [...path, 'ipAccessControl']));
  return out;
}

/** concurrencyLimit's keys and limit overrides (and the conditional form's conditions) are CEL. */
export function checkConcurrencyLimit(
  p: NonNullable<TrafficPolicies['concurrencyLimit']>,
  path: FieldPath,
): Problem[] {
  const keys = (l: { key?: string | undefined; limitOverride?: string | undefined }, at: FieldPath) => [
    ...(l.key === undefined ? [] : checkCel(l.key, [...at, 'key'])),
    ...(l.limitOverride === undefined ? [] : checkCel(l.limitOverride, [...at, 'limitOverride'])),
  ];
  if (Array.isArray(p)) return p.flatMap((l, i) => keys(l, [...path, i]));
  return checkExplicitOrConditional(p, path, keys);
}

/** ipAccessControl's lists hold addresses and CIDRs. */
export function checkIpAccessControl(
  p: NonNullable<TrafficPolicies['ipAccessControl']>,
  path: FieldPath,
): Problem[] {
  const out: Problem[] = [];
  for (const k of ['allow', 'deny'] as const)
    p[k]?.forEach((c, i) => {
      if (!isCidr(c))
        out.push({
          path: [...path, k, i],
          message: `expected an IP address or CIDR such as 10.0.0.0/8 or 2001:db8::/32, got ${JSON.stringify(c)}`,
        });
      // clients' IPv4 addresses are matched as IPv4: a mapped range would never match one
      else if (/^::ffff:[0-9]+\./i.test(c))
        out.push({
          path: [...path, k, i],
          message: `${c} is IPv4-mapped: write it as an IPv4 address or CIDR, as client addresses are matched`,
        });
    });
  return out;
}

/** A delay is a duration or a CEL expression giving one; a conditional delay's conditions are CEL. */
export function checkDelay(d: Delay, path: FieldPath): Problem[] {
  const items = 'conditional' in d ? d.conditional : [d];
  return items.flatMap((item, i) => {
    const ip = 'conditional' in d ? [...path, 'conditional', i] : path;
    const out: Problem[] = [];
    if ('condition' in item && typeof item.condition === 'string')
      out.push(...checkCel(item.condition, [...ip, 'condition']));
    if (parseGoDuration(item.duration) === undefined)
      out.push(...checkCel(item.duration, [...ip, 'duration']));
    return out;
  });
}

/** One authorization block or a list of them; each rule or match expression is CEL. */
export function checkAuthorization(a: Authorization | Authorization[], path: FieldPath): Problem[] {
  const blocks = Array.isArray(a) ? a : [a];
  return blocks.flatMap((b, bi) => {
    const bp = Array.isArray(a) ? [...path, bi] : path;
    if ('rules' in b) {
      return b.rules.flatMap((r, ri) => {
        const expr = typeof r === 'string' ? r : 'allow' in r ? r.allow : 'deny' in r ? r.deny : r.require;
        const key = typeof r === 'string' ? [] : [Object.keys(r)[0] as string];
        return checkCel(expr, [...bp, 'rules', ri, ...key]);
      });
    }
    return b.policy.matchExpressions.flatMap((e, ei) =>
      checkCel(e, [...bp, 'policy', 'matchExpressions', ei]),
    );
  });
}

/** A credential location given by a CEL expression. */
export function checkTokenLocation(loc: TokenLocation, path: FieldPath): Problem[] {
  return 'expression' in loc ? checkCel(loc.expression, [...path, 'expression']) : [];
}

/** An extAuthz policy, plain or conditional: each check's CEL fields and the headers it may send. */
export function checkExtAuthz(e: ExplicitOrConditional<ExtAuthz>, path: FieldPath): Problem[] {
  return checkExplicitOrConditional(e, path, checkOneExtAuthz);
}

function checkOneExtAuthz(e: ExtAuthz, path: FieldPath): Problem[] {
  const tls = e.policies?.backendTLS;
  const out: Problem[] = tls ? checkTls(tls, [...path, 'policies', 'backendTLS']) : [];
  if (e.cache) {
    e.cache.key.forEach((k, i) => {
      out.push(...checkCel(k, [...path, 'cache', 'key', i]));
    });
    out.push(...checkCel(e.cache.ttl, [...path, 'cache', 'ttl']));
  }
  if ('grpc' in e)
    return [...out, ...checkCelMap(e.grpc.requestMetadata, [...path, 'grpc', 'requestMetadata'])];
  const hp = [...path, 'http'];
  for (const f of ['path', 'redirect', 'body'] as const) {
    const v = e.http[f];
    if (v !== undefined) out.push(...checkCel(v, [...hp, f]));
  }
  out.push(...checkCelMap(e.http.addRequestHeaders, [...hp, 'addRequestHeaders']));
  out.push(...checkCelMap(e.http.responseMetadata, [...hp, 'responseMetadata']));
  const pseudo = (p: FieldPath, h: string) => {
    if (h.startsWith(':')) out.push({ path: p, message: `pseudo-header ${h} cannot be sent over HTTP` });
  };
  for (const [i, h] of (e.http.allowedRequestHeaders ?? []).entries())
    pseudo([...hp, 'allowedRequestHeaders', i], h);
  for (const h of Object.keys(e.http.addRequestHeaders ?? {}))
    if (h.toLowerCase() !== ':method') pseudo([...hp, 'addRequestHeaders', h], h);
  for (const [i, h] of (e.http.allowedResponseHeaders ?? []).entries())
    pseudo([...hp, 'allowedResponseHeaders', i], h);
  return out;
}

/** The attributes and the metadata context are CEL; the gRPC metadata's keys are metadata keys. */
export function checkExtProcCel(
  e: Pick<ExtProc, 'metadataContext' | 'requestAttributes' | 'responseAttributes'>,
  path: FieldPath,
): Problem[] {
  const out: Problem[] = [
    ...checkCelMap(e.requestAttributes, [...path, 'requestAttributes']),
    ...checkCelMap(e.responseAttributes, [...path, 'responseAttributes']),
  ];
  for (const [ns, fields] of Object.entries(e.metadataContext ?? {})) {
    out.push(...checkCelMap(fields, [...path, 'metadataContext', ns]));
    if (ns !== EXTPROC_GRPC_METADATA_NAMESPACE) continue;
    for (const k of Object.keys(fields))
      if (!/^[0-9a-z_.-]+$/.test(k) || k.endsWith('-bin') || k.startsWith('grpc-'))
        out.push({
          path: [...path, 'metadataContext', ns, k],
          message: 'a gRPC metadata key: lower-case letters, digits, _ . and -; not grpc-*, not *-bin',
        });
  }
  return out;
}

/** Each descriptor entry's value, cost and limitOverride are CEL (in every entry of the conditional form). */
export function checkRemoteRateLimit(r: ExplicitOrConditional<RemoteRateLimit>, path: FieldPath): Problem[] {
  return checkExplicitOrConditional(r, path, checkOneRemoteRateLimit);
}

/** A service's policies.backendTLS (extProc, remoteRateLimit). */
function serviceTls(
  e: { policies?: { backendTLS?: Parameters<typeof checkTls>[0] | undefined } | null | undefined },
  path: FieldPath,
): Problem[] {
  const tls = e.policies?.backendTLS;
  return tls ? checkTls(tls, [...path, 'policies', 'backendTLS']) : [];
}

function checkOneRemoteRateLimit(r: RemoteRateLimit, path: FieldPath): Problem[] {
  return [
    ...serviceTls(r, path),
    ...r.descriptors.flatMap((d, di) => [
      ...d.entries.flatMap((e, ei) =>
        checkCel(e.value, [...path, 'descriptors', di, 'entries', ei, 'value']),
      ),
      ...(['cost', 'limitOverride'] as const).flatMap((k) => {
        const expr = d[k];
        return expr === undefined ? [] : checkCel(expr, [...path, 'descriptors', di, k]);
      }),
    ]),
  ];
}

type DirectResponse = NonNullable<TrafficPolicies['directResponse']>;
type DirectResponseBody = Exclude<DirectResponse, { conditional: unknown }>;

/** A direct response's header expressions and bodyExpression are CEL (in every conditional entry). */
export function checkDirectResponse(d: DirectResponse, path: FieldPath): Problem[] {
  return checkExplicitOrConditional<DirectResponse, DirectResponseBody>(d, path, (r, at) => [
    ...(r.bodyExpression != null ? checkCel(r.bodyExpression, [...at, 'bodyExpression']) : []),
    ...checkCelMap(r.headers, [...at, 'headers']),
  ]);
}

/** Providers or agentgateway's single issuer/jwks form, not both; inline JWKS documents parse. */
export function checkJwtAuth(j: JwtAuth, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (!j.providers && !(j.issuer && j.jwks)) out.push({ path, message: 'set providers, or issuer and jwks' });
  if (j.providers && (j.issuer || j.jwks))
    out.push({ path, message: 'use either providers or issuer/jwks, not both' });
  // they would hold for no provider: each provider of the list has its own
  for (const k of ['audiences', 'jwtValidationOptions'] as const)
    if (j.providers && j[k] !== undefined)
      out.push({ path: [...path, k], message: `with providers, set ${k} on each provider` });
  const providers = j.providers ?? (j.issuer && j.jwks ? [{ issuer: j.issuer, jwks: j.jwks }] : []);
  providers.forEach((prov, i) => {
    const pp = j.providers ? [...path, 'providers', i, 'jwks'] : [...path, 'jwks'];
    if ('inline' in prov.jwks) out.push(...checkJwks(prov.jwks.inline, pp));
  });
  return out;
}

/**
 * Exactly one of users and htpasswd text; every line a supported hash. An htpasswd file not read yet
 * (still `{file}`) is the caller's to read first.
 */
export function checkBasicAuth(b: BasicAuth, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (Boolean(b.users) === Boolean(b.htpasswd))
    out.push({ path, message: 'set exactly one of users and htpasswd' });
  const lines = b.users ?? (typeof b.htpasswd === 'string' ? b.htpasswd.split('\n') : []);
  for (const problem of parseHtpasswd(lines).problems) {
    out.push({
      path: b.users ? [...path, 'users', problem.index] : [...path, 'htpasswd'],
      message: problem.message,
    });
  }
  return out;
}
