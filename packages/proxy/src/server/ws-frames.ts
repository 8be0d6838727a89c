// WebSocket framing (RFC 6455 §5) for a relay that reads messages between its two ends: frames cut
// from a byte stream as they complete, each with its bytes as received (to pass on unchanged) and its
// payload unmasked, and frames built for what the relay sends itself (ws's Sender). Without
// permessage-deflate only: a relay that reads messages takes the extension out of the handshake.
import * as ws from 'ws';

const { Sender } = ws as unknown as {
  Sender: {
    frame(
      data: Buffer,
      o: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1: boolean },
    ): Buffer[];
  };
};

export const OPCODE = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

export interface Frame {
  fin: boolean;
  opcode: number;
  /** The payload, unmasked. */
  payload: Buffer;
  /** The frame's bytes as they came (header, mask and masked payload). */
  raw: Buffer;
}

/** A frame or a message larger than the reader takes. */
export class FrameTooLarge extends Error {}

/** Cuts frames from a byte stream; `push` returns those that completed. */
export class FrameReader {
  readonly #max: number;
  #buffered: Buffer[] = [];
  #size = 0;

  constructor(maxFrameBytes: number) {
    this.#max = maxFrameBytes;
  }

  /** Bytes the frame under way needs before it can be cut (a frame's header first). */
  #need = 2;

  push(chunk: Buffer): Frame[] {
    this.#buffered.push(chunk);
    this.#size += chunk.length;
    // A large frame comes in many chunks: they are joined once it is all there, not at each one.
    if (this.#size < this.#need) return [];
    const out: Frame[] = [];
    let buf = this.#buffered.length === 1 ? chunk : Buffer.concat(this.#buffered, this.#size);
    for (;;) {
      const f = this.#next(buf);
      if ('need' in f) {
        this.#need = f.need;
        break;
      }
      out.push(f.frame);
      buf = buf.subarray(f.length);
    }
    this.#buffered = buf.length > 0 ? [buf] : [];
    this.#size = buf.length;
    return out;
  }

  #next(buf: Buffer): { frame: Frame; length: number } | { need: number } {
    if (buf.length < 2) return { need: 2 };
    const b0 = buf[0] as number;
    const b1 = buf[1] as number;
    const masked = (b1 & 0x80) !== 0;
    let len = b1 & 0x7f;
    let at = 2;
    if (len === 126) {
      if (buf.length < 4) return { need: 4 };
      len = buf.readUInt16BE(2);
      at = 4;
    } else if (len === 127) {
      if (buf.length < 10) return { need: 10 };
      const big = buf.readBigUInt64BE(2);
      if (big > BigInt(this.#max)) throw new FrameTooLarge(`a frame of ${big} bytes`);
      len = Number(big);
      at = 10;
    }
    if (len > this.#max) throw new FrameTooLarge(`a frame of ${len} bytes`);
    const maskAt = at;
    if (masked) at += 4;
    if (buf.length < at + len) return { need: at + len };
    const raw = Buffer.from(buf.subarray(0, at + len));
    const payload = Buffer.from(raw.subarray(at));
    if (masked)
      for (let i = 0; i < payload.length; i++)
        payload[i] = (payload[i] as number) ^ (raw[maskAt + (i & 3)] as number);
    return { frame: { fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload, raw }, length: at + len };
  }
}

/** One unfragmented frame; `mask` for frames a client sends (`payload` is not changed). */
export function frame(opcode: number, payload: Buffer, mask: boolean): Buffer {
  // readOnly: a masked frame gets a copy of the payload instead of masking it in place
  return Buffer.concat(Sender.frame(payload, { fin: true, opcode, mask, readOnly: true, rsv1: false }));
}

/** A close frame with its status code and reason. */
export function closeFrame(code: number, reason: string, mask: boolean): Buffer {
  const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
  payload.writeUInt16BE(code, 0);
  payload.write(reason, 2);
  return frame(OPCODE.close, payload, mask);
}
