// spec.backend.auth (or GwBackend spec.policies.auth) → backendAuth: key, secretRef (default key
// Authorization, its Bearer prefix dropped), passthrough, aws (a Secret's accessKey/secretKey/
// sessionToken, else the proxy's default chain) and jwtSign (the Secret's signingKey, checked as a
// PEM key of the alg's kind). A missing Secret or key fails closed: the backend is not called without
// the credential it was given. azure, gcp, oauthTokenExchange and crossAppAccess are not in this build.
import { checkSigningKey, type FieldPath } from '@gw/api';
import { defined, isSecretRef, type MapContext, quote, readKey } from '../context.ts';
import type { BackendMapper, BackendPolicies, BackendSpec } from '../spec.ts';
import { tokenLocation } from '../spec.ts';

type AuthSpec = NonNullable<BackendSpec['auth']>;
type BackendAuth = NonNullable<BackendPolicies['backendAuth']>;

/** agentgateway's default key of an auth secretRef. */
const DEFAULT_SECRET_KEY = 'Authorization';

export const auth: BackendMapper<'auth'> = {
  map(spec, ctx, out, at) {
    for (const k of ['azure', 'gcp', 'oauthTokenExchange', 'crossAppAccess'] as const)
      if (spec[k] !== undefined) ctx.unsupported(`${at.field}.${k}`);
    const r = backendAuth(ctx, at.field, at.path, spec);
    if (r) out.backendAuth = r;
  },
};

function backendAuth(
  ctx: MapContext,
  field: string,
  path: FieldPath,
  spec: AuthSpec,
): BackendAuth | undefined {
  if (spec.key !== undefined) return { key: spec.key };
  if (spec.secretRef) {
    const ref = spec.secretRef;
    const f = `${field}.secretRef`;
    const key = ref.key ?? DEFAULT_SECRET_KEY;
    const v = isSecretRef(ctx, f, ref) ? readKey(ctx, f, 'Secret', ref.name, key) : undefined;
    let value = v?.trim();
    // as agentgateway: the prefix is dropped only from the default key
    if (value !== undefined && ref.key === undefined) value = value.replace(/^Bearer\s+/i, '');
    if (!value) {
      if (v !== undefined) ctx.problem(f, `secret ${quote(ref.name)} key ${quote(key)} is empty`);
      ctx.failClosed = true;
      return undefined;
    }
    return { key: value };
  }
  if (spec.passthrough) return { passthrough: {} };
  if (spec.aws) {
    const a = spec.aws;
    const where = defined({ region: a.region, serviceName: a.service });
    if (!a.secretRef) return { aws: where };
    const f = `${field}.aws.secretRef`;
    if (!isSecretRef(ctx, f, a.secretRef)) {
      ctx.failClosed = true;
      return undefined;
    }
    const read = (k: string) => readKey(ctx, f, 'Secret', a.secretRef?.name ?? '', k)?.trim();
    const accessKeyId = read('accessKey');
    const secretAccessKey = read('secretKey');
    const token = ctx.lookup.get('Secret', ctx.namespace, a.secretRef.name)?.data?.sessionToken;
    if (!accessKeyId || !secretAccessKey) {
      ctx.failClosed = true;
      return undefined;
    }
    return {
      aws: {
        accessKeyId,
        secretAccessKey,
        ...(token !== undefined ? { sessionToken: read('sessionToken') } : {}),
        ...where,
      },
    };
  }
  if (spec.jwtSign) {
    const j = spec.jwtSign;
    const f = `${field}.jwtSign.signingKeyRef`;
    const ref = j.signingKeyRef;
    const pem = isSecretRef(ctx, f, ref)
      ? readKey(ctx, f, 'Secret', ref.name, ref.key ?? 'signingKey')
      : undefined;
    if (pem === undefined) {
      ctx.failClosed = true;
      return undefined;
    }
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
  return undefined;
}
