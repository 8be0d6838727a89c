// How a host and a port are written together (an authority, an address): an IPv6 address in
// brackets, so that its colons are not read as the port's.

/** `host` as it stands before a port: an IPv6 address (or any name with a colon) in brackets. */
export function bracketHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** host:port, an IPv6 host in brackets. */
export function hostPort(host: string, port: number | string): string {
  return `${bracketHost(host)}:${port}`;
}

/** host:port split at its last colon: the host without brackets, the port as a number (NaN: none). */
export function splitHostPort(text: string): { host: string; port: number } {
  const i = text.lastIndexOf(':');
  const host = i === -1 ? text : text.slice(0, i);
  return {
    host: host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host,
    port: i === -1 ? Number.NaN : Number(text.slice(i + 1)),
  };
}
