// HTTP/1.1 in on node:net with node's C llhttp binding (as node-raw), out through an undici Pool (as
// node-floor): what a server path of gw's own would save with gw's client left as it is.
// A measuring stick like node-raw: requests on a connection answered in order, bodies buffered
// before they go upstream, no upgrades or timeouts.
// Usage: node node-raw-undici.ts <listen port> <upstream port>
import { createRequire } from 'node:module';
import { createServer, type Socket } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { HOP_BY_HOP } from './hop-by-hop.ts';
import { HTTPParser, methods, parser } from './llhttp.ts';

type Headers = Record<string, string | string[] | undefined>;
interface Pool {
  request(o: { method: string; path: string; headers: string[]; body: Buffer | null }): Promise<{
    statusCode: number;
    headers: Headers;
    body: NodeJS.ReadableStream;
  }>;
}
const fromProxy = createRequire(fileURLToPath(new URL('../../packages/proxy/package.json', import.meta.url)));
const { Pool } = (await import(pathToFileURL(fromProxy.resolve('undici')).href)) as {
  Pool: new (origin: string) => Pool;
};

const [port, upstreamPort] = process.argv.slice(2).map(Number);
if (!Number.isInteger(port) || !Number.isInteger(upstreamPort)) {
  throw new Error('usage: node node-raw-undici.ts <listen port> <upstream port>');
}
const pool = new Pool(`http://127.0.0.1:${upstreamPort}`);
const STATUS: Record<number, string> = { 200: 'OK', 404: 'Not Found', 502: 'Bad Gateway' };

function answerHead(status: number, headers: Headers): { head: string; chunked: boolean } {
  let out = `HTTP/1.1 ${status} ${STATUS[status] ?? 'Unknown'}\r\n`;
  let chunked = true;
  for (const name in headers) {
    if (HOP_BY_HOP.has(name)) continue;
    const v = headers[name];
    if (v === undefined) continue;
    if (name === 'content-length') chunked = false;
    if (Array.isArray(v)) for (const x of v) out += `${name}: ${x}\r\n`;
    else out += `${name}: ${v}\r\n`;
  }
  if (chunked) out += 'transfer-encoding: chunked\r\n';
  return { head: `${out}\r\n`, chunked };
}

createServer({ noDelay: true }, (client: Socket) => {
  let method = '';
  let url = '';
  let headers: string[] = [];
  let body: Buffer[] = [];
  let chain: Promise<void> = Promise.resolve();
  const onHead = (all: string[], m: number, u: string): void => {
    headers = [];
    for (let i = 0; i < all.length; i += 2) {
      const name = all[i] as string;
      if (!HOP_BY_HOP.has(name.toLowerCase()) && name.toLowerCase() !== 'host')
        headers.push(name, all[i + 1] as string);
    }
    method = methods[m] as string;
    url = u;
    body = [];
  };
  const onBody = (chunk: Buffer): void => {
    body.push(Buffer.from(chunk));
  };
  const onEnd = (): void => {
    const call = pool.request({
      method,
      path: url,
      headers,
      body: body.length === 0 ? null : Buffer.concat(body),
    });
    chain = chain.then(() =>
      call.then(
        (up) =>
          new Promise<void>((done) => {
            const { head, chunked } = answerHead(up.statusCode, up.headers);
            client.write(head);
            up.body.on('data', (c: Buffer) => {
              if (!chunked) {
                client.write(c);
                return;
              }
              client.cork();
              client.write(`${c.length.toString(16)}\r\n`);
              client.write(c);
              client.write('\r\n');
              client.uncork();
            });
            up.body.on('end', () => {
              if (chunked) client.write('0\r\n\r\n');
              done();
            });
            up.body.on('error', () => {
              client.destroy();
              done();
            });
          }),
        () => {
          client.write('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
        },
      ),
    );
  };
  const p = parser(HTTPParser.REQUEST, onHead, onBody, onEnd);
  client.on('data', (d: Buffer) => {
    if (p.execute(d) instanceof Error) client.destroy();
  });
  client.on('error', () => client.destroy());
}).listen(Number(port), '127.0.0.1');
