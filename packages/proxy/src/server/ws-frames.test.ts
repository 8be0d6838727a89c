// The relay's frame reader on frames built by ws's Sender (what ws clients and servers write): cut
// however the bytes arrive, client frames unmasked, each frame's bytes kept as they came; the three
// length forms; a frame over the limit refused before its payload is read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as ws from 'ws';
import { closeFrame, type Frame, FrameReader, FrameTooLarge, frame, OPCODE } from './ws-frames.ts';

const { Receiver } = ws as unknown as {
  Receiver: new (o: { isServer: boolean }) => import('node:stream').Writable;
};

test('frames of each length form, masked and not, cut one byte at a time', () => {
  const payloads = [Buffer.from('hi'), Buffer.alloc(300, 'a'), Buffer.alloc(70_000, 'b')];
  const bytes = Buffer.concat(
    payloads.flatMap((p, i) => [
      frame(OPCODE.text, p, i % 2 === 0),
      frame(OPCODE.ping, Buffer.from('p'), false),
    ]),
  );
  const reader = new FrameReader(1 << 20);
  const frames: Frame[] = [];
  for (let i = 0; i < bytes.length; i += 1) frames.push(...reader.push(bytes.subarray(i, i + 1)));
  assert.equal(frames.length, 6);
  payloads.forEach((p, i) => {
    const f = frames[2 * i];
    assert.equal(f?.opcode, OPCODE.text);
    assert.equal(f?.fin, true);
    assert.ok(f?.payload.equals(p));
    assert.equal(frames[2 * i + 1]?.opcode, OPCODE.ping);
  });
  // the raw bytes, joined, are the stream as it came
  assert.ok(Buffer.concat(frames.map((f) => f.raw)).equals(bytes));
});

test('a frame over the limit is refused from its header', () => {
  const reader = new FrameReader(100);
  const header = frame(OPCODE.binary, Buffer.alloc(70_000), false).subarray(0, 10);
  assert.throws(() => reader.push(header), FrameTooLarge);
});

test('what the relay builds is read by ws itself: a masked text frame and a close with its code', async () => {
  const server = new Receiver({ isServer: true });
  const got: unknown[] = [];
  server.on('message', (d: Buffer) => got.push(String(d)));
  server.on('conclude', (code: number, reason: Buffer) => got.push([code, String(reason)]));
  server.write(frame(OPCODE.text, Buffer.from('{"type":"x"}'), true));
  server.write(closeFrame(1008, 'guardrail', true));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(got, ['{"type":"x"}', [1008, 'guardrail']]);
});
