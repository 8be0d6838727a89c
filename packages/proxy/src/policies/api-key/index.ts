// apiKey: the request's key (default `Authorization: Bearer <key>`) must be one of the configured
// keys, given plain or as `sha256:<hex>`. Lookup is by SHA-256, so plain keys are not kept around and
// comparison time does not depend on how much of a key matched. Metadata becomes `apiKey.*` in CEL.
import { createHash } from 'node:crypto';
import { GwError } from '../../errors.ts';
import {
  BEARER,
  compileLocation,
  normalizeMode,
  readCredential,
} from '../../pipeline/credential-location.ts';
import { Secret } from '../../secret.ts';
import type { PolicyDefinition } from '../types.ts';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

export const apiKey: PolicyDefinition<'apiKey'> = {
  name: 'apiKey',
  build(config) {
    const byHash = new Map<string, Record<string, unknown>>();
    const entries = Array.isArray(config.keys)
      ? config.keys.map((e) => ['', e] as const)
      : Object.entries(config.keys);
    for (const [name, e] of entries) {
      const meta =
        !(e instanceof Secret) && e.metadata && typeof e.metadata === 'object'
          ? (e.metadata as Record<string, unknown>)
          : {};
      const withName = name ? { name, ...meta } : meta;
      if (e instanceof Secret) byHash.set(sha256(e.reveal()), withName);
      else if ('key' in e) byHash.set(sha256(e.key.reveal()), withName);
      else byHash.set(e.keyHash.reveal().slice('sha256:'.length).toLowerCase(), withName);
    }
    const mode = normalizeMode(config.mode);
    const location = compileLocation(config.location, BEARER);
    return (ctx, next) => {
      const cred = readCredential(ctx, location);
      if (!cred) {
        if (mode === 'strict') throw new GwError('GW_ERR_UNAUTHENTICATED', 'API key is missing');
        return next(ctx);
      }
      const meta = byHash.get(sha256(cred.value));
      if (!meta) {
        if (mode === 'permissive') return next(ctx);
        throw new GwError('GW_ERR_UNAUTHENTICATED', 'invalid API key');
      }
      ctx.ext.apiKey = meta;
      cred.remove(ctx);
      return next(ctx);
    };
  },
};
