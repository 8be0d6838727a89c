// Checks of mcpAuthentication the schema cannot make: the issuer and a configured resource are URLs
// (metadata and WWW-Authenticate URLs are built from them), an inline JWKS parses, exp stays
// required, and a CEL token location compiles.

import type { McpAuthentication } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { descopeAgentic, entraEndpoints } from '../mcp-idp.ts';
import { checkCel } from './cel.ts';
import { checkJwks } from './jwks.ts';
import type { Problem } from './problem.ts';

function httpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}

export function checkMcpAuthentication(m: McpAuthentication, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (!httpUrl(m.issuer))
    out.push({
      path: [...path, 'issuer'],
      message: `issuer ${JSON.stringify(m.issuer)} must be an http(s) URL: MCP clients are sent to it for tokens`,
    });
  const resource = m.resourceMetadata?.['resource'];
  if (resource !== undefined && (typeof resource !== 'string' || !httpUrl(resource)))
    out.push({
      path: [...path, 'resourceMetadata', 'resource'],
      message: 'resource must be the http(s) URL MCP clients call (e.g. https://gw.example.com/mcp)',
    });
  // Descope takes registrations for an agentic app's MCP server, named by the issuer's path
  if (
    m.provider &&
    'descope' in m.provider &&
    m.clientId == null &&
    httpUrl(m.issuer) &&
    !descopeAgentic(m.issuer)
  )
    out.push({
      path: [...path, 'issuer'],
      message:
        'with the descope provider and no clientId the issuer is an agentic app (https://api.descope.com/v1/apps/agentic/<project>/<server>): registrations go to its MCP server',
    });
  const entra = m.provider !== undefined && m.provider !== null && 'entra' in m.provider;
  if (entra && httpUrl(m.issuer)) {
    const e = entraEndpoints(m.issuer);
    if (typeof e === 'string') out.push({ path: [...path, 'issuer'], message: e });
  }
  if (m.clientSecret != null && !entra)
    out.push({
      path: [...path, 'clientSecret'],
      message: 'clientSecret is for the entra provider (its token requests); set provider: {entra: {}}',
    });
  if (m.clientSecret != null && m.clientId == null)
    out.push({
      path: [...path, 'clientSecret'],
      message: 'clientSecret belongs to the app registration clientId names: set clientId too',
    });
  const j = m.jwks;
  if (typeof j === 'string') out.push(...checkJwks(j, [...path, 'jwks']));
  else if (j && 'inline' in j) out.push(...checkJwks(j.inline, [...path, 'jwks', 'inline']));
  const required = m.jwtValidationOptions?.requiredClaims;
  if (required && !required.includes('exp'))
    out.push({
      path: [...path, 'jwtValidationOptions', 'requiredClaims'],
      message: 'gw always requires exp: list it (tokens without an expiry are not accepted)',
    });
  const loc = m.authorizationLocation;
  if (loc && 'expression' in loc)
    out.push(...checkCel(loc.expression, [...path, 'authorizationLocation', 'expression']));
  return out;
}
