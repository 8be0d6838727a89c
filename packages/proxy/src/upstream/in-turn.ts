// A Service of the file's `services` called by its name: each new connection is dialled at the next
// of its workloads' addresses, round robin, while the name stays the Service's (the Host header, and
// the TLS server name, which undici takes from `host`, not `hostname`).
import { createHash } from 'node:crypto';
import type { buildConnector as Connector, Dispatcher } from 'undici';
import { type InTurnEndpoint as Endpoint, scaledWeights } from '../config/connection-ir.ts';
import { Secret } from '../secret.ts';

export type { InTurnEndpoint as Endpoint } from '../config/connection-ir.ts';

/**
 * The turn: endpoint indexes, each as often as its weight (scaled to at most 256 in all), spread
 * out (smooth weighted round robin: 3:1 is a a b a, not a a a b). Equal weights: 0, 1, …, n-1.
 */
export function turnOrder(endpoints: readonly Endpoint[]): number[] {
  const w = scaledWeights(
    endpoints.map((e) => e.weight ?? 1),
    256,
  );
  const total = w.reduce((a, b) => a + b, 0);
  const current = w.map(() => 0);
  const order: number[] = [];
  for (let k = 0; k < total; k++) {
    let best = 0;
    for (let i = 0; i < w.length; i++) {
      current[i] = (current[i] as number) + (w[i] as number);
      if ((current[i] as number) > (current[best] as number)) best = i;
    }
    current[best] = (current[best] as number) - total;
    order.push(best);
  }
  return order;
}

/** Errors that say a workload could not be reached (before any byte was sent): the next one is tried. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** How long a workload that could not be reached is passed over by new connections. */
export const SKIP_UNREACHABLE_MS = 10_000;

/**
 * `connect`, dialling each connection at the next of `endpoints` in a turn where each comes as often
 * as its weight (turnOrder). The turn starts at a random place, so that the workers, and the routes
 * that call the same Service, do not all begin with the first.
 * A workload that cannot be reached is passed over for `SKIP_UNREACHABLE_MS` and the connection is
 * dialled at the next one, each at most once, so one stopped workload fails no call while another
 * answers (when every one is passed over, they are dialled in turn as before). `connect` keeps the
 * deadline of each attempt.
 */
export function dialInTurn(
  connect: Connector.connector,
  endpoints: readonly Endpoint[],
  now: () => number = Date.now,
): Connector.connector {
  const n = endpoints.length;
  if (n === 0) return connect;
  const order = turnOrder(endpoints);
  const turn = order.length;
  let next = Math.floor(Math.random() * turn);
  const skipUntil = new Float64Array(n);
  // undici's connector returns the socket it opens, though its types say void.
  const open = connect as (o: Connector.Options, cb: Connector.Callback) => unknown;
  return ((opts: Connector.Options, callback: Connector.Callback) => {
    const tried = new Set<number>();
    const pick = (): number => {
      const t = now();
      for (let k = 0; k < turn; k++) {
        const at = (next + k) % turn;
        const i = order[at] as number;
        if (!tried.has(i) && (skipUntil[i] ?? 0) <= t) {
          next = at + 1;
          return i;
        }
      }
      // every workload not yet tried is passed over: take them in turn all the same
      for (let k = 0; k < turn; k++) {
        const at = (next + k) % turn;
        const i = order[at] as number;
        if (!tried.has(i)) {
          next = at + 1;
          return i;
        }
      }
      return -1;
    };
    const attempt = (i: number): unknown => {
      tried.add(i);
      const e = endpoints[i] as Endpoint;
      return open({ ...opts, hostname: e.host, port: String(e.port) }, (err, socket) => {
        if (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code && UNREACHABLE.has(code)) {
            skipUntil[i] = now() + SKIP_UNREACHABLE_MS;
            const j = pick();
            if (j !== -1) {
              attempt(j);
              return;
            }
          }
          callback(err, null);
          return;
        }
        skipUntil[i] = 0;
        callback(null, socket as NonNullable<typeof socket>);
      });
    };
    return attempt(pick());
  }) as Connector.connector;
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
  // JSON.stringify calls a Secret's toJSON ('[redacted]') before the replacer sees the value: the
  // holder still has the Secret itself
  const text = JSON.stringify(parts, function (this: Record<string, unknown>, k, v) {
    const raw = this[k];
    return raw instanceof Secret ? `k:${raw.reveal()}` : v;
  });
  return createHash('sha256').update(text).digest('base64url');
}
