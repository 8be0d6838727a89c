// A Service of the file's `services` called by its name: each new connection is dialled at the next
// of its workloads' addresses, round robin, while the name stays the Service's (the Host header, and
// the TLS server name, which undici takes from `host`, not `hostname`).
import type { buildConnector as Connector } from 'undici';

export interface Endpoint {
  host: string;
  port: number;
}

export function dialInTurn(
  connect: Connector.connector,
  endpoints: readonly Endpoint[],
): Connector.connector {
  let next = 0;
  return (opts, callback) => {
    const e = endpoints[next++ % endpoints.length] as Endpoint;
    return connect({ ...opts, hostname: e.host, port: String(e.port) }, callback);
  };
}
