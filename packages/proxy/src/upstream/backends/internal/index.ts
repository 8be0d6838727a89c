// A backend that is gw's own admin API (agentgateway's `internal`): `forward` sends the request as
// it is (after the route's policies: a urlRewrite strips a prefix), a path sends every request to that
// admin path, its query kept. The admin server runs in the main thread; a worker reaches it over
// loopback (or its unix socket), with a Host the admin answers. The admin's own refusals still apply:
// a request a browser sent from another site or origin (Sec-Fetch-Site, Origin) is refused there, so
// exposing the admin this way needs the route's authentication, not a change to the admin. The Host
// check the admin makes against DNS rebinding is made here on the client's Host: a route that takes
// any Host serves the admin only to requests naming an address or localhost.
import { isIP } from 'node:net';
import { GwError } from '../../../errors.ts';
import { callUpstream } from '../../call.ts';
import { Pool } from '../../undici.ts';
import type { BackendKind } from '../types.ts';

interface AdminEndpoint {
  /** What the admin server is bound to (`host:port`, `unix:/path`), as the start-up line says. */
  address: string;
  /** host:port dialled (a wildcard bind's loopback), or the socket path. */
  endpoint: string;
  host: string;
  pool: Pool;
}

let admin: AdminEndpoint | undefined;

/**
 * Where this thread's internal backends find the admin API: its bound address, or undefined when the
 * admin is off (`config.adminAddr: off`). The supervisor sends it to every data plane.
 */
export function setAdminAddress(address: string | undefined): void {
  if (address === admin?.address) return;
  const old = admin;
  admin = address === undefined ? undefined : adminEndpoint(address);
  // requests in flight on the old pool finish; it takes no new ones
  void old?.pool.close().catch(() => {});
}

function adminEndpoint(address: string): AdminEndpoint {
  if (address.startsWith('unix:')) {
    const path = address.slice(5);
    return {
      address,
      endpoint: address,
      host: 'localhost',
      pool: new Pool('http://localhost', { socketPath: path, connections: 4 }),
    };
  }
  const i = address.lastIndexOf(':');
  const bound = address.slice(0, i);
  const port = address.slice(i + 1);
  // a wildcard bind answers on loopback, and the admin takes a loopback Host
  const host = bound === '0.0.0.0' ? '127.0.0.1' : bound === '[::]' ? '[::1]' : bound;
  const endpoint = `${host}:${port}`;
  return { address, endpoint, host: endpoint, pool: new Pool(`http://${endpoint}`, { connections: 4 }) };
}

export const internalBackend: BackendKind<'internal'> = {
  kind: 'internal',
  compile(t, env) {
    const timeout = env.attemptTimeoutMs;
    return {
      type: 'internal',
      protocol: 'http',
      target: () => admin?.endpoint ?? 'admin (off)',
      call: (ctx) => {
        if (t.anyHost && !addressOrLocalhost(ctx.host))
          throw new GwError(
            'GW_ERR_FORBIDDEN',
            `the admin API answers a request for ${JSON.stringify(ctx.host)} only on a route or listener whose hostnames name it`,
          );
        const a = admin;
        if (a === undefined)
          throw new GwError(
            'GW_ERR_UPSTREAM_CONNECT',
            'the admin API is off (config.adminAddr), so internal backends have no target',
          );
        if (t.path !== undefined) ctx.path = t.path;
        // the admin answers a loopback Host only: whatever the route's host rewriting says
        ctx.headers.host = a.host;
        return callUpstream(ctx, { dispatcher: a.pool, endpoint: a.endpoint, hostHeader: a.host }, timeout);
      },
    };
  },
};

/** An IP literal (bracketed or not) or localhost: names no rebinding page can hold. */
function addressOrLocalhost(host: string): boolean {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return isIP(h) !== 0 || h === 'localhost' || h === 'localhost.';
}
