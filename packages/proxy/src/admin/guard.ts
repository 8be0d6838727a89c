// Which requests the admin server answers at all. It has no authentication, so it must not be
// reachable from a web page: a DNS-rebinding page sends its own host name in `Host`, and a page that
// posts a form or loads an image sends `Origin` / `Sec-Fetch-Site`, and both are refused here.
import { isIP } from 'node:net';
import type { ListenAddress } from './address.ts';

export interface Refusal {
  status: 403;
  message: string;
}

/** Browsers send `none` for what the user typed into the address bar, `same-origin` for the admin's own links. */
const BROWSER_SITES_ALLOWED = new Set(['none', 'same-origin']);

const isLoopback = (host: string) =>
  host === 'localhost' ||
  host === '::1' ||
  (isIP(host) === 4 && host.startsWith('127.')) ||
  host === '::ffff:127.0.0.1';

/** The host name of a `Host` header or an origin's authority, lower case, without brackets or port. */
export function hostOf(authority: string): string | undefined {
  const a = authority.trim().toLowerCase();
  if (a === '') return undefined;
  if (a.startsWith('[')) {
    const end = a.indexOf(']');
    if (end < 0) return undefined;
    const rest = a.slice(end + 1);
    if (rest !== '' && !/^:[0-9]{1,5}$/.test(rest)) return undefined;
    return a.slice(1, end);
  }
  const colon = a.indexOf(':');
  if (colon >= 0 && !/^:[0-9]{1,5}$/.test(a.slice(colon))) return undefined;
  const h = colon >= 0 ? a.slice(0, colon) : a;
  // `localhost.` is the same name as `localhost`.
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/**
 * The `Host` names the admin server answers: loopback names always; when it is bound to a
 * non-loopback address on purpose, that address too, and with a wildcard bind (`0.0.0.0`, `::`) any
 * IP literal, since the machine's addresses are not known up front. A DNS name other than
 * `localhost` is never accepted: that is what a rebinding page would send.
 */
export function allowedHost(bind: ListenAddress, host: string): boolean {
  if (isLoopback(host)) return true;
  if (bind.kind !== 'tcp') return false;
  const bound = bind.host.toLowerCase();
  if (bound === '0.0.0.0' || bound === '::') return isIP(host) !== 0;
  return host === bound;
}

/**
 * Undefined when the request may be answered, else why not. A unix socket is not reachable from a
 * browser, so only TCP binds check headers. Clients that are not browsers (gwctl, curl, a
 * port-forward) send neither `Origin` nor `Sec-Fetch-Site` and a loopback or bound `Host`.
 */
export function refuse(
  bind: ListenAddress,
  headers: Record<string, string | string[] | undefined>,
): Refusal | undefined {
  if (bind.kind !== 'tcp') return undefined;
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const rawHost = one('host');
  if (rawHost !== undefined) {
    const host = hostOf(rawHost);
    if (host === undefined || !allowedHost(bind, host)) {
      return {
        status: 403,
        message: `admin: Host ${JSON.stringify(rawHost)} is not allowed; use 127.0.0.1, localhost or [::1] (or the admin bind address)`,
      };
    }
  }
  const site = one('sec-fetch-site');
  if (site !== undefined && !BROWSER_SITES_ALLOWED.has(site.toLowerCase())) {
    return { status: 403, message: `admin: requests from other sites are refused (Sec-Fetch-Site: ${site})` };
  }
  const origin = one('origin');
  if (origin !== undefined) {
    let sameOrigin = false;
    try {
      const o = new URL(origin);
      sameOrigin = rawHost !== undefined && o.host.toLowerCase() === rawHost.trim().toLowerCase();
    } catch {
      // `null` and other opaque origins are never the admin page itself.
    }
    if (!sameOrigin) {
      return { status: 403, message: `admin: requests from other origins are refused (Origin: ${origin})` };
    }
  }
  return undefined;
}
