// What every GwPolicy section mapper shares: the namespace and the snapshot to resolve references in,
// the problems found so far, and the helpers that resolve Secrets, ConfigMaps and Services.
//
// Rules chosen here (the CRDs leave them to the implementation):
// - A Service backendRef becomes `<name>.<namespace>.svc.cluster.local:<port>` (ext_authz, rate limit
//   service); a JWKS backendRef becomes the URL `http://<that>` (`https://` when the Service port says
//   appProtocol https or is 443). JWKS remote has no path field, so the keys must be served at `/`.
// - Enum values are written in the standalone's agentgateway spelling (`strict`, `failOpen`).
// - Fail closed, per policy, when a referenced Secret/ConfigMap/Service or key is missing:
//   JWT: the provider gets an empty JWKS (its tokens are rejected, 401) and the mode becomes strict;
//   API key: no keys and mode strict (401); ext_authz: failureMode failClosed (or, with no address at
//   all, the deny-all rule below); basic auth: the standalone loader requires users or htpasswd and has
//   no "nobody" form, so the policy is left out and an authorization rule `Deny: true` is added (403).
//   Backend settings cannot express "refuse": `failClosed` tells the caller not to use the backend.
// - What @gw/api's checks refuse (a CEL expression that does not compile, a JWKS that is not one, …)
//   makes the whole policy invalid: `invalid` collects those problems at their CRD field paths.
import {
  type BackendTLS,
  type FieldPath,
  type Problem,
  SERVICE_CALL_TOKEN_FORMS,
  type TrafficPolicies,
} from '@gw/api';
import { notBuiltMessage } from '@gw/api/crd/types';
import { referenceGrants } from '../grants.ts';
import type { Lookup } from '../types.ts';

export const CLUSTER_DOMAIN = 'cluster.local';
/** An authorization block that denies every request: the fail-closed form when nothing else can say so. */
export const DENY_ALL = { action: 'Deny', policy: { matchExpressions: ['true'] } } as const;
/** A JWKS no token verifies against. */
export const EMPTY_JWKS = '{"keys":[]}';

export class MapContext {
  /** What could not be translated, each prefixed with its field path (the policy still attaches). */
  readonly problems: string[] = [];
  /** What @gw/api's checks refused, at CRD field paths (the policy does not attach). */
  readonly invalid: Problem[] = [];
  /** A backend setting that cannot be honoured: the backend must not be used. */
  failClosed = false;
  readonly namespace: string;
  readonly lookup: Lookup;
  /** The kind of the object being translated, as a ReferenceGrant names what refers (GwPolicy, …). */
  readonly owner: string;
  /**
   * What GwPolicies on a Service give calls to it (attachment.ts servicePolicies); set where a caller
   * takes them (the OTLP collectors of frontend sections).
   */
  services?: ServicePolicyLookup;
  constructor(namespace: string, lookup: Lookup, owner = 'GwPolicy') {
    this.namespace = namespace;
    this.lookup = lookup;
    this.owner = owner;
  }
  problem(field: string, message: string): void {
    this.problems.push(`${field}: ${message}`);
  }
  unsupported(field: string): void {
    // the words of the CRD field's description and of the standalone loader's refusal
    this.problems.push(notBuiltMessage(field));
  }
  /** Reports every key of `block` the caller did not translate. */
  rest(field: string, block: object, handled: readonly string[]): void {
    for (const [k, v] of Object.entries(block)) {
      if (v !== undefined && !handled.includes(k)) this.unsupported(`${field}.${k}`);
    }
  }
  /** Records what a check of @gw/api found. */
  check(problems: readonly Problem[]): void {
    this.invalid.push(...problems);
  }
}

/** Where a section is: its field for problem strings (`traffic.cors`) and its CRD path for checks. */
export interface At {
  field: string;
  path: FieldPath;
}

/** `at` one level down. */
export const below = (at: At, key: string): At => ({ field: `${at.field}.${key}`, path: [...at.path, key] });

/** A copy without the keys whose value is undefined (the standalone shapes are strict objects). */
export function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export const lowerFirst = <S extends string>(s: S) =>
  (s.charAt(0).toLowerCase() + s.slice(1)) as Uncapitalize<S>;

export const quote = JSON.stringify;

interface ObjectRef {
  group?: string | undefined;
  kind?: string | undefined;
  name: string;
}

