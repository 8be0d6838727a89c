// How long a TLS client has to finish its handshake (frontendPolicies.tls.handshakeTimeout, else
// http.firstRequestTimeout). Node reads the server's handshakeTimeout option for each new connection
// from a property keyed by a private symbol; setting that property is how a reload changes it on a
// server that keeps listening. A handshake that times out is reported (tlsClientError) and the bind
// servers close its connection.
import type { Server } from 'node:tls';
import type { DownstreamLimits } from '../config/ir.ts';

/** The handshake deadline of a port's TLS connections; 0: none. */
export const handshakeTimeoutMs = (l: DownstreamLimits): number =>
  l.tlsHandshakeTimeoutMs ?? l.firstRequestTimeoutMs;

/** The option to create a TLS server with. */
export function handshakeOption(l: DownstreamLimits): { handshakeTimeout?: number } {
  const ms = handshakeTimeoutMs(l);
  return ms > 0 ? { handshakeTimeout: ms } : {};
}

/**
 * Sets the deadline for the connections `server` accepts from now on; false when this Node keeps it
 * elsewhere (the deadline stays the one the server was created with).
 */
export function setHandshakeTimeout(server: Server, l: DownstreamLimits): boolean {
  const key = Object.getOwnPropertySymbols(server).find((s) => s.description === 'handshake-timeout');
  if (key === undefined) return false;
  // Node's own default when none is given: 120 s
  (server as unknown as Record<symbol, number>)[key] = handshakeTimeoutMs(l) || 120_000;
  return true;
}

/** What an HTTPS port offers when frontendPolicies.tls.alpn is unset: HTTP/2 first, then HTTP/1.1. */
export const HTTPS_ALPN: readonly string[] = ['h2', 'http/1.1'];

/**
 * Sets the ALPN protocols `server` offers to the connections it accepts from now on (`undefined`:
 * none). Node reads the server's ALPNProtocols property, in its wire form (each id after its length
 * byte), for every new connection; the HTTP/2 server sets it once from allowHTTP1, so a reload that
 * changes the list sets the property again.
 */
export function setAlpn(server: Server, protocols: readonly string[] | undefined): void {
  const s = server as unknown as { ALPNProtocols?: Buffer };
  if (!protocols || protocols.length === 0) {
    delete s.ALPNProtocols;
    return;
  }
  s.ALPNProtocols = Buffer.concat(
    protocols.map((p) => {
      const id = Buffer.from(p, 'latin1');
      return Buffer.concat([Buffer.from([id.length]), id]);
    }),
  );
}
