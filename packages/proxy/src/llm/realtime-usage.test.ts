// The realtime session's usage reader on frames built by ws's own Sender (what a provider's ws
// server writes): usage summed over response.done events however the bytes are cut, other messages
// skipped, and a frame it cannot read stops the reading with a reason, keeping what was counted.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as ws from 'ws';
import { readRealtimeUsage } from './realtime-usage.ts';
import { LlmRequestState } from './state.ts';

const { Sender } = ws as unknown as {
  Sender: {
    frame(
      data: Buffer,
      o: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1: boolean },
    ): Buffer[];
  };
};

/** One unmasked server frame (text unless `opcode` says). */
function frame(data: string | Buffer, o: { opcode?: number; fin?: boolean; rsv1?: boolean } = {}): Buffer {
  const parts = Sender.frame(Buffer.from(data), {
    fin: o.fin ?? true,
    opcode: o.opcode ?? 1,
    mask: false,
    readOnly: false,
    rsv1: o.rsv1 ?? false,
  });
  return Buffer.concat(parts);
}

const done = (input: number, output: number, cached = 0) =>
  JSON.stringify({
    type: 'response.done',
    event_id: 'event_1',
    response: {
      object: 'realtime.response',
      status: 'completed',
      usage: {
        total_tokens: input + output,
        input_tokens: input,
        output_tokens: output,
        input_token_details: { cached_tokens: cached, text_tokens: input },
        output_token_details: { text_tokens: output, audio_tokens: 0 },
      },
    },
  });

const session = () => new LlmRequestState('openai-realtime', {}, 'gpt-realtime', true);

describe('readRealtimeUsage', () => {
  test('sums each response.done however the bytes are cut; skips every other message', async () => {
    const state = session();
    const heard: number[] = [];
    state.onUsage((u) => heard.push(u.input + u.output));
    const why: string[] = [];
    const reader = readRealtimeUsage(state, undefined, (w) => why.push(w));
    const first = done(100, 20, 64);
    const bytes = Buffer.concat([
      frame(JSON.stringify({ type: 'session.created', session: { model: 'gpt-realtime' } })),
      // a response.done in three fragments
      frame(first.slice(0, 10), { fin: false }),
      frame(first.slice(10, 40), { opcode: 0, fin: false }),
      frame(first.slice(40), { opcode: 0 }),
      // names response.done but is not one, or is not JSON: skipped
      frame(JSON.stringify({ type: 'response.output_text.delta', delta: '"response.done"' })),
      frame('"response.done" {'),
      frame(Buffer.from('"response.done"'), { opcode: 2 }),
      frame(done(50, 5)),
      frame(Buffer.alloc(0), { opcode: 9 }),
    ]);
    // one byte at a time: the worst cut
    for (let i = 0; i < bytes.length; i++) reader.write(bytes.subarray(i, i + 1));
    assert.deepEqual(state.usage, { input: 150, output: 25, cachedInput: 64, reasoning: 0 });
    assert.equal(state.done, false);
    await reader.settle();
    assert.equal(state.done, true);
    assert.deepEqual(heard, [175]);
    assert.deepEqual(why, []);
  });

  test('a close frame ends the reading; settle still resolves', async () => {
    const state = session();
    const reader = readRealtimeUsage(state, undefined, () => {});
    reader.write(Buffer.concat([frame(done(7, 3)), frame(Buffer.from([0x03, 0xe8]), { opcode: 8 })]));
    reader.write(frame(done(1000, 1000)));
    await reader.settle();
    assert.deepEqual(state.usage, { input: 7, output: 3, cachedInput: 0, reasoning: 0 });
  });

  test('a compressed frame without permessage-deflate agreed stops the reading, keeping what was counted', async () => {
    const state = session();
    const why: string[] = [];
    const reader = readRealtimeUsage(state, undefined, (w) => why.push(w));
    reader.write(frame(done(10, 1)));
    reader.write(frame('x', { rsv1: true }));
    reader.write(frame(done(10, 1)));
    await reader.settle();
    assert.equal(why.length, 1);
    assert.match(why[0] ?? '', /a frame could not be read: .*RSV1/);
    assert.deepEqual(state.usage, { input: 10, output: 1, cachedInput: 0, reasoning: 0 });
    assert.equal(state.done, true);
  });

  test('an extension gw cannot read is named; a malformed header too', () => {
    const why: string[] = [];
    readRealtimeUsage(session(), 'x-webkit-deflate-frame', (w) => why.push(w));
    readRealtimeUsage(session(), 'permessage-deflate; server_max_window_bits=99', (w) => why.push(w));
    assert.match(why[0] ?? '', /extensions gw does not read \(x-webkit-deflate-frame\)/);
    assert.match(why[1] ?? '', /Sec-WebSocket-Extensions cannot be read/);
  });
});
