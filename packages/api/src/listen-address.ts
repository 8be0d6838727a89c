// The admin, stats and readiness servers' listen addresses (config.adminAddr and the --admin-addr
// flags): `ip:port`, `localhost:port` (or another host name), `[ipv6]:port`, `unix:/path` or `off`.
// Checked where they are read, so a file that would fail to start fails to load instead.
import { isIPv4, isIPv6 } from 'node:net';

export const LISTEN_ADDRESS_PATTERN = /^(off|unix:\/.+|(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5})$/;
export const LISTEN_ADDRESS_MESSAGE = 'expected "ip:port", "localhost:port", "unix:/path" or "off"';

/**
 * Why `text`, of the pattern's shape, cannot be listened on: a port past 65535, an IPv6 address in
 * brackets or a dotted quad that is not one. Undefined when it can (or is not of the shape at all).
 */
export function listenAddressValueProblem(text: string): string | undefined {
  if (text === 'off' || text.startsWith('unix:')) return undefined;
  const m = /^(.*):([0-9]+)$/.exec(text);
  if (!m) return undefined;
  const host = m[1] as string;
  if (Number(m[2]) > 65535) return `port ${m[2]} is out of range (0 to 65535)`;
  if (host.startsWith('[') && !isIPv6(host.slice(1, -1)))
    return `${host.slice(1, -1)} is not an IPv6 address`;
  if (/^[0-9.]+$/.test(host) && !isIPv4(host)) return `${host} is not an IPv4 address`;
  return undefined;
}

/** Why `text` is not a listen address, else undefined. */
export function listenAddressProblem(text: string): string | undefined {
  if (!LISTEN_ADDRESS_PATTERN.test(text)) return LISTEN_ADDRESS_MESSAGE;
  return listenAddressValueProblem(text);
}
