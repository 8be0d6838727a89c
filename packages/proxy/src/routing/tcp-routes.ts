// The tcpRoutes of a TCP or TLS listener, compiled: the route for a connection's TLS server name
// (SNI) and, within it, a backend picked by weight. Exact names win over wildcards, a longer
// wildcard over a shorter one, a route without hostnames takes the rest; among equals the first
// route in the config wins.
import { splitHostPort } from '@gw/api/runtime';
import { compileCel } from '../cel/cel.ts';
import type { GlobalIR, TcpBackendIR, TcpRouteIR } from '../config/ir.ts';
import { AUTHORITY_FORM } from '../pipeline/request-target.ts';
import { pickWeighted } from '../upstream/backends/select.ts';
import { type EndpointHealth, endpointHealth } from '../upstream/health.ts';
import type { PoolRegistry, Retained } from '../upstream/pools.ts';
import { type DialableTcpBackend, type TcpEndpoint, tcpEndpoint } from '../upstream/tcp-connect.ts';

/** A TCP connection as a dynamic backend's target sees it (CEL's source.* and destination.*). */
export interface TcpConnectionView {
  source: { address: string; port: number };
  /** Where the client connected; hostname: the TLS server name it sent, if any. */
  destination: { address: string; port: number; hostname?: string };
}

export interface CompiledTcpBackend {
  name: string;
  weight: number;
  /** Where every connection goes; a dynamic backend has `dial` instead. */
  endpoint?: TcpEndpoint;
  /** A dynamic backend: the endpoint for one connection, or why there is none. */
  dial?: (conn: TcpConnectionView) => TcpEndpoint | string;
  /** A named backend's passive health: told whether each connection could be made. */
  health?: EndpointHealth;
}

export interface CompiledTcpRoute {
  ir: TcpRouteIR;
  /** A backend by weight; undefined when the route has none of weight above 0. */
  pick(): CompiledTcpBackend | undefined;
}

export class TcpRouter {
  readonly #exact = new Map<string, CompiledTcpRoute>();
  readonly #wildcards: { suffix: string; route: CompiledTcpRoute }[] = [];
  #any: CompiledTcpRoute | undefined;

  constructor(
    routes: readonly TcpRouteIR[],
    global: GlobalIR,
    pools: PoolRegistry | null = null,
    used: Set<Retained> = new Set(),
  ) {
    for (const r of routes) {
      const route = compileTcpRoute(r, global, pools, used);
      if (r.hostnames.length === 0) {
        this.#any ??= route;
        continue;
      }
      for (const h of r.hostnames) {
        if (h.startsWith('*.')) {
          const suffix = h.slice(1);
          if (!this.#wildcards.some((w) => w.suffix === suffix)) this.#wildcards.push({ suffix, route });
        } else if (!this.#exact.has(h)) this.#exact.set(h, route);
      }
    }
    // stable: among suffixes of one length the first route keeps its place
    this.#wildcards.sort((a, b) => b.suffix.length - a.suffix.length);
  }

  /** The route for a connection whose server name is `sni` (lower-case; undefined: none sent). */
  select(sni: string | undefined): CompiledTcpRoute | undefined {
    if (sni !== undefined && sni !== '') {
      const exact = this.#exact.get(sni);
      if (exact) return exact;
      for (const w of this.#wildcards)
        if (sni.endsWith(w.suffix) && sni.length > w.suffix.length) return w.route;
    }
    return this.#any;
  }
}

function compileTcpRoute(
  r: TcpRouteIR,
  global: GlobalIR,
  pools: PoolRegistry | null,
  used: Set<Retained>,
): CompiledTcpRoute {
  const backends: CompiledTcpBackend[] = r.backends
    .filter((b) => b.weight > 0)
    .map((b): CompiledTcpBackend => {
      if (b.target.kind === 'dynamic')
        return { name: b.name, weight: b.weight, dial: dynamicDial(b, global) };
      const endpoint = tcpEndpoint(b as DialableTcpBackend, global);
      const health = b.policies.health
        ? endpointHealth(b.policies.health, b.name, endpoint.address, pools, used)
        : undefined;
      return { name: b.name, weight: b.weight, endpoint, ...(health ? { health } : {}) };
    });
  const all = pickWeighted(backends);
  if (!backends.some((b) => b.health)) return { ir: r, pick: all };
  // Those ejected are left out while another is in; with every one out, any (panic), as for HTTP.
  return {
    ir: r,
    pick: () => {
      const now = Date.now();
      const inSet = backends.filter((b) => b.health === undefined || b.health.available(now));
      if (inSet.length === backends.length || inSet.length === 0) return all();
      return pickWeighted(inSet)();
    },
  };
}

/**
 * A dynamic backend's dialer: dynamic.target's host:port for the connection, else its TLS server name
 * at the port it came to. Never a unix socket: the client's server name must not reach one.
 */
function dynamicDial(b: TcpBackendIR, global: GlobalIR): (conn: TcpConnectionView) => TcpEndpoint | string {
  const expr = b.target.kind === 'dynamic' ? b.target.target : undefined;
  const program = expr === undefined ? undefined : compileCel(expr);
  return (conn) => {
    let where: string;
    if (program) {
      const v = program.eval({ source: conn.source, destination: conn.destination });
      if (typeof v !== 'string' || !AUTHORITY_FORM.test(v))
        return `dynamic.target gave ${v === undefined ? 'no value (an error or a missing field)' : JSON.stringify(typeof v === 'bigint' ? String(v) : v)}, not host:port`;
      where = v.toLowerCase();
    } else {
      const name = conn.destination.hostname;
      if (!name) return 'the client sent no server name for the dynamic backend to dial';
      where = `${name}:${conn.destination.port}`;
      if (!AUTHORITY_FORM.test(where)) return `the server name ${JSON.stringify(name)} is not a host to dial`;
    }
    const { host, port } = splitHostPort(where);
    if (!(port >= 1 && port <= 65535)) return `dynamic backend: port ${port} is not 1-65535`;
    return tcpEndpoint({ ...b, target: { kind: 'host', host, port } }, global);
  };
}
