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
