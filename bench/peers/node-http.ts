// node:http on both sides: a server, and node's own client over a keep-alive Agent (C llhttp parses
// both ways, where node-floor answers through undici, whose llhttp is WebAssembly). No routing,
// logging or metrics. bench/ttft.ts sets it beside node-floor and gw to show what the upstream client
// costs in time to first token.
// Usage: node node-http.ts <listen port> <upstream port>
import { Agent, createServer, type IncomingHttpHeaders, request } from 'node:http';

const [port, upstreamPort] = process.argv.slice(2).map(Number);
if (!Number.isInteger(port) || !Number.isInteger(upstreamPort)) {
  throw new Error('usage: node node-http.ts <listen port> <upstream port>');
}
const agent = new Agent({ keepAlive: true });
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
const strip = (h: IncomingHttpHeaders): IncomingHttpHeaders =>
  Object.fromEntries(Object.entries(h).filter(([k]) => !HOP.has(k)));

createServer((req, res) => {
  const up = request(
    {
      host: '127.0.0.1',
      port: Number(upstreamPort),
      method: req.method,
      path: req.url,
      headers: strip(req.headers),
      agent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, strip(answer.headers));
      answer.pipe(res);
    },
  );
  up.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(up);
}).listen(Number(port), '127.0.0.1');