/** The decoded value of `key` in a Secret (base64 data) or a ConfigMap (plain data). */
export function readKey(
  ctx: MapContext,
  field: string,
  kind: 'Secret' | 'ConfigMap',
  name: string,
  key: string,
): string | undefined {
  const obj = ctx.lookup.get(kind, ctx.namespace, name);
  const what = `${kind.toLowerCase()} ${quote(name)}`;
  if (!obj) {
    ctx.problem(field, `${what} not found`);
    return undefined;
  }
  const raw = obj.data?.[key];
  if (raw === undefined) {
    ctx.problem(field, `${what} has no key ${quote(key)}`);
    return undefined;
  }
  return kind === 'Secret' ? decodeBase64(raw) : raw;
}

/** Secret values are base64 in `data`. */
export function decodeBase64(b64: string): string {
  return Buffer.from(b64, 'base64').toString('utf8');
}

/** A LocalSecretObjectRef/LocalSecretKeyRef may name only a core Secret. */
export function isSecretRef(ctx: MapContext, field: string, ref: ObjectRef): boolean {
  if ((ref.group ?? '') === '' && (ref.kind ?? 'Secret') === 'Secret') return true;
  ctx.problem(field, `only a Secret can be referenced, not ${quote(`${ref.group ?? ''}/${ref.kind ?? ''}`)}`);
  return false;
}

export function isPem(ctx: MapContext, field: string, what: string, text: string): boolean {
  // The loader reads a string without a PEM header as a file path: never hand it one from a Secret.
  if (text.includes('-----BEGIN')) return true;
  ctx.problem(field, `${what} is not PEM`);
  return false;
}

interface BackendRef {
  group: string;
  kind: string;
  name: string;
  namespace?: string | undefined;
  port?: number | undefined;
}

export interface ServiceAddress {
  /** `<name>.<namespace>.svc.cluster.local:<port>` */
  hostPort: string;
  https: boolean;
  /** false when the Service or its port is not in the snapshot (a problem was reported). */
  resolved: boolean;
  /** The backend sections of GwPolicies on the Service (its port), when ctx.services is set. */
  policies?: Record<string, unknown>;
}

/**
 * What a call to a Service (an OTLP export) takes of the GwPolicies on it: their backendTLS; any
 * other setting of theirs is named in a problem, not applied.
 */
export function serviceBackendTls(
  ctx: MapContext,
  field: string,
  svc: ServiceAddress | undefined,
): BackendTLS | undefined {
  return servicePolicyParts(ctx, field, svc, undefined).backendTLS;
}

/** The backendAuth forms a call to a policy's own service takes (the standalone's serviceTokenAuth). */
const SERVICE_AUTH_FORMS: readonly string[] = ['key', ...SERVICE_CALL_TOKEN_FORMS];

/**
 * Why a backend's backendAuth cannot go with each call to a policy's own service, if it cannot: a
 * form the call has nothing for (aws signs a body), a credential outside a header, or a Google ID
 * token that does not name its audience (the request's host is not the service's).
 */
function serviceAuthRefusal(auth: unknown): string | undefined {
  if (!auth || typeof auth !== 'object') return 'backendAuth';
  const a = auth as Record<string, unknown>;
  const form = Object.keys(a).find((k) => k !== 'credentials');
  if (form !== undefined && !SERVICE_AUTH_FORMS.includes(form)) return `backendAuth ${form}`;
  const inHeader = (loc: unknown) => loc == null || (typeof loc === 'object' && 'header' in loc);
  const own =
    form === undefined ? undefined : (a[form] as { location?: unknown; type?: string; audience?: string });
  if (own && typeof own === 'object' && !inHeader(own.location))
    return `backendAuth ${form} outside a header`;
  const creds = (a.credentials ?? []) as { location?: unknown }[];
  if (!creds.every((c) => inHeader(c.location))) return 'backendAuth credentials outside a header';
  if (form === 'gcp' && own?.type === 'idToken' && !own.audience)
    return 'backendAuth gcp idToken without an audience';
  return undefined;
}

/**
 * What a check against a Service (extAuth, extProc, rate limits) takes of the GwPolicies on it:
 * their backendTLS, their backendAuth (sent with each call; a form the call cannot carry is named),
 * and their http.requestTimeout as the deadline of each call unless the check sets its own
 * `timeout` (`ownTimeout`, which wins); their other settings are named, not applied.
 */
