// The authority and path rewrites shared by urlRewrite and requestRedirect.

import { hostPort } from '@gw/api/runtime';
import type { RequestContext } from '../../pipeline/context.ts';

export type AuthoritySpec = 'auto' | 'none' | { full: string } | { host: string } | { port: number };
export type PathSpec = { full: string } | { prefix: string };

export function rewriteAuthority(spec: AuthoritySpec, authority: string, host: string): string {
  if (spec === 'auto' || spec === 'none') return authority;
  if ('full' in spec) return spec.full;
  const port = portOf(authority);
  if ('host' in spec) return port ? `${spec.host}:${port}` : spec.host;
  return hostPort(host, spec.port);
}

function portOf(authority: string): string | undefined {
  const close = authority.lastIndexOf(']');
  const i = authority.lastIndexOf(':');
  return i > close ? authority.slice(i + 1) : undefined;
}

/** Replaces the whole path, or the matched PathPrefix part of it (Gateway API ReplacePrefixMatch). */
export function rewritePath(spec: PathSpec, ctx: RequestContext): string {
  if ('full' in spec) return spec.full;
  const matched = ctx.matchedPrefix ?? '/';
  const rest = matched === '/' ? ctx.path : ctx.path.slice(matched.length);
  const prefix = spec.prefix;
  if (rest === '' || rest === '/')
    return prefix === '' ? '/' : prefix + (rest === '/' && !prefix.endsWith('/') ? '/' : '');
  if (prefix.endsWith('/') && rest.startsWith('/')) return prefix + rest.slice(1);
  if (prefix === '' && !rest.startsWith('/')) return `/${rest}`;
  return prefix + rest;
}
