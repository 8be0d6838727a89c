// The HTTP side the fake LLM providers share: each request's body is read whole, parsed when it is a
// JSON object, kept for the test's asserts, and handed to the provider's own answering function.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request a fake provider received. */
export interface FakeLlmRequest {
  method: string;
  /** Path and query. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: Record<string, unknown> | undefined;
  body: string;
}

export interface FakeServer {
  server: http.Server;
  port: number;
  /** Requests received, newest last. */
  seen: FakeLlmRequest[];
  close(): Promise<void>;
}

export async function startFakeServer(
  port: number | undefined,
  answer: (r: FakeLlmRequest, req: IncomingMessage, res: ServerResponse) => Promise<void>,
  /** The loopback address to listen on (default 127.0.0.1). */
  host = '127.0.0.1',
): Promise<FakeServer> {
  const seen: FakeLlmRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: Record<string, unknown> | undefined;
      try {
        const v = JSON.parse(body) as unknown;
        if (v && typeof v === 'object' && !Array.isArray(v)) json = v as Record<string, unknown>;
      } catch {}
      const r: FakeLlmRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        json,
        body,
      };
      seen.push(r);
      answer(r, req, res).catch(() => res.destroy());
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(port ?? 0, host, () => {
      server.off('error', fail);
      done();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
