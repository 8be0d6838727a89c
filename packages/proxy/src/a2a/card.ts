// Agent cards through the gateway: a card names the URLs its agent is called at, and a client calls
// whatever the card says, so every one of them is pointed at the gateway, at the path the client
// reached the card by. The gateway's address is what the client used (Host, the scheme; a trusted
// proxy's X-Forwarded-Host and -Proto), never the agent's.
import { bufferUpTo, contentLength } from '../pipeline/body.ts';
import type { RequestContext } from '../pipeline/context.ts';
import type { A2aRequestInfo } from './info.ts';

/** Where agents serve their card: A2A 0.3 and 1.0, and before 0.3. */
export const CARD_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json'] as const;

/** The card path `path` ends with, if any. */
export function cardSuffix(path: string): string | undefined {
  return CARD_PATHS.find((p) => path.endsWith(p));
}

/** The gateway as the client reached it: `scheme://authority`. */
export function externalOrigin(ctx: RequestContext): string {
  // X-Forwarded-Proto has been checked already (pipeline/forwarded.ts): a trusted proxy's, or ours.
  const proto = first(ctx.headers['x-forwarded-proto'])?.toLowerCase();
  const scheme = proto === 'http' || proto === 'https' ? proto : ctx.scheme;
  const fwdHost = ctx.ext.trustedPeer ? first(ctx.headers['x-forwarded-host']) : undefined;
  const host = fwdHost && /^[A-Za-z0-9.\-:[\]_]+$/.test(fwdHost) ? fwdHost : ctx.authority;
  return `${scheme}://${host}`;
}

function first(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s?.split(',', 1)[0]?.trim() || undefined;
}

/**
 * Maps an agent URL to the gateway: the origin becomes the gateway's, and a path under the one the
 * agent served the card from (`upstreamBase`) moves under the one the client fetched it from
 * (`clientBase`), so a route that rewrites paths keeps working. A value that is not an absolute
 * http(s) URL is left as it is.
 */
export function urlMapper(origin: string, clientBase: string, upstreamBase: string): (url: string) => string {
  return (url) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return url;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return url;
    let path = u.pathname;
    if (
      clientBase !== upstreamBase &&
      (path === upstreamBase || path.startsWith(`${upstreamBase}/`) || upstreamBase === '')
    ) {
      path = clientBase + path.slice(upstreamBase.length);
    }
    if (path === '') path = '/';
    return `${origin}${path}${u.search}${u.hash}`;
  };
}

/**
 * Points a card's URLs at the gateway: `url` (0.3), `additionalInterfaces[].url` (0.3) and
 * `supportedInterfaces[].url` (1.0). Returns how many it changed; anything else stays as sent.
 */
export function rewriteCard(card: Record<string, unknown>, map: (url: string) => string): number {
  let changed = 0;
  const one = (o: Record<string, unknown>) => {
    if (typeof o.url !== 'string') return;
    const next = map(o.url);
    if (next !== o.url) {
      o.url = next;
      changed++;
    }
  };
  one(card);
  for (const key of ['additionalInterfaces', 'supportedInterfaces']) {
    const list = card[key];
    if (!Array.isArray(list)) continue;
    for (const i of list)
      if (typeof i === 'object' && i !== null && !Array.isArray(i)) one(i as Record<string, unknown>);
  }
  return changed;
}

/**
 * Rewrites the card in ctx.response when it is one: a 200 whose body, read up to `limit`, is a JSON
 * object. Anything else (a 404, HTML, a card too large, a compressed body) passes untouched.
 */
export async function rewriteCardResponse(
  ctx: RequestContext,
  info: A2aRequestInfo,
  limit: number,
): Promise<void> {
  const res = ctx.response;
  info.outcome = 'untouched';
  if (res?.status !== 200 || res.body === null || ctx.method !== 'GET') return;
  const type = String(res.headers['content-type'] ?? '');
  if (type !== '' && !/json/i.test(type)) return;
  if (res.headers['content-encoding'] !== undefined && res.headers['content-encoding'] !== 'identity') return;
  let data: Buffer;
  if (Buffer.isBuffer(res.body)) data = res.body;
  else {
    const r = await bufferUpTo(res.body, limit, contentLength(res.headers), ctx);
    if (!r.ok) {
      res.body = r.stream;
      return;
    }
    data = r.data;
  }
  res.body = data;
  let card: unknown;
  try {
    card = JSON.parse(data.toString('utf8'));
  } catch {
    return;
  }
  if (typeof card !== 'object' || card === null || Array.isArray(card)) return;
  const clientPath = ctx.originalUrl.split('?', 1)[0] ?? '';
  const clientSuffix = cardSuffix(clientPath);
  const upstreamSuffix = cardSuffix(ctx.path);
  const upstreamBase = upstreamSuffix ? ctx.path.slice(0, -upstreamSuffix.length) : '';
  const clientBase = clientSuffix ? clientPath.slice(0, -clientSuffix.length) : upstreamBase;
  rewriteCard(card as Record<string, unknown>, urlMapper(externalOrigin(ctx), clientBase, upstreamBase));
  const body = Buffer.from(JSON.stringify(card));
  res.body = body;
  res.headers['content-length'] = String(body.length);
  // The agent's validator describes its own card, not this one.
  delete res.headers.etag;
  info.outcome = 'rewritten';
}
