// For tests of a proxy running in the test's own process: gw's side of each connection the test
// opens to it, as node's `net.server.socket` diagnostics channel announces them.
import diagnostics from 'node:diagnostics_channel';
import type net from 'node:net';

export interface AcceptedSockets {
  /** gw's side of the client's connection, once gw has accepted it. */
  serverSide(client: net.Socket): Promise<net.Socket>;
  /** Stops watching. */
  close(): void;
}

/** Watches the connections accepted on the port `port()` returns (0 until the proxy listens). */
export function watchAccepted(port: () => number): AcceptedSockets {
  const accepted = new Map<number, net.Socket>();
  const onAccept = (msg: unknown) => {
    const socket = (msg as { socket: net.Socket }).socket;
    if (socket.localPort === port() && socket.remotePort !== undefined)
      accepted.set(socket.remotePort, socket);
  };
  diagnostics.subscribe('net.server.socket', onAccept);
  return {
    async serverSide(client) {
      for (let i = 0; i < 100; i++) {
        const s = accepted.get(client.localPort ?? -1);
        if (s) return s;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error('gw never accepted the connection');
    },
    close: () => diagnostics.unsubscribe('net.server.socket', onAccept),
  };
}
