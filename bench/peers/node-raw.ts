// An HTTP/1.1 proxy on node:net and node's own C llhttp binding (the HTTPParser that node:http uses,
// from node:_http_common), without node:http's IncomingMessage/ServerResponse streams or undici: what
// a server path of gw's own on node:net could at best save (issue 17 asks for that measurement).
// bench/ttft.ts sets it beside node-http, node-floor and gw. It is a measuring stick, not a proxy to
// run: one upstream connection per client connection, no pipelining, no upgrades, no timeouts, and
// only the framing its tests send (content-length or chunked in, either out, re-framed as chunked).
// Usage: node node-raw.ts <listen port> <upstream port>
import { connect, createServer, type Socket } from 'node:net';
import { HOP_BY_HOP } from './hop-by-hop.ts';
import { HTTPParser, methods, parser } from './llhttp.ts';

const [port, upstreamPort] = process.argv.slice(2).map(Number);
if (!Number.isInteger(port) || !Number.isInteger(upstreamPort)) {
  throw new Error('usage: node node-raw.ts <listen port> <upstream port>');
}

/** The header block's lines from llhttp's flat [name, value, ...] list, hop-by-hop headers left out. */
function headerLines(raw: string[], drop: ReadonlySet<string> = HOP_BY_HOP): string {
  let out = '';
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (!drop.has(name.toLowerCase())) out += `${name}: ${raw[i + 1]}\r\n`;
  }
  return out;
}
/** An answer is re-framed as chunked, so its content-length goes too. */
const ANSWER_DROP = new Set([...HOP_BY_HOP, 'content-length']);

createServer({ noDelay: true }, (client: Socket) => {
  const upstream = connect({ host: '127.0.0.1', port: Number(upstreamPort), noDelay: true });
  const close = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close).on('close', close);
  upstream.on('error', close).on('close', close);

  const request = parser(
    HTTPParser.REQUEST,
    (raw, method, url) => {
      upstream.write(`${methods[method]} ${url} HTTP/1.1\r\n${headerLines(raw)}\r\n`);
    },
    (chunk) => upstream.write(chunk),
    () => {},
  );
  // The answer goes out chunked whatever its framing was (its content-length is dropped with it).
  const answer = parser(
    HTTPParser.RESPONSE,
    (raw, _method, _url, status, reason) => {
      client.write(
        `HTTP/1.1 ${status} ${reason}\r\n${headerLines(raw, ANSWER_DROP)}transfer-encoding: chunked\r\n\r\n`,
      );
    },
    (chunk) => {
      client.cork();
      client.write(`${chunk.length.toString(16)}\r\n`);
      client.write(chunk);
      client.write('\r\n');
      client.uncork();
    },
    () => client.write('0\r\n\r\n'),
  );
  client.on('data', (d: Buffer) => {
    if (request.execute(d) instanceof Error) close();
  });
  upstream.on('data', (d: Buffer) => {
    if (answer.execute(d) instanceof Error) close();
  });
}).listen(Number(port), '127.0.0.1');
