// requestRedirect: answers with a redirect (302 unless `status` says otherwise) to the request's URL
// with the configured scheme, authority and path replaced; the query string is kept.

import type { PolicyDefinition } from '../types.ts';
import { rewriteAuthority, rewritePath } from '../url-rewrite/authority.ts';

const DEFAULT_PORT: Record<string, string> = { http: '80', https: '443' };

export const requestRedirect: PolicyDefinition<'requestRedirect'> = {
  name: 'requestRedirect',
  build(config) {
    const status = config.status ?? 302;
    return async (ctx) => {
      const scheme = config.scheme ?? ctx.scheme;
      let authority = config.authority
        ? rewriteAuthority(config.authority, ctx.authority, ctx.host)
        : ctx.authority;
      // Changing scheme drops a port that only made sense for the old one (Gateway API behaviour).
      if (
        config.scheme &&
        config.scheme !== ctx.scheme &&
        !(config.authority && typeof config.authority === 'object' && 'port' in config.authority)
      ) {
        authority = authority.replace(/:[0-9]+$/, '');
      }
      if (authority.endsWith(`:${DEFAULT_PORT[scheme]}`))
        authority = authority.slice(0, authority.lastIndexOf(':'));
      const path = config.path ? rewritePath(config.path, ctx) : ctx.path;
      ctx.response = {
        status,
        headers: { location: `${scheme}://${authority}${path}${ctx.query}` },
        body: null,
      };
    };
  },
};
