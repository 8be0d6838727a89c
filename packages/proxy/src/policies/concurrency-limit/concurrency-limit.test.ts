// The concurrencyLimit layer on its own: when a request's slots go back. Driven with the parts of a
// request it uses (its response's 'close', its abort hooks, its abort reason).
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, test } from 'node:test';
import { GwError } from '../../errors.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { BuildEnv } from '../types.ts';
import { InFlightCounter } from './in-flight.ts';
import { concurrencyLimit } from './index.ts';

interface Fake {
  ctx: RequestContext;
  res: EventEmitter;
  abort(reason: GwError): void;
}

function request(): Fake {
  const res = new EventEmitter();
  const hooks: { abort(r: GwError): void }[] = [];
  let reason: GwError | undefined;
  const ctx = {
    res,
    get abortReason() {
      return reason;
    },
    addAbortHook: (h: { abort(r: GwError): void }) => hooks.push(h),
    celContext: () => ({}),
    obs: undefined,
  } as unknown as RequestContext;
  return {
    ctx,
    res,
    abort(r) {
      reason = r;
      for (const h of hooks) h.abort(r);
    },
  };
}

/** The layer of one keyless limit of `max`, and its counter. */
function layer(max: number) {
  const memory = new Map<string, SharedArrayBuffer>();
  const env = {
    route: 'r',
    global: {},
    policies: {},
    shared: (key: string, bytes: number) => {
      const b = memory.get(key) ?? new SharedArrayBuffer(bytes);
      memory.set(key, b);
      return b;
    },
  } as unknown as BuildEnv;
  const run = concurrencyLimit.build([{ maxConcurrent: max }] as never, env);
  const counter = new InFlightCounter([...memory.values()][0] as SharedArrayBuffer);
  return { run, counter };
}

const next = async () => {};

describe('concurrencyLimit slots', () => {
  test('held until the response closes, once', async () => {
    const { run, counter } = layer(1);
    const a = request();
    await run(a.ctx, next);
    assert.equal(counter.inFlight, 1);
    await assert.rejects(
      async () => run(request().ctx, next),
      (e: unknown) => e instanceof GwError && e.status === 429,
    );
    a.res.emit('close');
    a.abort(new GwError('GW_ERR_CLIENT_CLOSED'));
    assert.equal(counter.inFlight, 0, 'given back once, by whichever comes first');
  });

  test('given back when the request is aborted (the client gone, a deadline) before its response closes', async () => {
    const { run, counter } = layer(2);
    const a = request();
    await run(a.ctx, next);
    a.abort(new GwError('GW_ERR_TIMEOUT'));
    assert.equal(counter.inFlight, 0);
  });

  test('a request whose client left while earlier policies waited holds nothing', async () => {
    const { run, counter } = layer(1);
    const gone = request();
    // the response closed (and the request was aborted) before the limit ran: no 'close' will come
    gone.abort(new GwError('GW_ERR_CLIENT_CLOSED'));
    await assert.rejects(
      async () => run(gone.ctx, next),
      (e: unknown) => e instanceof GwError && e.code === 'GW_ERR_CLIENT_CLOSED',
    );
    assert.equal(counter.inFlight, 0, 'the slot was not kept');
    await run(request().ctx, next);
    assert.equal(counter.inFlight, 1);
  });
});
