// ConverseStream's wire framing: the binary `application/vnd.amazon.eventstream`, decoded frame by
// frame as bytes arrive (a frame may be split anywhere), each an event with its JSON payload or a
// failure (an exception frame, or bytes that cannot be framed) in the words and status to tell a
// client. The format pairs that convert Bedrock streams read these instead of raw bytes. The SDK's
// codec loads with the first ConverseStream request (loadConverseCodec), not with every proxy.
import { Lazy } from '../../../lazy.ts';

type Obj = Record<string, unknown>;

export type ConverseFrame =
  /** `messageStart`, `contentBlockStart`, `contentBlockDelta`, `contentBlockStop`, `messageStop`, `metadata`. */
  | { event: string | undefined; body: Obj }
  /** The stream failed: nothing after it can be read. */
  | { failure: { message: string; status: number; code: string | null } };

const codec = new Lazy(async () => {
  const [{ EventStreamCodec }, { fromUtf8, toUtf8 }] = await Promise.all([
    import('@smithy/core/event-streams'),
    import('@smithy/util-utf8'),
  ]);
  return new EventStreamCodec(toUtf8, fromUtf8);
});

/** Loads the frame decoder; the provider awaits it before it sends a ConverseStream request. */
export function loadConverseCodec(): Promise<unknown> {
  return codec.ready;
}

export class ConverseFrames {
  // The tail of an incomplete frame waits here for the next bytes.
  #buf: Buffer = Buffer.alloc(0);
  #failed = false;

  /** Whether the stream has failed (an exception frame or invalid framing). */
  get failed(): boolean {
    return this.#failed;
  }

  /** The frames `chunk` completes; after a failure, none. */
  push(chunk: Buffer): ConverseFrame[] {
    if (this.#failed) return [];
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const out: ConverseFrame[] = [];
    try {
      while (this.#buf.length >= 4) {
        const total = this.#buf.readUInt32BE(0);
        if (total < 16) throw new Error(`a frame of ${total} bytes`);
        if (this.#buf.length < total) break;
        const frame = this.#buf.subarray(0, total);
        this.#buf = this.#buf.subarray(total);
        const f = this.#frame(frame);
        out.push(f);
        if ('failure' in f) break;
      }
    } catch (err) {
      this.#failed = true;
      out.push({
        failure: {
          message: `Bedrock sent an invalid event stream: ${(err as Error).message}`,
          status: 502,
          code: null,
        },
      });
    }
    if (this.#failed) this.#buf = Buffer.alloc(0);
    return out;
  }

  #frame(frame: Buffer): ConverseFrame {
    if (codec.value === undefined) throw new Error('the event stream decoder is not loaded');
    // decode checks the prelude and message CRCs.
    const msg = codec.value.decode(frame);
    const h = (name: string) => {
      const v = msg.headers[name];
      return v && v.type === 'string' ? v.value : undefined;
    };
    const kind = h(':message-type');
    const body =
      msg.body.length > 0
        ? (JSON.parse(
            Buffer.from(msg.body.buffer, msg.body.byteOffset, msg.body.byteLength).toString('utf8'),
          ) as Obj)
        : {};
    if (kind === 'exception' || kind === 'error') {
      this.#failed = true;
      const message =
        (typeof body.message === 'string' ? body.message : undefined) ??
        h(':error-message') ??
        'Bedrock stream error';
      const code = h(':exception-type') ?? h(':error-code') ?? null;
      const status = code === 'throttlingException' ? 429 : code === 'validationException' ? 400 : 500;
      return { failure: { message, status, code } };
    }
    return { event: h(':event-type'), body };
  }
}

/** A Bedrock error body's message (`message`, or `Message` from some services); undefined: none. */
export function bedrockErrorMessage(body: Obj): string | undefined {
  if (typeof body.message === 'string') return body.message;
  if (typeof body.Message === 'string') return body.Message;
  return undefined;
}
