// urlRewrite: changes the path and/or authority sent upstream (the client's view is unchanged).
import type { PolicyDefinition } from '../types.ts';
import { rewriteAuthority, rewritePath } from './authority.ts';

export const urlRewrite: PolicyDefinition<'urlRewrite'> = {
  name: 'urlRewrite',
  build(config) {
    const { authority, path } = config;
    return (ctx, next) => {
      if (path) ctx.path = rewritePath(path, ctx);
      if (authority === 'auto') ctx.rewriteHostToBackend = true;
      else if (authority) ctx.headers.host = rewriteAuthority(authority, ctx.authority, ctx.host);
      return next(ctx);
    };
  },
};