function servicePolicyParts(
  ctx: MapContext,
  field: string,
  svc: ServiceAddress | undefined,
  call: { ownTimeout: string | undefined } | undefined,
): { backendTLS?: BackendTLS; requestTimeout?: string; backendAuth?: unknown } {
  const { backendTLS, http, backendAuth, ...rest } = (svc?.policies ?? {}) as {
    backendTLS?: BackendTLS;
    http?: { requestTimeout?: string; [k: string]: unknown };
    backendAuth?: unknown;
  };
  const notApplied = Object.keys(rest);
  let auth: unknown;
  if (backendAuth !== undefined) {
    const refused = call ? serviceAuthRefusal(backendAuth) : 'backendAuth';
    if (refused) notApplied.push(refused);
    else auth = backendAuth;
  }
  let requestTimeout: string | undefined;
  if (http && !call) notApplied.push('http');
  else if (http) {
    const { requestTimeout: t, ...others } = http;
    notApplied.push(...Object.keys(others).map((k) => `http.${k}`));
    if (t !== undefined && call?.ownTimeout !== undefined)
      notApplied.push('http.requestTimeout, as the check sets its own timeout');
    else requestTimeout = t;
  }
  if (notApplied.length > 0)
    ctx.problem(
      field,
      `of the GwPolicies on this Service, only backendTLS${call ? ', backendAuth and http.requestTimeout apply' : ' applies'} here (not ${notApplied.join(', ')})`,
    );
  return {
    ...(backendTLS ? { backendTLS } : {}),
    ...(requestTimeout ? { requestTimeout } : {}),
    ...(auth !== undefined ? { backendAuth: auth } : {}),
  };
}

/**
 * The `policies` of a check against a Service (extAuth, extProc, rate limits): the backendTLS of the
 * GwPolicies on it, else TLS with the system's roots when its port says https; their backendAuth;
 * and their http.requestTimeout as each call's deadline, unless the check's own `timeout` is set.
 */
export function serviceCallTls(
  ctx: MapContext,
  field: string,
  svc: ServiceAddress | undefined,
  ownTimeout?: string,
): { policies?: { backendTLS?: BackendTLS; http?: { requestTimeout: string }; backendAuth?: never } } {
  const parts = servicePolicyParts(ctx, field, svc, { ownTimeout });
  const tls = parts.backendTLS ?? (svc?.https ? {} : undefined);
  const policies = {
    ...(tls ? { backendTLS: tls } : {}),
    ...(parts.requestTimeout ? { http: { requestTimeout: parts.requestTimeout } } : {}),
    ...(parts.backendAuth !== undefined ? { backendAuth: parts.backendAuth as never } : {}),
  };
  return Object.keys(policies).length > 0 ? { policies } : {};
}

/**
 * What calls to one port of a Service get from the GwPolicies that target the Service (attachment.ts
 * servicePolicies): their backend sections merged, the oldest policy winning a field two set; or the
 * problem of one that cannot be honoured (a CA that is missing), when nothing may go to the Service.
 */
export type ServicePolicyLookup = (
  namespace: string,
  name: string,
  port: number,
) => { policies?: Record<string, unknown>; problem?: string };

/**
 * The in-cluster address of a Service backendRef; undefined when the reference cannot name one. A
 * Service in another namespace needs a ReferenceGrant there that lets the owner's kind refer to it.
 */
