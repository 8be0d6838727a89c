// apiKey: the request's key (default `Authorization: Bearer <key>`) must be one of the configured
// keys, given plain or as `sha256:<hex>`. Lookup is by SHA-256, so plain keys are not kept around and
// comparison time does not depend on how much of a key matched. Metadata becomes `apiKey.*` in CEL;
// a key's allowedModels go with the request to the LLM API (upstream/backends/ai), which serves and
// lists only those models to it.
import { createHash } from 'node:crypto';
import { ModelNameMatcher } from '@gw/api/runtime';
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
    /** The allowedModels of the keys that have them, by hash. */
    const models = new Map<string, (model: string) => boolean>();
    const entries = Array.isArray(config.keys)
      ? config.keys.map((e) => ['', e] as const)
      : Object.entries(config.keys);
    for (const [name, e] of entries) {
      const meta =
        !(e instanceof Secret) && e.metadata && typeof e.metadata === 'object'
          ? (e.metadata as Record<string, unknown>)
          : {};
      const withName = name ? { name, ...meta } : meta;
      const hash =
        e instanceof Secret
          ? sha256(e.reveal())
          : 'key' in e
            ? sha256(e.key.reveal())
            : e.keyHash.reveal().slice('sha256:'.length).toLowerCase();
      byHash.set(hash, withName);
      if (!(e instanceof Secret) && e.allowedModels) {
        // exact names, prefix* and *, as llm.models names are matched; an empty list allows none
        const m = new ModelNameMatcher<true>();
        for (const p of e.allowedModels) m.add(p, true);
        m.freeze();
        models.set(hash, (model) => m.match(model) === true);
      }
    }
    const mode = normalizeMode(config.mode);
    const location = compileLocation(config.location, BEARER);
    return (ctx, next) => {
      const cred = readCredential(ctx, location);
      if (!cred) {
        if (mode === 'strict') throw new GwError('GW_ERR_UNAUTHENTICATED', 'API key is missing');
        return next(ctx);
      }
      const hash = sha256(cred.value);
      const meta = byHash.get(hash);
      if (!meta) {
        if (mode === 'permissive') return next(ctx);
        throw new GwError('GW_ERR_UNAUTHENTICATED', 'invalid API key');
      }
      ctx.ext.apiKey = meta;
      const allowed = models.get(hash);
      if (allowed) ctx.ext.allowedModels = allowed;
      cred.remove(ctx);
      return next(ctx);
    };
  },
};
