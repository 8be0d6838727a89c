// ipAccessControl: admits a request by the client's IP address, against allow and deny lists of
// addresses and CIDRs (agentgateway's policy of that name, newer than the schema gw follows).
//
// - A deny match rejects; with an allow list, an address outside it rejects; otherwise it passes.
// - The client is the connection's peer, unless `xffNumTrustedHops` says how many proxies in front
//   appended to the X-Forwarded-For the client sent: then it is the entry that many places from the
//   right (a port after it taken off; the peer when the header is absent, or when that entry is not
//   an address, as agentgateway does).
// - `enforceFullChain` checks every address of that header and the peer, not the client alone.
// - `skipPrivateIps` lets loopback, private (RFC 1918, RFC 4193) and link-local addresses through.
// - A peer that has no IP address (a unix socket listener) is refused.
// - A header of more than `maxXffLength` entries (default 30) is refused before anything else.
//
// The header read is the one the client sent (`ctx.req`), not the one gw forwards: gw appends the
// peer to it, or replaces it when the peer is not a trusted proxy (pipeline/forwarded.ts).
// A policy on a listener and one on its route add up (config/load.ts, mergeIpAccessControl):
// their lists are joined and the route's settings win.
import { isIPv4, isIPv6 } from 'node:net';
import { GwError } from '../../errors.ts';
import { AddressRanges } from '../../pipeline/address-ranges.ts';
import type { PolicyConfig, PolicyDefinition } from '../types.ts';

type Config = PolicyConfig<'ipAccessControl'>;

export const DEFAULT_MAX_XFF_LENGTH = 30;

/** Loopback, private and link-local ranges, which skipPrivateIps lets through. */
const PRIVATE = new AddressRanges([
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '::1/128',
  'fc00::/7',
  'fe80::/10',
]);

export const ipAccessControl: PolicyDefinition<'ipAccessControl'> = {
  name: 'ipAccessControl',
  build(config) {
    const check = ipAccessCheck(config);
    return (ctx, next) => {
      check(ctx.source.address, ctx.req.headers['x-forwarded-for']);
      return next(ctx);
    };
  },
};

/**
 * The policy's decision for a peer and the X-Forwarded-For the client sent: returns when the request
 * may pass, throws the 403 when not.
 */
export function ipAccessCheck(config: Config): (peer: string, xff: string | string[] | undefined) => void {
  const allow = config.allow?.length ? new AddressRanges(config.allow) : undefined;
  const deny = config.deny?.length ? new AddressRanges(config.deny) : undefined;
  const skipPrivate = config.skipPrivateIps === true;
  const hops = config.xffNumTrustedHops;
  const maxLength = config.maxXffLength ?? DEFAULT_MAX_XFF_LENGTH;
  const fullChain = config.enforceFullChain === true;

  /** Throws when `ip` (an address, or '' for none) may not pass. */
  const admit = (ip: string) => {
    if (!isIPv4(ip) && !isIPv6(ip))
      throw new GwError('GW_ERR_IP_DENIED', 'the client address is unknown: not allowed');
    if (skipPrivate && PRIVATE.has(ip)) return;
    if (deny?.has(ip) || (allow !== undefined && !allow.has(ip)))
      throw new GwError('GW_ERR_IP_DENIED', `ip address ${ip} is not allowed`);
  };

  return (peer, header) => {
    const xff = header === undefined ? [] : entries(header);
    if (xff.length > maxLength)
      throw new GwError(
        'GW_ERR_IP_DENIED',
        `X-Forwarded-For has ${xff.length} addresses, more than the ${maxLength} allowed`,
      );
    if (fullChain) {
      for (const e of xff) {
        const ip = address(e);
        if (ip !== undefined) admit(ip);
      }
      admit(peer);
      return;
    }
    let client = peer;
    if (hops !== undefined && xff.length > 0) {
      const e = xff[Math.max(0, xff.length - hops)];
      const ip = e === undefined ? undefined : address(e);
      if (ip !== undefined) client = ip;
    }
    admit(client);
  };
}

/** The entries of X-Forwarded-For, in order, over every line of it. */
function entries(header: string | string[]): string[] {
  const out: string[] = [];
  for (const line of Array.isArray(header) ? header : [header])
    for (const part of line.split(',')) out.push(part.trim());
  return out;
}

/**
 * An entry's IP address, as the peer's is written (IPv4-mapped IPv6 as IPv4), with a port some
 * proxies add taken off (`203.0.113.7:51234`, `[2001:db8::1]:443`); undefined when it is none.
 */
function address(entry: string): string | undefined {
  let a = entry;
  if (a.startsWith('[')) {
    const end = a.indexOf(']');
    if (end === -1) return undefined;
    a = a.slice(1, end);
  } else if (a.indexOf(':') !== -1 && a.indexOf(':') === a.lastIndexOf(':')) a = a.slice(0, a.indexOf(':'));
  if (a.toLowerCase().startsWith('::ffff:') && isIPv4(a.slice(7))) a = a.slice(7);
  return isIPv4(a) || isIPv6(a) ? a : undefined;
}
