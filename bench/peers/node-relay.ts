// A TCP relay on node:net: every client connection gets its own upstream connection and the bytes are
// copied both ways, unparsed. It is the least any Node proxy pays per hop (the event loop, the
// socket reads and writes and their wake-ups) and none of HTTP's parsing or stream machinery, which
// bench/ttft.ts sets beside the HTTP proxies to show where their time to first token goes.
// Usage: node node-relay.ts <listen port> <upstream port>
import { connect, createServer } from 'node:net';

const [port, upstreamPort] = process.argv.slice(2).map(Number);
if (!Number.isInteger(port) || !Number.isInteger(upstreamPort)) {
  throw new Error('usage: node node-relay.ts <listen port> <upstream port>');
}
createServer({ noDelay: true }, (client) => {
  const upstream = connect({ host: '127.0.0.1', port: Number(upstreamPort), noDelay: true });
  client.pipe(upstream).pipe(client);
  const close = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close).on('close', close);
  upstream.on('error', close).on('close', close);
}).listen(Number(port), '127.0.0.1');
