// The request target as routing sees it, settled once per request before listener and route
// selection: exactly one Host, the authority of an absolute-form target (or a CONNECT's), and the
// normalised path.
import { GwError } from '../errors.ts';
import { hostOf, type RequestContext } from './context.ts';
import { normalizePath, type PathNormalization } from './normalize-path.ts';

const ABSOLUTE_FORM = /^https?:\/\//i;
/** host:port: a name or IPv4 address, or an IPv6 one in brackets, and a port. */
export const AUTHORITY_FORM = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$/;

/**
 * uri-host[:port] (RFC 3986 §3.2.2): a reg-name or IPv4 address (unreserved, sub-delims and
 * percent-encoded characters), or an IP literal in brackets; no userinfo.
 */
const HOST_HEADER =
  /^(?:(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})+|\[[0-9A-Fa-f:.]+(?:%25[A-Za-z0-9._~-]+)?\])(?::[0-9]*)?$/;

/** Rewrites ctx's path (and authority, for an absolute-form target); a GwError when the target is refused. */
export function resolveRequestTarget(ctx: RequestContext, opts: PathNormalization): GwError | undefined {
  if (ctx.httpVersion.startsWith('1') && hostCount(ctx.req.rawHeaders) > 1) {
    // RFC 9112 §3.2: a request with more than one Host is answered 400; which one would a backend use?
    return new GwError('GW_ERR_BAD_REQUEST', 'bad request: more than one Host header');
  }
  let path = ctx.path;
  if (ctx.method === 'CONNECT') {
    // RFC 9112 §3.2.3 (HTTP/2: :authority, RFC 9113 §8.5): a CONNECT's target is the authority
    // (host:port) it asks a tunnel to; it is routed by that host, at path /.
    const authority = ctx.httpVersion.startsWith('1') ? ctx.originalUrl : ctx.authority;
    if (!AUTHORITY_FORM.test(authority))
      return new GwError('GW_ERR_BAD_REQUEST', 'bad request: a CONNECT target must be host:port');
    ctx.authority = authority;
    ctx.host = hostOf(authority);
    ctx.headers.host = authority;
    ctx.path = '/';
    ctx.query = '';
    return undefined;
  }
  if (ABSOLUTE_FORM.test(ctx.originalUrl)) {
    // RFC 9112 §3.2.2: the target's authority replaces Host.
    const url = ctx.originalUrl;
    const start = url.indexOf('//') + 2;
    let end = start;
    while (end < url.length && url[end] !== '/' && url[end] !== '?' && url[end] !== '#') end++;
    const authority = url.slice(start, end);
    if (authority === '' || authority.includes('@'))
      return new GwError('GW_ERR_BAD_REQUEST', 'bad request: invalid authority in request target');
    const rest = url.slice(end);
    const q = rest.indexOf('?');
    path = (q === -1 ? rest : rest.slice(0, q)) || '/';
    ctx.query = q === -1 ? '' : rest.slice(q);
    ctx.authority = authority;
    ctx.host = hostOf(authority);
    ctx.headers.host = authority;
  }
  // RFC 9112 §3.2: a Host that is not uri-host[:port] is answered 400. What a client wrote there is
  // what the gateway hands on (agent cards name it, redirects and upstream Host carry it), so a
  // quote, a space or a slash in it never gets that far. Empty is allowed (a target without an
  // authority).
  if (ctx.authority !== '' && !HOST_HEADER.test(ctx.authority))
    return new GwError('GW_ERR_BAD_REQUEST', 'bad request: invalid Host header');
  const n = normalizePath(path, opts);
  if (!n.ok) return new GwError('GW_ERR_BAD_REQUEST', `bad request: ${n.reason}`);
  ctx.path = n.path;
  if (ctx.query.includes('#'))
    return new GwError('GW_ERR_BAD_REQUEST', 'bad request: request target has a fragment');
  return undefined;
}

function hostCount(raw: string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') n++;
  }
  return n;
}
