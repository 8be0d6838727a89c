// A fake OpenAI Realtime API on loopback: a WebSocket (ws's server) at any path that sends
// `session.created` on connect, answers `session.update` with `session.updated`, and answers each
// `response.create` with the recorded event sequence of a text response (or, echoing, with the text
// of the client's latest conversation item in its place)
// (./fixtures/openai/realtime-text-response.jsonl), ids made unique per response, ending in
// `response.done` with its usage. It can agree to permessage-deflate (compressing every message) and
// records each handshake for tests to assert.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocketServer } from 'ws';

const FIXTURE = join(
  dirname(fileURLToPath(import.meta.url)),
  'fixtures',
  'openai',
  'realtime-text-response.jsonl',
);

type Json = Record<string, unknown>;

const EVENTS = readFileSync(FIXTURE, 'utf8')
  .split('\n')
  .filter((l) => l !== '')
  .map((l) => JSON.parse(l) as Json);

/** The usage `response.done` carries in the fixture (every response the fake sends has it). */
export const FAKE_REALTIME_USAGE = (EVENTS.at(-1)?.response as { usage: Json } | undefined)?.usage as {
  total_tokens: number;
  input_tokens: number;
  output_tokens: number;
  input_token_details: { cached_tokens: number };
};

/** The text of the fixture's response. */
export const FAKE_REALTIME_TEXT = String(
  EVENTS.find((e) => e.type === 'response.output_text.done')?.text ?? '',
);

export interface FakeRealtimeOptions {
  /** When set, the handshake must carry `Authorization: Bearer <key>` (else 401). */
  apiKey?: string;
  /** Agree to permessage-deflate when the client offers it, compressing every message. */
  deflate?: boolean;
  /** Before `response.done`, one `response.output_audio.delta` of this many bytes of base64 audio. */
  audioBytes?: number;
  /**
   * A response says the text of the latest `conversation.item.create` (its input_text), in deltas
   * of this many characters, instead of the fixture's text.
   */
  echoDeltaChars?: number;
}

export interface FakeRealtime {
  port: number;
  /** The handshakes received, oldest first. */
  handshakes: IncomingMessage[];
  /** The client events received (all sessions), oldest first. */
  received: Json[];
  /** `response.create` events answered so far. */
  readonly responses: number;
  close(): Promise<void>;
}

export async function startFakeRealtime(opts: FakeRealtimeOptions = {}): Promise<FakeRealtime> {
  const handshakes: IncomingMessage[] = [];
  const received: Json[] = [];
  let responses = 0;
  const server: Server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: opts.deflate ? { threshold: 0 } : false,
  });
  server.on('upgrade', (req, socket, head) => {
    handshakes.push(req);
    if (opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const model = new URL(req.url ?? '/', 'http://x').searchParams.get('model');
      const session = { id: 'sess_gwRt0001', object: 'realtime.session', type: 'realtime', model };
      let n = 0;
      const send = (e: Json) => ws.send(JSON.stringify({ ...e, event_id: `event_gwRtS${++n}` }));
      send({ type: 'session.created', session });
      let said: string | undefined;
      ws.on('message', (data) => {
        const e = JSON.parse(String(data)) as { type: string; session?: Json; item?: Json };
        received.push(e);
        if (e.type === 'session.update')
          send({ type: 'session.updated', session: { ...session, ...e.session } });
        if (e.type === 'conversation.item.create') {
          const part = (e.item?.content as Json[] | undefined)?.find((c) => c.type === 'input_text');
          if (typeof part?.text === 'string') said = part.text;
        }
        if (e.type !== 'response.create') return;
        const id = `${++responses}`;
        const echo = opts.echoDeltaChars && said !== undefined ? said : undefined;
        const unique = (v: unknown) => {
          let text = JSON.stringify(v).replaceAll('gwRt7Qm2', `gwRt${id.padStart(4, '0')}`);
          if (echo !== undefined)
            text = text.replaceAll(
              JSON.stringify(FAKE_REALTIME_TEXT).slice(1, -1),
              JSON.stringify(echo).slice(1, -1),
            );
          return JSON.parse(text);
        };
        let deltasSent = false;
        for (const event of EVENTS) {
          if (echo !== undefined && event.type === 'response.output_text.delta') {
            if (deltasSent) continue;
            deltasSent = true;
            const n = opts.echoDeltaChars ?? 1;
            for (let i = 0; i < echo.length; i += n)
              send({ ...(unique(event) as Json), delta: echo.slice(i, i + n) });
            continue;
          }
          if (event.type === 'response.done' && opts.audioBytes)
            send({
              type: 'response.output_audio.delta',
              response_id: `resp_${id}`,
              item_id: `item_${id}`,
              output_index: 0,
              content_index: 0,
              delta: Buffer.alloc(opts.audioBytes, id).toString('base64'),
            });
          send(unique(event) as Json);
        }
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    handshakes,
    received,
    get responses() {
      return responses;
    },
    async close() {
      for (const c of wss.clients) c.terminate();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
