// The xDS server address a proxy is given (--xds-address), checked before anything connects.

/** `http://host:port` or `https://host:port` → the gRPC target; throws a message for the user. */
export function parseXdsAddress(address: string): { target: string; tls: boolean } {
  let u: URL;
  try {
    u = new URL(address);
  } catch {
    throw new Error(
      `xDS address ${JSON.stringify(address)} is not a URL (http://host:port or https://host:port)`,
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new Error(`xDS address ${address}: use http:// (plaintext) or https:// (TLS)`);
  if (u.pathname !== '/' && u.pathname !== '') throw new Error(`xDS address ${address}: no path allowed`);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return { target: `${u.hostname}:${port}`, tls: u.protocol === 'https:' };
}
