// networkExtAuthz at the bind servers: an asynchronous check of each new connection (by its client's
// address, after any PROXY header, and the address it reached) that the connection waits for before
// any server of gw reads it. The connection cap and networkAuthorization run first, so a refused peer
// costs no call; whoever runs admission later (the servers' own 'connection' listeners) gets the
// answer already given.
import type { Socket } from 'node:net';
import { normalizeAddress } from '../pipeline/context.ts';
import { clientOf, type Peer } from './proxy-protocol.ts';

/** True lets the connection on; false closes it. Never rejects. */
export type ConnectionCheck = (client: Peer, local: Peer) => Promise<boolean>;

/** `admit` run once per socket: later calls give the first call's answer. */
export function admitOnce(admit: (socket: Socket) => boolean): (socket: Socket) => boolean {
  const answered = new WeakMap<Socket, boolean>();
  return (socket) => {
    const known = answered.get(socket);
    if (known !== undefined) return known;
    const ok = admit(socket);
    answered.set(socket, ok);
    return ok;
  };
}

/**
 * The gate's hold (proxy-protocol.ts gateConnections) for a bind: undefined (nothing to wait for)
 * without a check; else admission, then the check.
 */
export function holdFor(
  admit: (socket: Socket) => boolean,
  check: () => ConnectionCheck | undefined,
): (socket: Socket) => Promise<boolean> | undefined {
  return (socket) => {
    const c = check();
    if (!c) return undefined;
    if (!admit(socket)) return Promise.resolve(false);
    const local = { address: normalizeAddress(socket.localAddress ?? ''), port: socket.localPort ?? 0 };
    return c(clientOf(socket), local);
  };
}
