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
