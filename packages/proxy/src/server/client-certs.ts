// Client certificates (mTLS): a TLS listener with `tls.root` takes only clients whose certificate
// that CA verifies. The handshake asks for one when a listener of the port verifies clients; when all
// of the port's TLS listeners do, a client without a valid one fails the handshake; when only some
// do, the handshake takes it and each request to such a listener is checked (the listener is chosen
// by the request's Host, which need not be the name the handshake was for).
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { TLSSocket, Server as TlsServer } from 'node:tls';
import { GwError } from '../errors.ts';
import type { CompiledBind, CompiledListener } from '../routing/table.ts';

/** Whether the listener takes only clients with a certificate its CA verifies. */
export function verifiesClients(l: CompiledListener | undefined): boolean {
  return l?.ir.tls?.root !== undefined;
}

/** Sets whether the server asks for and requires client certificates (read for each new connection). */
export function applyClientCerts(server: TlsServer, bind: CompiledBind): void {
  const tls = bind.listeners.filter((l) => l.secureContext);
  const verifying = tls.filter(verifiesClients).length;
  const s = server as TlsServer & { requestCert: boolean; rejectUnauthorized: boolean };
  s.requestCert = verifying > 0;
  s.rejectUnauthorized = verifying > 0 && verifying === tls.length;
}

/** Whether the request came over TLS with a client certificate the listener's CA verified. */
export function clientVerified(req: IncomingMessage | Http2ServerRequest): boolean {
  return tlsSocketOf(req)?.authorized === true;
}

/** A 403 when `listener` takes only clients with a verified certificate and `req`'s connection has none. */
export function unverifiedClient(
  listener: CompiledListener | undefined,
  req: IncomingMessage | Http2ServerRequest,
): GwError | undefined {
  if (!verifiesClients(listener) || clientVerified(req)) return undefined;
  return new GwError(
    'GW_ERR_FORBIDDEN',
    'this listener takes clients with a certificate its CA verifies (tls.root)',
  );
}

/** The server name the client's TLS handshake asked for (SNI), lower-cased; undefined without one. */
export function serverNameOf(req: IncomingMessage | Http2ServerRequest): string | undefined {
  const name = tlsSocketOf(req)?.servername;
  return typeof name === 'string' && name !== '' ? name.toLowerCase() : undefined;
}

function tlsSocketOf(req: IncomingMessage | Http2ServerRequest): TLSSocket | undefined {
  return ('stream' in req ? req.stream.session?.socket : req.socket) as TLSSocket | undefined;
}
