// The tcpRoutes of a TCP or TLS listener, compiled: the route for a connection's TLS server name
// (SNI) and, within it, a backend picked by weight. Exact names win over wildcards, a longer
// wildcard over a shorter one, a route without hostnames takes the rest; among equals the first
// route in the config wins.
import type { GlobalIR, TcpRouteIR } from '../config/ir.ts';
import { pickWeighted } from '../upstream/backends/select.ts';
import { type TcpEndpoint, tcpEndpoint } from '../upstream/tcp-connect.ts';

export interface CompiledTcpBackend {
  name: string;
  weight: number;
  endpoint: TcpEndpoint;
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

  constructor(routes: readonly TcpRouteIR[], global: GlobalIR) {
    for (const r of routes) {
      const route = compileTcpRoute(r, global);
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

function compileTcpRoute(r: TcpRouteIR, global: GlobalIR): CompiledTcpRoute {
  const backends: CompiledTcpBackend[] = r.backends
    .filter((b) => b.weight > 0)
    .map((b) => ({ name: b.name, weight: b.weight, endpoint: tcpEndpoint(b, global) }));
  const pick = pickWeighted(backends);
  return { ir: r, pick };
}
