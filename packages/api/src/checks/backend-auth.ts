// Checks of backendAuth the schema cannot make: a jwtSign key must be a PEM private key of the kind
// its alg signs with, the claims the signer sets itself cannot be configured, and a credential can
// only be written where a request carries one (not to a CEL expression).
import { createPrivateKey } from 'node:crypto';
import { type BackendAuth, JWT_SIGN_RESERVED_CLAIMS } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

type JwtSignAlg = NonNullable<Extract<BackendAuth, { jwtSign: unknown }>['jwtSign']['alg']>;

/** The key type and curve each algorithm needs. */
const KEY_FOR: Record<JwtSignAlg, { type: 'rsa' | 'ec'; curve?: string; what: string }> = {
  RS256: { type: 'rsa', what: 'an RSA' },
  RS384: { type: 'rsa', what: 'an RSA' },
  RS512: { type: 'rsa', what: 'an RSA' },
  PS256: { type: 'rsa', what: 'an RSA' },
  ES256: { type: 'ec', curve: 'prime256v1', what: 'a P-256 EC' },
  ES384: { type: 'ec', curve: 'secp384r1', what: 'a P-384 EC' },
};

/**
 * `backendAuth` in the standalone shape. A jwtSign key given inline is checked here; one in a file is
 * checked by the loader with checkSigningKey once it has read it.
 */
export function checkBackendAuth(a: BackendAuth, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (typeof a !== 'object' || a === null) return out;
  const location = (v: { location?: unknown } | undefined, at: FieldPath) => {
    if (v?.location && typeof v.location === 'object' && 'expression' in v.location)
      out.push({
        path: [...at, 'location', 'expression'],
        message:
          'a backend credential cannot be written to an expression; use a header, query parameter or cookie',
      });
  };
  if ('credentials' in a)
    (a.credentials ?? []).forEach((c, i) => {
      location(c, [...path, 'credentials', i]);
    });
  if ('key' in a && typeof a.key === 'object' && 'value' in a.key) location(a.key, [...path, 'key']);
  if ('passthrough' in a) location(a.passthrough, [...path, 'passthrough']);
  if ('jwtSign' in a) {
    const j = a.jwtSign;
    const jp = [...path, 'jwtSign'];
    location(j, jp);
    for (const c of JWT_SIGN_RESERVED_CLAIMS)
      if (j.claims && c in j.claims)
        out.push({
          path: [...jp, 'claims', c],
          message: `claim ${c} is reserved: the gateway sets iat, exp and nbf when it signs`,
        });
    if (typeof j.signingKey === 'string' && j.signingKey.includes('-----BEGIN'))
      out.push(...checkSigningKey(j.signingKey, j.alg ?? 'RS256', [...jp, 'signingKey']));
  }
  if ('oauthTokenExchange' in a) {
    const t = a.oauthTokenExchange;
    const tp = [...path, 'oauthTokenExchange'];
    if (t.authorizationLocation && 'expression' in t.authorizationLocation)
      out.push({
        path: [...tp, 'authorizationLocation', 'expression'],
        message:
          'a backend credential cannot be written to an expression; use a header, query parameter or cookie',
      });
    if (t.actorToken && (t.grantType ?? 'tokenExchange') !== 'tokenExchange')
      out.push({
        path: [...tp, 'actorToken'],
        message: 'actorToken is sent with grantType tokenExchange only',
      });
  }
  return out;
}

/** A PEM private key that `alg` can sign with. */
export function checkSigningKey(pem: string, alg: JwtSignAlg, path: FieldPath): Problem[] {
  const need = KEY_FOR[alg];
  if (!pem.includes('-----BEGIN'))
    return [{ path, message: `signingKey is not PEM: expected ${need.what} private key for ${alg}` }];
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (err) {
    const why = (err as Error).message.replace(/^error:[0-9A-F]+:/i, '');
    return [{ path, message: `signingKey is not a PEM private key (${why})` }];
  }
  const type = key.asymmetricKeyType;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  const fits =
    need.type === 'rsa' ? type === 'rsa' || type === 'rsa-pss' : type === 'ec' && curve === need.curve;
  if (fits) return [];
  const have = type === 'ec' ? `an EC key on ${curve}` : `a key of type ${type}`;
  return [{ path, message: `signingKey is ${have}; ${alg} needs ${need.what} private key` }];
}
