// What the MCP authentication providers' quirks need at run time as well as at load time.
/**
 * A Descope agentic issuer's project and MCP server (…/v1/apps/agentic/<project>/<server>); undefined
 * for any other issuer.
 */
export function descopeAgentic(
  issuer: string,
): { origin: string; project: string; server: string } | undefined {
  let u: URL;
  try {
    u = new URL(issuer);
  } catch {
    return undefined;
  }
  const [v1, apps, agentic, project, server] = u.pathname.replace(/^\/+/, '').split('/');
  if (v1 !== 'v1' || apps !== 'apps' || agentic !== 'agentic' || !project || !server) return undefined;
  return { origin: u.origin, project, server };
}

/** A Microsoft Entra ID tenant's OAuth endpoints, derived from the issuer its tokens carry. */
export interface EntraEndpoints {
  openidConfiguration: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
}

/**
 * Entra's endpoints for an issuer: v2 tokens say https://login.microsoftonline.com/<tenant>/v2.0, v1
 * tokens https://sts.windows.net/<tenant>/ (whose interactive endpoints are on the login host). Other
 * hosts (sovereign clouds, a stand-in) keep their scheme, host and port. A string: why there are none.
 */
export function entraEndpoints(issuer: string): EntraEndpoints | string {
  let u: URL;
  try {
    u = new URL(issuer);
  } catch {
    return `the entra issuer ${JSON.stringify(issuer)} is not a URL`;
  }
  const tenant = u.pathname.split('/').find((s) => s !== '');
  if (!tenant)
    return `the entra issuer ${JSON.stringify(issuer)} names no tenant (https://login.microsoftonline.com/<tenant>/v2.0 or https://sts.windows.net/<tenant>/)`;
  const v1 = u.hostname.toLowerCase() === 'sts.windows.net';
  const authority = v1 ? `https://login.microsoftonline.com/${tenant}` : `${u.protocol}//${u.host}/${tenant}`;
  return {
    openidConfiguration: `${authority}/v2.0/.well-known/openid-configuration`,
    authorizationEndpoint: `${authority}/oauth2/v2.0/authorize`,
    tokenEndpoint: `${authority}/oauth2/v2.0/token`,
    jwksUri: `${authority}/discovery/v2.0/keys`,
  };
}
