// Binds a listening socket of a bind (HTTP or TCP): dual-stack, SO_REUSEPORT when several workers
// share the port, and the port the OS chose when it was 0.
import type { ListenOptions, Server } from 'node:net';

export async function listenOn(
  server: Server,
  address: string,
  port: number,
  reusePort: boolean,
): Promise<number> {
  await listenWith(server, { host: address, port, reusePort, ipv6Only: false });
  const a = server.address();
  return typeof a === 'object' && a ? a.port : port;
}

/** server.listen(options) as a promise: rejects with the bind error (EADDRINUSE, EACCES). */
export function listenWith(server: Server, options: ListenOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(options, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
