// spec.backend.auth (or GwBackend spec.policies.auth) → backendAuth: key, secretRef (default key
// Authorization, its Bearer prefix dropped) and passthrough, each with its location; aws (a Secret's
// accessKey/secretKey/sessionToken, else the proxy's default chain); jwtSign (the Secret's signingKey,
// checked as a PEM key of the alg's kind); gcp (credential JSON from a Secret, else ambient), azure (a
// service principal from a Secret, a managed or workload identity, else the credential chain);
// oauthTokenExchange and crossAppAccess (token endpoints by Service or URL, client secrets, signing
// keys and certificate chains from Secrets). A missing Secret, key or Service fails closed: the
// backend is not called without the credential it was given. aws.assumeRole: the role the proxy
// assumes with its ambient credentials, its session name and tags (CEL checked here). credentials:
// more Secrets, each written to its location, beside the main form or alone. actorToken.mayAct
// Required: the subject token's may_act must name the actor.
import { checkSigningKey, type FieldPath, type Problem, TOKEN_TYPE } from '@gw/api';
import { checkCel } from '@gw/api/checks/cel';
import {
  defined,
  isSecretRef,
  type MapContext,
  quote,
  readKey,
  serviceAddress,
  urlAddress,
} from '../context.ts';
import type { BackendMapper, BackendPolicies, BackendSpec } from '../spec.ts';
import { tokenLocation } from '../spec.ts';

type AuthSpec = NonNullable<BackendSpec['auth']>;
type BackendAuth = NonNullable<BackendPolicies['backendAuth']>;

/** agentgateway's default key of an auth secretRef. */
const DEFAULT_SECRET_KEY = 'Authorization';

type Standalone<K extends string> = Extract<BackendAuth, Record<K, unknown>>[K &
  keyof Extract<BackendAuth, Record<K, unknown>>];
type Location = NonNullable<AuthSpec['location']>;

export const auth: BackendMapper<'auth'> = {
  map(spec, ctx, out, at) {
    const extra = spec.credentials && credentials(ctx, `${at.field}.credentials`, spec.credentials);
    const r = backendAuth(ctx, at.field, at.path, spec);
    if (extra === undefined) {
      if (r) out.backendAuth = r;
    } else if (r === undefined) {
      // credentials alone, unless the main form failed (it failed closed)
      if (!hasPrimary(spec)) out.backendAuth = { credentials: extra };
    } else if (typeof r === 'object') out.backendAuth = { ...r, credentials: extra } as BackendAuth;
  },
};

const hasPrimary = (spec: AuthSpec) => Object.keys(spec).some((k) => k !== 'credentials' && k !== 'location');

type Credentials = NonNullable<AuthSpec['credentials']>;
type Credential = Credentials[number];

/**
 * auth.credentials: each Secret's value, as it is (trimmed), written where its location says. A
 * missing Secret or key fails closed, as the main form's does.
 */
function credentials(
  ctx: MapContext,
  field: string,
  list: Credentials,
): { location: ReturnType<typeof tokenLocation>; key: string }[] | undefined {
  const out: { location: ReturnType<typeof tokenLocation>; key: string }[] = [];
  list.forEach((c: Credential, i) => {
    const f = `${field}[${i}].secretRef`;
    const ref = c.secretRef;
    const k = ref.key ?? DEFAULT_SECRET_KEY;
    const v = isSecretRef(ctx, f, ref) ? readKey(ctx, f, 'Secret', ref.name, k) : undefined;
    const value = v?.trim();
    if (!value) {
      if (v !== undefined) ctx.problem(f, `secret ${quote(ref.name)} key ${quote(k)} is empty`);
      ctx.failClosed = true;
      return;
    }
    out.push({ location: tokenLocation(c.location), key: value });
  });
  return out.length === list.length ? out : undefined;
}

/** The standalone location of a CRD AuthLocation (header, queryParameter or cookie). */
const authLocation = (l: Location | undefined) => l && (tokenLocation(l) as { header: { name: string } });

