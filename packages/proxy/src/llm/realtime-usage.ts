// The token usage of a realtime route's WebSocket session (OpenAI's Realtime API): the frames the
// provider sends are read as they pass to the client, never held or changed. Each `response.done`
// event carries the usage of one response; a session's usage is their sum, final when the session
// ends. The frames are parsed by ws's own Receiver, with permessage-deflate when the provider's 101
// agreed to it, so a client keeps its compression. Loaded the first time a realtime session opens.
import type { Writable } from 'node:stream';
import * as ws from 'ws';
import type { LlmRequestState, LlmUsage } from './state.ts';

/** What ws exports (wrapper.mjs) beyond what @types/ws declares. */
interface WsInternals {
  Receiver: new (options: {
    isServer: boolean;
    binaryType: 'fragments';
    extensions: Record<string, unknown>;
    maxPayload: number;
    skipUTF8Validation: boolean;
  }) => Writable;
  PerMessageDeflate: {
    new (options: { isServer: boolean; maxPayload: number }): { accept(offers: unknown[]): unknown };
    readonly extensionName: string;
  };
  extension: { parse(header: string): Record<string, unknown[]> };
}
const { Receiver, PerMessageDeflate, extension } = ws as unknown as WsInternals;

/**
 * The largest message read for usage. A larger one (a long audio delta) stops the reading for the
 * rest of the session, which then counts the usage seen so far; the frames still pass.
 */
export const REALTIME_MESSAGE_LIMIT = 32 * 1024 * 1024;

/** How long the end of a session waits for messages still being inflated before it settles. */
const SETTLE_MS = 2_000;

const RESPONSE_DONE = Buffer.from('"response.done"');

/** One response's usage in the Realtime API's shape (`response.done`'s `response.usage`). */
interface RealtimeUsage {
  input_tokens?: number;
  output_tokens?: number;
  input_token_details?: { cached_tokens?: number };
}

/** A Realtime `response.usage` normalised; undefined when it is not one. */
export function realtimeUsage(u: unknown): LlmUsage | undefined {
  if (typeof u !== 'object' || u === null) return undefined;
  const r = u as RealtimeUsage;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
  if (r.input_tokens === undefined && r.output_tokens === undefined) return undefined;
  return {
    input: n(r.input_tokens),
    output: n(r.output_tokens),
    cachedInput: n(r.input_token_details?.cached_tokens),
    reasoning: 0,
  };
}

export interface RealtimeUsageReader {
  /** Each chunk the provider sent after its 101, in order (what follows its response head first). */
  write(chunk: Buffer): void;
  /**
   * The session ended: reads what it was given (at most SETTLE_MS more), then marks the state's
   * usage final. Resolves, never rejects.
   */
  settle(): Promise<void>;
}

/**
 * A reader of the provider's frames that adds each response's usage to `state`. `extensions` is the
 * provider's `Sec-WebSocket-Extensions` of its 101 (what it agreed to). A frame that cannot be read
 * stops the reading (`onStop` hears why); the session is never touched.
 */
export function readRealtimeUsage(
  state: LlmRequestState,
  extensions: string | undefined,
  onStop: (reason: string) => void,
): RealtimeUsageReader {
  const agreed: Record<string, unknown> = {};
  let stopped = false;
  const stop = (reason: string) => {
    if (stopped) return;
    stopped = true;
    onStop(reason);
  };
  if (extensions) {
    try {
      const offers = extension.parse(extensions);
      const deflate = offers[PerMessageDeflate.extensionName];
      if (deflate) {
        const pmd = new PerMessageDeflate({ isServer: false, maxPayload: REALTIME_MESSAGE_LIMIT });
        pmd.accept(deflate);
        agreed[PerMessageDeflate.extensionName] = pmd;
      }
      if (Object.keys(offers).some((name) => name !== PerMessageDeflate.extensionName))
        stop(`the provider agreed to WebSocket extensions gw does not read (${extensions})`);
    } catch (err) {
      stop(`the provider's Sec-WebSocket-Extensions cannot be read: ${(err as Error).message}`);
    }
  }
  const receiver = new Receiver({
    isServer: false,
    binaryType: 'fragments',
    extensions: agreed,
    maxPayload: REALTIME_MESSAGE_LIMIT,
    // The client validates what it receives; the reader only looks for usage.
    skipUTF8Validation: true,
  });
  receiver.on('message', (data: Buffer, binary: boolean) => {
    // Audio deltas are most of the traffic: only a message naming response.done is parsed.
    if (binary || !data.includes(RESPONSE_DONE)) return;
    let event: { type?: unknown; response?: { usage?: unknown } };
    try {
      event = JSON.parse(data.toString('utf8')) as typeof event;
    } catch {
      return;
    }
    if (event.type !== 'response.done') return;
    const u = realtimeUsage(event.response?.usage);
    if (u) state.add(u);
  });
  receiver.on('error', (err: Error) => stop(`a frame could not be read: ${err.message}`));
  let settled: Promise<void> | undefined;
  return {
    write(chunk) {
      if (!stopped && !receiver.writableEnded) receiver.write(chunk);
    },
    settle() {
      if (settled) return settled;
      settled = new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(cap);
          state.finish();
          resolve();
        };
        const cap = setTimeout(done, SETTLE_MS);
        cap.unref();
        // A close frame ends the receiver by itself: it may have finished already.
        if (stopped || receiver.writableFinished || receiver.destroyed) {
          done();
          return;
        }
        receiver.once('finish', done);
        receiver.once('error', done);
        if (!receiver.writableEnded) receiver.end();
      });
      return settled;
    },
  };
}
