// A local port on 127.0.0.1 that forwards to one port of a pod through the Kubernetes API, as
// `kubectl port-forward` does: one WebSocket per accepted connection, each closed with its connection.
import net from 'node:net';
import { PassThrough, type Readable, Writable } from 'node:stream';
import { PortForward } from '@kubernetes/client-node';
import { causeOf, GwctlError } from './errors.ts';
import { type Cluster, statusError } from './kube-client.ts';

export interface PodPort {
  namespace: string;
  pod: string;
  port: number;
}

export interface LocalForward {
  /** The port on 127.0.0.1 that reaches the pod's port. */
  port: number;
  /**
   * The first failure of a forwarded connection. A client of the local port only sees a reset, so
   * whoever reports that reset should report this instead.
   */
  failure(): GwctlError | undefined;
  /** Stops listening and cuts every forwarded connection. */
  close(): void;
}

/** The part of the client's WebSocket (`ws`, untyped here) this module uses. */
interface Tunnel {
  readyState: number;
  close(): void;
  terminate(): void;
  on(event: 'close', listener: () => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}
const CLOSED = 3;

const where = (t: PodPort) => `pod ${t.namespace}/${t.pod} port ${t.port}`;

/** Why the WebSocket to the API server was not opened; `ws` rejects with an ErrorEvent-like object. */
function openError(c: Cluster, t: PodPort, err: unknown): GwctlError {
  const e = err as { error?: unknown; message?: string };
  const cause = e.error ?? err;
  const status = /Unexpected server response: (\d+)/.exec(e.message ?? causeOf(cause));
  if (status) {
    const code = Number(status[1]);
    if (code === 401 || code === 403) {
      return statusError(c, { verb: 'create', resource: 'pods/portforward', namespace: t.namespace }, code);
    }
    return new GwctlError(
      'GWCTL_ERR_PORT_FORWARD',
      `port-forward to ${where(t)}: the API server at ${c.server} refused the connection upgrade (HTTP ${code})`,
    );
  }
  return new GwctlError(
    'GWCTL_ERR_PORT_FORWARD',
    `port-forward to ${where(t)} through ${c.server} failed: ${causeOf(cause)}`,
  );
}

/** Collects what the kubelet reports on a connection's error channel (e.g. nothing listens there). */
function errorChannel(onText: (text: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      const text = chunk.toString('utf8').trim();
      if (text) onText(text);
      done();
    },
  });
}

export async function openForward(c: Cluster, t: PodPort): Promise<LocalForward> {
  const pf = new PortForward(c.kc, true);
  const open = async (output: Writable, errors: Writable, input: Readable) => {
    const ws = await pf.portForward(t.namespace, t.pod, [t.port], output, errors, input);
    // Without retries the client hands back the socket itself, never the reconnecting getter.
    return ws as unknown as Tunnel;
  };

  // Fail before the trace starts, with the API server's answer, rather than as a reset mid-trace.
  let probe: Tunnel;
  try {
    probe = await open(
      new PassThrough(),
      errorChannel(() => {}),
      new PassThrough(),
    );
  } catch (err) {
    throw openError(c, t, err);
  }
  const tunnels = new Set<Tunnel>([probe]);
  probe.on('close', () => tunnels.delete(probe));
  probe.on('error', () => {});
  probe.close();

  let failed: GwctlError | undefined;
  const fail = (err: GwctlError) => {
    failed ??= err;
  };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // The peer is our own trace client; a broken socket just ends this connection.
    socket.on('error', () => socket.destroy());
    const errors = errorChannel((text) => {
      fail(new GwctlError('GWCTL_ERR_PORT_FORWARD', `port-forward to ${where(t)} failed: ${text}`));
      socket.destroy();
    });
    open(socket, errors, socket).then(
      (ws) => {
        tunnels.add(ws);
        ws.on('error', (err) => fail(openError(c, t, err)));
        // end(), not destroy(): bytes the pod sent just before closing must still reach the client.
        ws.on('close', () => {
          tunnels.delete(ws);
          socket.end();
        });
        if (socket.destroyed) ws.close();
        else socket.on('close', () => ws.close());
      },
      (err) => {
        fail(openError(c, t, err));
        socket.destroy();
      },
    );
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
  } catch (err) {
    for (const ws of tunnels) ws.terminate();
    throw new GwctlError(
      'GWCTL_ERR_PORT_FORWARD',
      `cannot listen on 127.0.0.1 for ${where(t)}: ${causeOf(err)}`,
    );
  }
  return {
    port: (server.address() as net.AddressInfo).port,
    failure: () => failed,
    close() {
      server.close();
      for (const s of sockets) s.destroy();
      for (const ws of tunnels) if (ws.readyState !== CLOSED) ws.terminate();
      tunnels.clear();
    },
  };
}
