// Real HTTP servers on loopback port 0 for tests: an echo upstream that reports what it received,
// plus behaviours tests need (slow, streaming, reset, fixed status).
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Echo {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  server: string;
}

export interface TestServer {
  port: number;
  origin: string;
  /** Requests seen, newest last. */
  seen: Echo[];
  /** TCP connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export type Behaviour = (req: IncomingMessage, res: ServerResponse, echo: Echo) => void | Promise<void>;

/** Echoes the request as JSON unless `behaviour` answers; the path `/status/NNN` answers with NNN. */
export async function startUpstream(name = 'upstream', behaviour?: Behaviour): Promise<TestServer> {
  const seen: Echo[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const echo: Echo = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
      server: name,
    };
    seen.push(echo);
    if (behaviour) {
      await behaviour(req, res, echo);
      if (res.writableEnded || res.headersSent) return;
    }
    const status = /^\/status\/([0-9]{3})/.exec(req.url ?? '');
    const body = JSON.stringify(echo);
    res.writeHead(status ? Number(status[1]) : 200, {
      'content-type': 'application/json',
      'x-upstream': name,
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  });
  server.keepAliveTimeout = 30_000;
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    seen,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
