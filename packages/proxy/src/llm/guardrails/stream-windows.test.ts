// The windows service guards read a stream in, without a network: when a window closes (its size, its
// hold time, the end), what a guard is sent (the overlap with the window before), what is held and
// released, a reject or a failure ending the stream, audits never holding, cancel and backpressure.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LlmGuardIR } from '../../config/ir.ts';
import { streamError } from '../formats/content.ts';
import { StreamWindows, type WindowSizes } from './stream-windows.ts';
import type { CompiledGuard, GuardVerdict } from './types.ts';

const chat = (text: string) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: text } }] })}\n\n`;
const DONE = 'data: [DONE]\n\n';
const SIZES: WindowSizes = { chars: 10, maxHoldMs: 10_000, overlap: 4, maxHeldBytes: 1 << 20 };

function guard(name: string, audits = false): CompiledGuard {
  const ir = {
    kind: 'webhook',
    name,
    scope: ['messages'],
    rejection: { status: 403, message: 'withheld' },
    settings: {},
  } as unknown as LlmGuardIR;
  return { ir, check: () => ({ action: 'pass' }), ...(audits ? { audits: true } : {}) };
}

interface Call {
  guard: string;
  text: string;
  signal: AbortSignal;
  answer(v: GuardVerdict): void;
}

/** Windows over fake guards whose calls the test answers by hand. */
function harness(guards: CompiledGuard[], sizes = SIZES) {
  const sent: string[] = [];
  const failed: string[] = [];
  const found: string[] = [];
  const calls: Call[] = [];
  const w = new StreamWindows(
    guards,
    'openai-chat',
    {
      send: (raw) => sent.push(String(raw)),
      fail: (raw) => failed.push(raw),
      finding: (g, action, rule, applied) => found.push(`${g.ir.name}:${action}:${rule}:${applied}`),
    },
    (g, text, signal) =>
      new Promise<GuardVerdict>((answer) => calls.push({ guard: g.ir.name, text, signal, answer })),
    sizes,
  );
  return { w, sent, failed, found, calls };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('service guard windows', () => {
  test('a window closes at its size; its events are held until the verdict, then sent unchanged', async () => {
    const h = harness([guard('g')]);
    h.w.write(chat('Hello'));
    assert.equal(h.calls.length, 0, 'five characters: the window is still open');
    h.w.write(chat(' world!'));
    assert.deepEqual(
      h.calls.map((c) => c.text),
      ['Hello world!'],
    );
    assert.deepEqual(h.sent, [], 'held while the guard checks');
    // Text arriving during the check forms the next window.
    h.w.write(chat(' More text'));
    h.calls[0]?.answer({ action: 'pass' });
    await tick();
    assert.deepEqual(h.sent.slice(0, 2), [chat('Hello'), chat(' world!')]);
    // The next window is checked with the last 4 characters of the one before.
    assert.equal(h.calls[1]?.text, 'rld! More text');
    h.calls[1]?.answer({ action: 'pass' });
    await tick();
    h.w.write(DONE);
    await h.w.end();
    assert.deepEqual(h.sent, [chat('Hello'), chat(' world!'), chat(' More text'), DONE]);
    assert.deepEqual(h.found, []);
  });

  test('the end of the stream closes the last window; events without text are not held alone', async () => {
    const h = harness([guard('g')]);
    h.w.write('data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n');
    assert.equal(h.sent.length, 1, 'no text and nothing before it: sent at once');
    h.w.write(chat('Hi'));
    h.w.write(DONE);
    const end = h.w.end();
    assert.deepEqual(
      h.calls.map((c) => c.text),
      ['Hi'],
    );
    h.calls[0]?.answer({ action: 'pass' });
    await end;
    assert.deepEqual(h.sent.slice(1), [chat('Hi'), DONE]);
  });

  test('a window also closes when its first event has waited maxHoldMs', async () => {
    const h = harness([guard('g')], { ...SIZES, maxHoldMs: 20 });
    h.w.write(chat('slow'));
    assert.equal(h.calls.length, 0);
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(h.calls[0]?.text, 'slow');
    h.calls[0]?.answer({ action: 'pass' });
    await tick();
    assert.deepEqual(h.sent, [chat('slow')]);
    const end = h.w.end();
    await end;
  });

  test('a reject on a later window ends the stream with an error event; nothing after it is sent', async () => {
    const h = harness([guard('g')]);
    h.w.write(chat('0123456789'));
    h.calls[0]?.answer({ action: 'pass' });
    await tick();
    h.w.write(chat('abcdefghij'));
    const signal = h.calls[1]?.signal as AbortSignal;
    h.calls[1]?.answer({ action: 'reject', rule: 'bad' });
    await tick();
    assert.deepEqual(h.sent, [chat('0123456789')]);
    assert.deepEqual(h.failed, [
      streamError('openai-chat', 'withheld', 'permission_error', 'gw_err_llm_guardrail'),
    ]);
    assert.equal(h.w.stopped, true);
    assert.equal(signal.aborted, true, 'the guards’ other calls are cancelled');
    assert.equal(h.w.write(chat('more')), undefined);
    await h.w.end();
    assert.equal(h.calls.length, 2);
    assert.deepEqual(h.found, ['g:reject:bad:true']);
  });

  test('a webhook’s own status and message; the first guard in order decides', async () => {
    const h = harness([guard('a'), guard('b')]);
    h.w.write(chat('0123456789'));
    h.calls[1]?.answer({ action: 'reject', rule: 'b-rule' });
    h.calls[0]?.answer({ action: 'reject', rule: 'a-rule', status: 422, message: 'not that' });
    await tick();
    assert.deepEqual(h.failed, [
      streamError('openai-chat', 'not that', 'invalid_request_error', 'gw_err_llm_guardrail'),
    ]);
    assert.deepEqual(h.found, ['a:reject:a-rule:true', 'b:reject:b-rule:false']);
  });

  test('a mask is recorded, not applied; a failure fails closed or open as the verdict says', async () => {
    const h = harness([guard('g')]);
    h.w.write(chat('0123456789'));
    h.calls[0]?.answer({ action: 'mask', rule: 'm', texts: new Map([[0, 'xxxx']]) });
    await tick();
    assert.deepEqual(h.sent, [chat('0123456789')]);
    h.w.write(chat('abcdefghij'));
    h.calls[1]?.answer({ action: 'error', rule: 'answered 500', closed: false });
    await tick();
    assert.deepEqual(h.sent, [chat('0123456789'), chat('abcdefghij')]);
    h.w.write(chat('ABCDEFGHIJ'));
    h.calls[2]?.answer({ action: 'error', rule: 'answered 500', closed: true });
    await h.w.end();
    assert.equal(h.sent.length, 2);
    assert.match(h.failed[0] ?? '', /guardrail g failed \(stream\): answered 500/);
    assert.match(h.failed[0] ?? '', /gw_err_llm_guardrail_unavailable/);
    assert.deepEqual(h.found, ['g:mask:m:false', 'g:error:answered 500:false', 'g:error:answered 500:true']);
  });

  test('audit: events are sent as they come, calls run alongside, the end does not wait', async () => {
    const h = harness([guard('audit', true)]);
    h.w.write(chat('0123456789'));
    assert.deepEqual(h.sent, [chat('0123456789')]);
    assert.equal(h.calls[0]?.text, '0123456789');
    h.w.write(chat('abc'));
    assert.equal(h.sent.length, 2);
    await h.w.end();
    assert.equal(h.calls[1]?.text, '6789abc');
    // The client may be gone once the answer is whole: the calls still give their verdicts.
    h.w.cancel();
    assert.equal(h.calls[1]?.signal.aborted, false);
    h.calls[0]?.answer({ action: 'audit', rule: 'reject: rude' });
    h.calls[1]?.answer({ action: 'pass' });
    await tick();
    assert.deepEqual(h.found, ['audit:audit:reject: rude:false']);
  });

  test('audit: a client going away mid-answer cancels its calls', async () => {
    const h = harness([guard('audit', true)]);
    h.w.write(chat('0123456789'));
    h.w.cancel();
    assert.equal(h.calls[0]?.signal.aborted, true);
    h.calls[0]?.answer({ action: 'audit', rule: 'late' });
    await tick();
    assert.deepEqual(h.found, []);
  });

  test('cancel (the client went away): the pending call is aborted, nothing more is sent', async () => {
    const h = harness([guard('g')]);
    h.w.write(chat('0123456789'));
    const end = h.w.end();
    h.w.cancel();
    await end;
    assert.equal(h.calls[0]?.signal.aborted, true);
    h.calls[0]?.answer({ action: 'pass' });
    await tick();
    assert.deepEqual(h.sent, []);
  });

  test('backpressure: a write waits while more than maxHeldBytes are held', async () => {
    const h = harness([guard('g')], { ...SIZES, maxHeldBytes: 100 });
    assert.equal(h.w.write(chat('0123456789')), undefined);
    const wait = h.w.write(chat('a'.repeat(100)));
    assert.ok(wait instanceof Promise);
    let resumed = false;
    void wait.then(() => {
      resumed = true;
    });
    await tick();
    assert.equal(resumed, false);
    h.calls[0]?.answer({ action: 'pass' });
    await tick();
    await tick();
    // The second window (over the limit by itself) is being checked: still waiting.
    assert.equal(resumed, false);
    h.calls[1]?.answer({ action: 'pass' });
    await wait;
    await h.w.end();
    assert.equal(h.sent.length, 2);
  });
});