function backendAuth(
  ctx: MapContext,
  field: string,
  path: FieldPath,
  spec: AuthSpec,
): BackendAuth | undefined {
  const location = authLocation(spec.location);
  const key = (value: string): BackendAuth => ({ key: location ? { value, location } : value });
  if (spec.key !== undefined) return key(spec.key);
  if (spec.secretRef) {
    const ref = spec.secretRef;
    const f = `${field}.secretRef`;
    const k = ref.key ?? DEFAULT_SECRET_KEY;
    const v = isSecretRef(ctx, f, ref) ? readKey(ctx, f, 'Secret', ref.name, k) : undefined;
    let value = v?.trim();
    // as agentgateway: the prefix is dropped only from the default key
    if (value !== undefined && ref.key === undefined) value = value.replace(/^Bearer\s+/i, '');
    if (!value) {
      if (v !== undefined) ctx.problem(f, `secret ${quote(ref.name)} key ${quote(k)} is empty`);
      ctx.failClosed = true;
      return undefined;
    }
    return key(value);
  }
  if (spec.passthrough) return { passthrough: location ? { location } : {} };
  if (spec.aws) return aws(ctx, `${field}.aws`, path, spec.aws);
  if (spec.jwtSign) return jwtSign(ctx, field, path, spec.jwtSign);
  if (spec.gcp) return gcp(ctx, `${field}.gcp`, spec.gcp);
  if (spec.azure) return azure(ctx, `${field}.azure`, spec.azure);
  if (spec.oauthTokenExchange)
    return tokenExchange(ctx, `${field}.oauthTokenExchange`, spec.oauthTokenExchange);
  if (spec.crossAppAccess) return crossAppAccess(ctx, `${field}.crossAppAccess`, spec.crossAppAccess);
  return undefined;
}

/** A failure that leaves the backend without its credential: not used at all. */
function closed(ctx: MapContext): undefined {
  ctx.failClosed = true;
  return undefined;
}

/** A Secret's key, trimmed; undefined (a problem said why, the backend fails closed) when missing or empty. */
function secretValue(
  ctx: MapContext,
  f: string,
  ref: { group?: string | undefined; kind?: string | undefined; name: string },
  key: string,
): string | undefined {
  if (!isSecretRef(ctx, f, ref)) return closed(ctx);
  const v = readKey(ctx, f, 'Secret', ref.name, key)?.trim();
  if (v === undefined) return closed(ctx);
  if (v === '') {
    ctx.problem(f, `secret ${quote(ref.name)} key ${quote(key)} is empty`);
    return closed(ctx);
  }
  return v;
}

type AssumeRoleSpec = NonNullable<NonNullable<AuthSpec['aws']>['assumeRole']>;

/**
 * The CRD's assumeRole as the standalone's: sessionNameExpression becomes sessionName {expression},
 * tags keep a value or an expression; the expressions checked at `at`.
 */
export function translateAssumeRole(
  r: AssumeRoleSpec,
  at: FieldPath,
): { assumeRole: Record<string, unknown>; invalid: Problem[] } {
  const invalid = [
    ...(r.sessionNameExpression !== undefined
      ? checkCel(r.sessionNameExpression, [...at, 'sessionNameExpression'])
      : []),
    ...(r.tags ?? []).flatMap((t, i) =>
      t.expression !== undefined ? checkCel(t.expression, [...at, 'tags', i, 'expression']) : [],
    ),
  ];
  const sessionName =
    r.sessionNameExpression !== undefined ? { expression: r.sessionNameExpression } : r.sessionName;
  return {
    assumeRole: {
      roleArn: r.roleArn,
      ...(sessionName !== undefined ? { sessionName } : {}),
      ...(r.tags
        ? {
            tags: r.tags.map((t) => ({
              key: t.key,
              ...(t.expression !== undefined ? { expression: t.expression } : { value: t.value ?? '' }),
            })),
          }
        : {}),
    },
    invalid,
  };
}

