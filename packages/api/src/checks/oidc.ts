// Checks of the oidc policy the schema cannot make: the issuer, endpoints and redirectURI are http(s)
// URLs, the explicit provider fields come all together or not at all (and then without discovery),
// an inline discovery document or JWKS parses, and the logout path and destination are local paths
// that cannot collide with the callback.
import type { Oidc } from '../config/oidc.ts';
import type { FieldPath } from '../config/source.ts';
import { checkJwks } from './jwks.ts';
import type { Problem } from './problem.ts';

function httpUrl(v: string): URL | undefined {
  try {
    const u = new URL(v);
    if ((u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '')
      return u;
  } catch {}
  return undefined;
}

/** A path on this gateway a browser may be sent to: `/…`, never `//host` or a backslash. */
export function isLocalPath(p: string): boolean {
  if (!p.startsWith('/') || p.startsWith('//') || p.includes('\\') || p.includes('#')) return false;
  let decoded = p;
  try {
    decoded = decodeURIComponent(p);
  } catch {
    return false;
  }
  return !decoded.startsWith('//') && !decoded.includes('\\');
}

export function checkOidc(o: Oidc, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  const at = (field: string, message: string) => out.push({ path: [...path, field], message });
  if (!httpUrl(o.issuer)) at('issuer', `issuer ${JSON.stringify(o.issuer)} must be an http(s) URL`);
  const redirect = httpUrl(o.redirectURI);
  if (`${redirect?.search ?? '?'}${redirect?.hash ?? ''}` !== '')
    at(
      'redirectURI',
      `redirectURI ${JSON.stringify(o.redirectURI)} must be an absolute http(s) URL without a query or fragment`,
    );
  for (const f of ['authorizationEndpoint', 'tokenEndpoint'] as const) {
    const v = o[f];
    if (v != null && !httpUrl(v)) at(f, `${f} ${JSON.stringify(v)} must be an absolute http(s) URL`);
  }
  const explicit = [o.authorizationEndpoint, o.tokenEndpoint, o.jwks].filter((v) => v != null).length;
  if (explicit !== 0 && explicit !== 3)
    out.push({
      path,
      message:
        'authorizationEndpoint, tokenEndpoint and jwks must either all be set (explicit provider) or all be omitted (discovery)',
    });
  if (o.tokenEndpointAuth != null && explicit !== 3)
    at(
      'tokenEndpointAuth',
      'tokenEndpointAuth is only for an explicit provider (authorizationEndpoint, tokenEndpoint and jwks); discovery derives it',
    );
  if (o.discovery != null && explicit === 3)
    at('discovery', 'discovery must be omitted when authorizationEndpoint, tokenEndpoint and jwks are set');
  const d = o.discovery;
  if (d && 'inline' in d) {
    let doc: unknown;
    try {
      doc = JSON.parse(d.inline);
    } catch (err) {
      doc = undefined;
      at('discovery', `the discovery document is not valid JSON: ${(err as Error).message}`);
    }
    if (doc !== undefined) {
      const m = doc as Record<string, unknown>;
      if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
        at('discovery', 'the discovery document must be a JSON object');
      else if (m['issuer'] !== o.issuer)
        at(
          'discovery',
          `the discovery document's issuer ${JSON.stringify(m['issuer'])} is not the issuer ${JSON.stringify(o.issuer)}`,
        );
      else
        for (const k of ['authorization_endpoint', 'token_endpoint', 'jwks_uri'])
          if (typeof m[k] !== 'string') at('discovery', `the discovery document has no ${k}`);
    }
  }
  const j = o.jwks;
  if (j && 'inline' in j) out.push(...checkJwks(j.inline, [...path, 'jwks']));
  if (j && 'url' in j && !httpUrl(j.url))
    out.push({ path: [...path, 'jwks', 'url'], message: 'jwks.url must be an absolute http(s) URL' });
  if (d && 'url' in d && !httpUrl(d.url))
    out.push({
      path: [...path, 'discovery', 'url'],
      message: 'discovery.url must be an absolute http(s) URL',
    });
  const l = o.logout;
  if (l) {
    if (!isLocalPath(l.path) || l.path.includes('?'))
      out.push({
        path: [...path, 'logout', 'path'],
        message: 'logout.path must be a local path without a query (e.g. /auth/logout)',
      });
    else if (redirect && l.path === redirect.pathname)
      out.push({
        path: [...path, 'logout', 'path'],
        message: "logout.path must differ from redirectURI's path",
      });
    if (l.redirect != null && !isLocalPath(l.redirect))
      out.push({
        path: [...path, 'logout', 'redirect'],
        message: 'logout.redirect must be a local path (e.g. /signed-out)',
      });
  }
  return out;
}
