// For the realtime tests: a WebSocket handshake to the gateway over TLS that must be refused.
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';

/** The status and body the gateway answered the handshake at `url` with (it must not open). */
export async function refusedHandshake(url: string, ca: string): Promise<{ status: number; body: string }> {
  const ws = new WebSocket(url, { ca, servername: 'llm.internal' } as WebSocket.ClientOptions);
  ws.on('error', () => {});
  try {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      ws.on('unexpected-response', (_req, r) => resolve(r));
      ws.on('open', () => reject(new Error('the WebSocket opened')));
    });
    let body = '';
    for await (const c of res) body += String(c);
    return { status: res.statusCode ?? 0, body };
  } finally {
    ws.terminate();
  }
}
