// urlRewrite: changes the path and/or authority sent upstream (the client's view is unchanged).
import type { PolicyDefinition } from '../types.ts';
import { rewriteAuthority, rewritePath } from './authority.ts';

declare module '../../pipeline/context.ts' {
  interface RequestExtensions {
    /**
     * true (`authority: auto`): the upstream call sends the backend's address as Host; false (an
     * authority named here): not even a backend's own name; unset: the backend's default.
     */
    rewriteHostToBackend?: boolean;
  }
}

export const urlRewrite: PolicyDefinition<'urlRewrite'> = {
  name: 'urlRewrite',
  build(config) {
    const { authority, path } = config;
    return (ctx, next) => {
      if (path) ctx.path = rewritePath(path, ctx);
      if (authority === 'auto') ctx.ext.rewriteHostToBackend = true;
      else if (authority) {
        ctx.headers.host = rewriteAuthority(authority, ctx.authority, ctx.host);
        ctx.ext.rewriteHostToBackend = false;
      }
      return next(ctx);
    };
  },
};