function aws(
  ctx: MapContext,
  f: string,
  path: FieldPath,
  a: NonNullable<AuthSpec['aws']>,
): BackendAuth | undefined {
  const where = defined({ region: a.region, serviceName: a.serviceName ?? a.service });
  if (a.assumeRole) {
    // the role is assumed with the proxy's ambient credentials (the CRD keeps secretRef apart)
    const r = translateAssumeRole(a.assumeRole, [...path, 'aws', 'assumeRole']);
    // an expression that does not compile makes the policy Invalid, named at its field
    if (r.invalid.length > 0) {
      ctx.check(r.invalid);
      return undefined;
    }
    return { aws: { assumeRole: r.assumeRole, ...where } } as BackendAuth;
  }
  if (!a.secretRef) return { aws: where };
  const rf = `${f}.secretRef`;
  const ref = a.secretRef;
  const accessKeyId = secretValue(ctx, rf, ref, 'accessKey');
  const secretAccessKey = accessKeyId && secretValue(ctx, rf, ref, 'secretKey');
  if (!accessKeyId || !secretAccessKey) return undefined;
  const hasToken = ctx.lookup.get('Secret', ctx.namespace, ref.name)?.data?.sessionToken !== undefined;
  const sessionToken = hasToken ? secretValue(ctx, rf, ref, 'sessionToken') : undefined;
  if (hasToken && !sessionToken) return undefined;
  return { aws: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}), ...where } };
}

function jwtSign(
  ctx: MapContext,
  field: string,
  path: FieldPath,
  j: NonNullable<AuthSpec['jwtSign']>,
): BackendAuth | undefined {
  const f = `${field}.jwtSign.signingKeyRef`;
  const ref = j.signingKeyRef;
  const pem = isSecretRef(ctx, f, ref)
    ? readKey(ctx, f, 'Secret', ref.name, ref.key ?? 'signingKey')
    : undefined;
  if (pem === undefined) return closed(ctx);
  // The same check the loader makes, at the CRD's field; a key that fails it is never handed on
  // (the loader would read a string that is not PEM as a file path).
  const bad = checkSigningKey(pem, j.alg, [...path, 'jwtSign', 'signingKeyRef']);
  if (bad.length > 0) {
    ctx.check(bad);
    return undefined;
  }
  return {
    jwtSign: defined({
      signingKey: pem,
      alg: j.alg,
      kid: j.kid,
      // reserved claims go on as they are, for @gw/api's check to name them
      claims: j.claims && defined({ ...j.claims }),
      ttl: j.ttl,
      location: j.location && tokenLocation(j.location),
    }),
  };
}

function gcp(ctx: MapContext, f: string, g: NonNullable<AuthSpec['gcp']>): BackendAuth | undefined {
  let credential: string | undefined;
  if (g.secretRef) {
    const rf = `${f}.secretRef`;
    const k = g.secretRef.key ?? 'credentials.json';
    credential = secretValue(ctx, rf, g.secretRef, k);
    if (credential === undefined) return undefined;
    // the loader reads a string that is not a JSON object as a file path: never hand it one
    let ok = false;
    try {
      const v = JSON.parse(credential) as unknown;
      ok = typeof v === 'object' && v !== null && !Array.isArray(v) && 'type' in v;
    } catch {}
    if (!ok) {
      ctx.problem(
        rf,
        `secret ${quote(g.secretRef.name)} key ${quote(k)} is not a Google credential JSON object`,
      );
      return closed(ctx);
    }
  }
  return {
    gcp: defined({
      type:
        g.type === 'IdToken'
          ? ('idToken' as const)
          : g.type === 'AccessToken'
            ? ('accessToken' as const)
            : undefined,
      audience: g.audience,
      credential,
    }),
  };
}

