// node:http on both sides: a server, and node's own client over a keep-alive Agent (C llhttp parses
// both ways, where node-floor answers through undici, whose llhttp is WebAssembly). No routing,
// logging or metrics. bench/ttft.ts sets it beside node-floor and gw to show what the upstream client
// costs in time to first token.
// Usage: node node-http.ts <listen port> <upstream port>
import { Agent, createServer, request } from 'node:http';
import { withoutHopByHop } from './hop-by-hop.ts';

const [port, upstreamPort] = process.argv.slice(2).map(Number);
if (!Number.isInteger(port) || !Number.isInteger(upstreamPort)) {
  throw new Error('usage: node node-http.ts <listen port> <upstream port>');
}
const agent = new Agent({ keepAlive: true });

createServer((req, res) => {
  const up = request(
    {
      host: '127.0.0.1',
      port: Number(upstreamPort),
      method: req.method,
      path: req.url,
      headers: withoutHopByHop(req.headers),
      agent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
      answer.pipe(res);
    },
  );
  up.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(up);
}).listen(Number(port), '127.0.0.1');