export function serviceAddress(ctx: MapContext, field: string, ref: BackendRef): ServiceAddress | undefined {
  if (ref.group !== '' || ref.kind !== 'Service') {
    ctx.problem(
      field,
      `backendRef kind ${quote(`${ref.group}/${ref.kind}`)} is not supported here; use a Service`,
    );
    return undefined;
  }
  if (ref.port === undefined) {
    ctx.problem(field, 'backendRef port is required for a Service');
    return undefined;
  }
  const ns = ref.namespace ?? ctx.namespace;
  const hostPort = `${ref.name}.${ns}.svc.${CLUSTER_DOMAIN}:${ref.port}`;
  if (
    ns !== ctx.namespace &&
    !referenceGrants(ctx.lookup.list('ReferenceGrant', ns))(ctx.owner, ctx.namespace, 'Service', ns, ref.name)
  ) {
    ctx.problem(
      field,
      `no ReferenceGrant in namespace ${ns} allows this ${ctx.owner} to use service ${quote(ref.name)}`,
    );
    // not an address at all: no caller may send anything there
    return undefined;
  }
  const svc = ctx.lookup.get('Service', ns, ref.name);
  if (!svc) {
    ctx.problem(field, `service ${quote(ns === ctx.namespace ? ref.name : `${ns}/${ref.name}`)} not found`);
    return { hostPort, https: ref.port === 443, resolved: false };
  }
  const ports = (
    (svc.spec as { ports?: { port?: number; appProtocol?: string }[] } | undefined)?.ports ?? []
  ).filter((p) => p.port === ref.port);
  const port = ports[0];
  if (!port) {
    ctx.problem(field, `service ${quote(ref.name)} has no port ${ref.port}`);
    return { hostPort, https: ref.port === 443, resolved: false };
  }
  const https =
    port.appProtocol !== undefined ? port.appProtocol.toLowerCase() === 'https' : ref.port === 443;
  const attached = ctx.services?.(ns, ref.name, ref.port);
  if (attached?.problem) {
    // a GwPolicy on the Service that cannot be honoured (its CA is missing): nothing goes there
    ctx.problem(field, `service ${quote(ref.name)} is not usable: ${attached.problem}`);
    return undefined;
  }
  return { hostPort, https, resolved: true, ...(attached?.policies ? { policies: attached.policies } : {}) };
}

/**
 * A service given by `url`, agentgateway's alternative to a backendRef: its host and port (the
 * scheme's default when none), TLS for https, and the path. Undefined (with a problem) when it is not
 * an http(s) URL without userinfo, query or fragment.
 */
export function urlAddress(
  ctx: MapContext,
  field: string,
  url: string,
): (ServiceAddress & { path: string }) | undefined {
  let u: URL | undefined;
  try {
    u = new URL(url);
  } catch {}
  const https = u?.protocol === 'https:';
  if (
    !u ||
    (u.protocol !== 'http:' && !https) ||
    !u.hostname ||
    u.username ||
    u.password ||
    u.search ||
    u.hash
  ) {
    ctx.problem(
      field,
      `${quote(url)} must be http(s)://host[:port][/path] without userinfo, query or fragment`,
    );
    return undefined;
  }
  return {
    hostPort: `${u.hostname}:${u.port || (https ? 443 : 80)}`,
    https,
    resolved: true,
    path: u.pathname || '/',
  };
}

/**
 * The address of a gRPC service a policy calls (extProc, the rate limit service): its Service
 * backendRef or its `url` (the CRDs allow no path in it); `https` (an https url, or a port whose
 * appProtocol is https) is TLS with the system's roots.
 */
export function grpcAddress(
  ctx: MapContext,
  field: string,
  spec: { backendRef?: BackendRef | undefined; url?: string | undefined },
): ServiceAddress | undefined {
  if (spec.url === undefined)
    return spec.backendRef && serviceAddress(ctx, `${field}.backendRef`, spec.backendRef);
  return urlAddress(ctx, `${field}.url`, spec.url);
}

/** Appends the deny-all block to the authorization of `out`. */
export function addDenyAll(out: TrafficPolicies): void {
  const deny = denyAll();
  if (out.authorization === undefined) out.authorization = deny;
  else out.authorization = [out.authorization, deny].flat();
}

/** A fresh copy of DENY_ALL (the output is mutable). */
export const denyAll = () => ({
  action: DENY_ALL.action,
  policy: { matchExpressions: [...DENY_ALL.policy.matchExpressions] },
});

/**
 * Name/value lists → the standalone's maps; a name listed twice keeps its last value. Header names
 * compare case-insensitively, attribute names exactly.
 */
export function nameMap(
  ctx: MapContext,
  field: string,
  list: { name: string; value: string }[],
  what: 'header' | 'attribute',
): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Map<string, string>();
  for (const h of list) {
    const id = what === 'header' ? h.name.toLowerCase() : h.name;
    const earlier = seen.get(id);
    if (earlier !== undefined) {
      ctx.problem(field, `${what} ${quote(h.name)} is listed more than once; the last value is used`);
      delete out[earlier];
    }
    seen.set(id, h.name);
    out[h.name] = h.value;
  }
  return out;
}