function azure(ctx: MapContext, f: string, a: NonNullable<AuthSpec['azure']>): BackendAuth | undefined {
  if (a.secretRef) {
    const rf = `${f}.secretRef`;
    const client_id = secretValue(ctx, rf, a.secretRef, 'clientID');
    const tenant_id = client_id && secretValue(ctx, rf, a.secretRef, 'tenantID');
    const client_secret = tenant_id && secretValue(ctx, rf, a.secretRef, 'clientSecret');
    if (!client_id || !tenant_id || !client_secret) return undefined;
    return { azure: { explicitConfig: { clientSecret: { tenant_id, client_id, client_secret } } } };
  }
  if (a.managedIdentity) {
    const m = a.managedIdentity;
    const userAssignedIdentity =
      m.clientId !== undefined
        ? { clientId: m.clientId }
        : m.objectId !== undefined
          ? { objectId: m.objectId }
          : m.resourceId !== undefined
            ? { resourceId: m.resourceId }
            : undefined;
    for (const [k, v] of Object.entries(m))
      if (v === '') {
        ctx.problem(`${f}.managedIdentity.${k}`, 'must not be empty');
        return closed(ctx);
      }
    return {
      azure: { explicitConfig: { managedIdentity: userAssignedIdentity ? { userAssignedIdentity } : {} } },
    };
  }
  if (a.workloadIdentity) return { azure: { explicitConfig: { workloadIdentity: {} } } };
  return { azure: { implicit: {} } };
}

type TokenExchangeSpec = NonNullable<AuthSpec['oauthTokenExchange']>;
type CrossAppSpec = NonNullable<AuthSpec['crossAppAccess']>;
type EndpointSpec = CrossAppSpec['identityProvider'];
type ClientAuthSpec = EndpointSpec['clientAuth'];

/** A token endpoint: host:port, path and TLS; undefined (a problem said why) when it names none. */
function endpoint(
  ctx: MapContext,
  f: string,
  e: Pick<EndpointSpec, 'backendRef' | 'url' | 'path'>,
): { host: string; path: string; policies?: { backendTLS: Record<string, never> } } | undefined {
  const tls = (on: boolean) => (on ? { policies: { backendTLS: {} } } : {});
  if (e.backendRef !== undefined && e.url === undefined) {
    const svc = serviceAddress(ctx, `${f}.backendRef`, e.backendRef);
    if (!svc?.resolved) return closed(ctx);
    return { host: svc.hostPort, path: e.path ?? '/', ...tls(svc.https) };
  }
  if (e.url === undefined || e.backendRef !== undefined) {
    ctx.problem(f, 'exactly one of backendRef or url must be set');
    return closed(ctx);
  }
  const u = urlAddress(ctx, `${f}.url`, e.url);
  if (!u) return closed(ctx);
  if (e.path !== undefined) {
    ctx.problem(`${f}.path`, 'path may not be set when url is set');
    return closed(ctx);
  }
  return { host: u.hostPort, path: u.path, ...tls(u.https) };
}

type ClientAuthOut = NonNullable<Standalone<'oauthTokenExchange'>['clientAuth']>;

function clientAuth(ctx: MapContext, f: string, c: ClientAuthSpec): ClientAuthOut | undefined {
  if (c.privateKeyJwt || c.method === 'PrivateKeyJwt') {
    const p = c.privateKeyJwt;
    if (!p) {
      ctx.problem(`${f}.privateKeyJwt`, 'method PrivateKeyJwt needs privateKeyJwt');
      return closed(ctx);
    }
    // a certificate credential: the chain from its Secret, sent in the assertion's header
    let certificate: string | undefined;
    if (p.certificateRef !== undefined) {
      const cf = `${f}.privateKeyJwt.certificateRef`;
      certificate = secretValue(ctx, cf, p.certificateRef, p.certificateRef.key ?? 'certificate');
      if (certificate === undefined) return undefined;
      if (!certificate.includes('-----BEGIN CERTIFICATE-----')) {
        ctx.problem(cf, 'not a PEM certificate chain (-----BEGIN CERTIFICATE-----)');
        return closed(ctx);
      }
    }
    const kf = `${f}.privateKeyJwt.signingKeyRef`;
    const pem = secretValue(ctx, kf, p.signingKeyRef, p.signingKeyRef.key ?? 'signingKey');
    if (pem === undefined) return undefined;
    const alg = p.alg ?? 'RS256';
    const bad = checkSigningKey(pem, alg, []);
    if (bad.length > 0) {
      for (const b of bad) ctx.problem(kf, b.message);
      return closed(ctx);
    }
    return defined({
      method: 'privateKeyJwt' as const,
      clientId: c.clientId,
      signingKey: pem,
      alg,
      kid: p.kid,
      assertionAudience: p.assertionAudience,
      certificate,
      certificateHeader: p.certificateHeader,
    });
  }
  const method = c.method === 'ClientSecretPost' ? 'clientSecretPost' : 'clientSecretBasic';
  if (!c.secretRef) {
    if (method !== 'clientSecretPost') {
      ctx.problem(f, 'clientAuth without secretRef requires method ClientSecretPost or PrivateKeyJwt');
      return closed(ctx);
    }
    return { method, clientId: c.clientId };
  }
  const secret = secretValue(ctx, `${f}.secretRef`, c.secretRef, c.secretRef.key ?? 'clientSecret');
  if (secret === undefined) return undefined;
  return { method, clientId: c.clientId, clientSecret: secret } as ClientAuthOut;
}

