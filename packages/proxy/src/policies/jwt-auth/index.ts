// jwtAuth: validates a JWT from the configured location against the providers' JWKS (verifier.ts).
// Claims become `jwt.*` in CEL, the token is kept (sealed) for backendAuth passthrough, and removed
// from the request unless preserveToken.
import { GwError } from '../../errors.ts';
import {
  BEARER,
  compileLocation,
  normalizeMode,
  readCredential,
} from '../../pipeline/credential-location.ts';
import { Secret } from '../../secret.ts';
import type { PolicyDefinition } from '../types.ts';
import { JwtVerifier } from './verifier.ts';

export const jwtAuth: PolicyDefinition<'jwtAuth'> = {
  name: 'jwtAuth',
  build(config) {
    const list = (
      config.providers ??
      (config.issuer && config.jwks
        ? [
            {
              issuer: config.issuer,
              audiences: config.audiences,
              jwks: config.jwks,
              jwtValidationOptions: config.jwtValidationOptions,
            },
          ]
        : [])
    ).map(({ jwtValidationOptions: o, ...p }) => ({ ...p, requiredClaims: o?.requiredClaims }));
    const verifier = new JwtVerifier(list);
    const mode = normalizeMode(config.mode);
    const location = compileLocation(config.location, BEARER);
    return async (ctx, next) => {
      const cred = readCredential(ctx, location);
      if (!cred) {
        if (mode === 'strict')
          throw new GwError('GW_ERR_UNAUTHENTICATED', 'JWT is missing', {
            headers: { 'www-authenticate': 'Bearer' },
          });
        return next(ctx);
      }
      try {
        ctx.ext.jwt = await verifier.verify(cred.value);
        ctx.ext.jwtToken = new Secret(cred.value);
      } catch (err) {
        if (mode === 'permissive') return next(ctx);
        if (err instanceof GwError) err.headers = { 'www-authenticate': 'Bearer' };
        throw err;
      }
      if (!config.preserveToken) cred.remove(ctx);
      return next(ctx);
    };
  },
};
