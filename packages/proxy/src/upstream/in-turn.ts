// A Service of the file's `services` called by its name: each new connection is dialled at the next
// of its workloads' addresses, round robin, while the name stays the Service's (the Host header, and
// the TLS server name, which undici takes from `host`, not `hostname`).
import { createHash } from 'node:crypto';
import type { buildConnector as Connector, Dispatcher } from 'undici';

export interface Endpoint {
  host: string;
  port: number;
}

/**
 * `connect`, dialling each connection at the next of `endpoints`. The turn starts at a random one,
 * so that the workers, and the routes that call the same Service, do not all begin with the first.
 */
export function dialInTurn(
  connect: Connector.connector,
  endpoints: readonly Endpoint[],
): Connector.connector {
  let next = Math.floor(Math.random() * endpoints.length);
  return (opts, callback) => {
    const e = endpoints[next++ % endpoints.length] as Endpoint;
    return connect({ ...opts, hostname: e.host, port: String(e.port) }, callback);
  };
}

const agents = new Map<string, Dispatcher>();

/**
 * The dispatcher a policy calls its service through (a Service's, or one with TLS settings of its
 * own), one per `key` (the caller's: what it is for, the endpoints, the TLS settings), shared by the
 * routes and the config versions that call it, so a reload does not reconnect. A dispatcher no
 * config uses any more holds no connection once they have been idle for its keep-alive time.
 */
export function serviceDispatcher<D extends Dispatcher>(key: string, create: () => D): D {
  let d = agents.get(key);
  if (!d) {
    d = create();
    agents.set(key, d);
  }
  return d as D;
}

/**
 * A key from what a connection is made of (endpoints, TLS settings), for `serviceDispatcher` and the
 * policies' gRPC channels: secrets hashed in, not kept.
 */
export function dispatcherKey(...parts: unknown[]): string {
  const text = JSON.stringify(parts, (_k, v) =>
    v && typeof v === 'object' && 'reveal' in v ? `k:${v.reveal()}` : v,
  );
  return createHash('sha256').update(text).digest('base64url');
}