/** RFC 8693 token type URNs by the CRD's short names; any other value is a URN already. */
function tokenType(t: string | undefined): string | undefined {
  if (t === undefined || t === '') return undefined;
  const short: Record<string, string> = {
    AccessToken: TOKEN_TYPE.accessToken,
    IdToken: TOKEN_TYPE.idToken,
    Jwt: TOKEN_TYPE.jwt,
    IdJag: TOKEN_TYPE.idJag,
  };
  return short[t] ?? t;
}

function cache(c: TokenExchangeSpec['cache']) {
  const m = c?.inMemory;
  return m && defined({ maxEntries: m.maxEntries, defaultTtl: m.defaultTtl });
}

function tokenExchange(ctx: MapContext, f: string, t: TokenExchangeSpec): BackendAuth | undefined {
  const e = endpoint(ctx, f, t);
  const client = t.clientAuth && clientAuth(ctx, `${f}.clientAuth`, t.clientAuth);
  if (!e || (t.clientAuth && !client)) return undefined;
  const out = defined({
    ...e,
    grantType:
      t.grantType === 'JwtBearer' ? ('jwtBearer' as const) : t.grantType && ('tokenExchange' as const),
    subjectToken:
      t.subjectToken &&
      defined({
        source: t.subjectToken.source && tokenLocation(t.subjectToken.source),
        tokenType: tokenType(t.subjectToken.tokenType),
      }),
    actorToken:
      t.actorToken &&
      defined({
        source: tokenLocation(t.actorToken.source),
        tokenType: tokenType(t.actorToken.tokenType),
        // may_act Required: the subject token must name this actor
        enforceMayAct: t.actorToken.mayAct === 'Required' ? true : undefined,
      }),
    audiences: t.audiences && [...t.audiences],
    scopes: t.scopes && [...t.scopes],
    resources: t.resources && [...t.resources],
    requestedTokenType: tokenType(t.requestedTokenType),
    clientAuth: client,
    additionalParams: t.additionalParams && { ...t.additionalParams },
    authorizationLocation: authLocation(t.location),
    cache: cache(t.cache),
  });
  return { oauthTokenExchange: out } as BackendAuth;
}

function crossAppAccess(ctx: MapContext, f: string, c: CrossAppSpec): BackendAuth | undefined {
  const side = (k: 'identityProvider' | 'resourceAuthorizationServer') => {
    const e = endpoint(ctx, `${f}.${k}`, c[k]);
    const client = clientAuth(ctx, `${f}.${k}.clientAuth`, c[k].clientAuth);
    return e && client ? { ...e, clientAuth: client } : undefined;
  };
  const identityProvider = side('identityProvider');
  const resourceAuthorizationServer = side('resourceAuthorizationServer');
  if (!identityProvider || !resourceAuthorizationServer) return undefined;
  const out = defined({
    identityProvider,
    resourceAuthorizationServer,
    audience: c.audience,
    resources: c.resources && [...c.resources],
    scopes: c.scopes && [...c.scopes],
    accessTokenScopes: c.accessTokenScopes && [...c.accessTokenScopes],
    subjectToken:
      c.subjectToken &&
      defined({
        source: c.subjectToken.source && tokenLocation(c.subjectToken.source),
        tokenType: tokenType(c.subjectToken.tokenType),
      }),
    cache: cache(c.cache),
  });
  return { crossAppAccess: out } as BackendAuth;
}
