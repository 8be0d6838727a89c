// The Node floor: the least a Node reverse proxy can do per request (node:http in, an undici Pool out,
// no routing, logging or metrics), so gw / node-floor is what gw's own code costs on top of Node.
// Usage: node node-floor.ts <listen port> <upstream origin> <workers>
// Threads as gw runs them: an idle main thread and one worker_thread per worker, each with its own
// server on the port (SO_REUSEPORT when there are several, as gw's workers do) and its own Pool; the
// same V8 isolates per process, so CPU and RSS compare like for like (node:cluster would add processes).
import { createServer, type IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMainThread, Worker, workerData } from 'node:worker_threads';
import { withoutHopByHop } from './hop-by-hop.ts';

type Headers = Record<string, string | string[] | undefined>;
/** The slice of undici used here (its types do not resolve from bench/, which has no node_modules). */
interface Pool {
  request(o: { method: string; path: string; headers: Headers; body: IncomingMessage | null }): Promise<{
    statusCode: number;
    headers: Headers;
    body: NodeJS.ReadableStream;
  }>;
}

const [port, origin, workers] = (isMainThread ? process.argv.slice(2) : workerData) as [
  string,
  string,
  string,
];
if (isMainThread) {
  for (let i = 0; i < Number(workers); i++)
    new Worker(fileURLToPath(import.meta.url), { workerData: [port, origin, workers] });
} else {
  // gw's own undici (bench/ has no node_modules): the same version on both sides of the ratio.
  const fromProxy = createRequire(
    fileURLToPath(new URL('../../packages/proxy/package.json', import.meta.url)),
  );
  const { Pool } = (await import(pathToFileURL(fromProxy.resolve('undici')).href)) as {
    Pool: new (origin: string) => Pool;
  };
  const pool = new Pool(origin);
  createServer((req, res) => {
    const hasBody =
      req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    pool
      .request({
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: withoutHopByHop(req.headers),
        body: hasBody ? req : null,
      })
      .then(
        (up) => {
          res.writeHead(up.statusCode, withoutHopByHop(up.headers));
          up.body.pipe(res);
        },
        () => {
          if (!res.headersSent) res.writeHead(502);
          res.end();
        },
      );
  }).listen({ port: Number(port), host: '127.0.0.1', reusePort: Number(workers) > 1 });
}
