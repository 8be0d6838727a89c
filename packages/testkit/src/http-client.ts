// A plain node:http client for tests that need what fetch hides: the Host header, a chosen agent,
// the HTTP version and whether the socket was reused.
import http, { type IncomingHttpHeaders } from 'node:http';
import net, { type AddressInfo } from 'node:net';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  httpVersion: string;
  reusedSocket: boolean;
}

export interface GetOptions {
  host?: string;
  method?: string;
  headers?: Record<string, string>;
  /** Default: a new connection per request. */
  agent?: http.Agent;
}

/** One request to 127.0.0.1:port, the whole body read as text. */
export function httpGet(port: number, path: string, opts: GetOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        headers: { ...(opts.host ? { host: opts.host } : {}), ...opts.headers },
        agent: opts.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
            httpVersion: res.httpVersion,
            reusedSocket: req.reusedSocket,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A loopback port that was free a moment ago. */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
