// requestHeaderModifier / responseHeaderModifier: add appends to a header, set replaces it, remove
// drops it; names are case-insensitive.
import { GwError } from '../../errors.ts';
import type { Headers } from '../../pipeline/context.ts';
import type { PolicyDefinition } from '../types.ts';

export interface HeaderModifierConfig {
  add?: Record<string, string> | undefined;
  set?: Record<string, string> | undefined;
  remove?: string[] | undefined;
}

export function headerModifier(config: HeaderModifierConfig): (h: Headers) => void {
  const add = Object.entries(config.add ?? {}).map(([k, v]) => [k.toLowerCase(), v] as const);
  const set = Object.entries(config.set ?? {}).map(([k, v]) => [k.toLowerCase(), v] as const);
  const remove = (config.remove ?? []).map((k) => k.toLowerCase());
  return (h) => {
    for (const [k, v] of set) h[k] = v;
    for (const [k, v] of add) {
      const cur = h[k];
      h[k] = cur === undefined ? v : Array.isArray(cur) ? [...cur, v] : [cur, v];
    }
    for (const k of remove) delete h[k];
  };
}

export const requestHeaderModifier: PolicyDefinition<'requestHeaderModifier'> = {
  name: 'requestHeaderModifier',
  build(config) {
    const apply = headerModifier(config);
    return (ctx, next) => {
      apply(ctx.headers);
      return next(ctx);
    };
  },
};

export const responseHeaderModifier: PolicyDefinition<'responseHeaderModifier'> = {
  name: 'responseHeaderModifier',
  build(config) {
    const apply = headerModifier(config);
    return async (ctx, next) => {
      try {
        await next(ctx);
      } catch (err) {
        // an error the gateway answers (a timeout, an unreachable backend) gets the headers too, as
        // agentgateway sets them (a security header the route adds is on its errors as well)
        if (err instanceof GwError) err.editHeaders(apply);
        throw err;
      }
      if (ctx.response) apply(ctx.response.headers);
    };
  },
};
