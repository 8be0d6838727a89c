// The client's request headers as an MCP target's HTTP requests carry them (agentgateway forwards
// them too): a remote server that takes the user's own token, tenant or cookie gets it. Built once per
// client request and shared by every target and upstream request that request causes.
import { type Headers, HOP_BY_HOP } from '../../pipeline/context.ts';

/** The client's headers as forwarded, without `authorization` for targets whose backendAuth sets it. */
export interface ForwardedHeaders {
  readonly all: Readonly<Headers>;
  /** For a target with backendAuth: its credential replaces the client's. Made when first asked. */
  readonly withoutAuthorization: () => Readonly<Headers>;
}

/**
 * Never forwarded: one hop's own headers, the request's framing and address (gw writes each body
 * anew), and the MCP transport's headers, which gw sets per target (session id, version, resumption).
 */
const NOT_FORWARDED = new Set([
  ...HOP_BY_HOP,
  'host',
  'content-length',
  'content-type',
  'content-encoding',
  'expect',
  'accept',
  'accept-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

const EMPTY: ForwardedHeaders = { all: {}, withoutAuthorization: () => ({}) };
const built = new WeakMap<object, ForwardedHeaders>();

/**
 * What `req`'s headers (as the policies left them: authentication has taken off the credential it
 * checked) send to MCP targets. `req` without headers (a message relayed from another worker) sends
 * none.
 */
export function forwardedHeaders(req: { readonly headers?: Headers | undefined }): ForwardedHeaders {
  const h = req.headers;
  if (!h) return EMPTY;
  const known = built.get(req);
  if (known) return known;
  const all: Headers = {};
  for (const k in h) {
    const v = h[k];
    if (v === undefined || NOT_FORWARDED.has(k) || k.startsWith('proxy-')) continue;
    // RFC 6265: one Cookie header on HTTP/1.1, even when HTTP/2 brought several
    all[k] = k === 'cookie' && Array.isArray(v) ? v.join('; ') : v;
  }
  let bare: Headers | undefined;
  const out: ForwardedHeaders = {
    all,
    withoutAuthorization: () => {
      if (bare) return bare;
      if (all.authorization === undefined) bare = all;
      else {
        const { authorization: _, ...rest } = all;
        bare = rest;
      }
      return bare;
    },
  };
  built.set(req, out);
  return out;
}
