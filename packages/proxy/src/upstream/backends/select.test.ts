import assert from 'node:assert/strict';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { GwError } from '../../errors.ts';
import { RequestContext } from '../../pipeline/context.ts';
import type { Handler } from '../../pipeline/layer.ts';
import { failover, weighted } from './select.ts';

function request(body?: string): RequestContext {
  const req = new IncomingMessage(new Socket());
  req.method = 'POST';
  req.url = '/v1/chat?x=1';
  req.headers = { host: 'gw.test', ...(body ? { 'content-length': String(body.length) } : {}) };
  const ctx = new RequestContext(req, new ServerResponse(req), 'http');
  if (body) ctx.body = Readable.from([Buffer.from(body)]);
  return ctx;
}

/** A backend that records what it was sent and answers `status` (or throws `error`). */
function backend(name: string, answer: number | GwError, seen: string[]): Handler {
  return async (ctx) => {
    const body = Buffer.isBuffer(ctx.body) ? ctx.body.toString() : '';
    seen.push(`${name}:${ctx.headers['x-group'] ?? '-'}:${body}`);
    ctx.headers['x-group'] = name; // a backend policy's change, which must not leak to the next group
    if (answer instanceof GwError) throw answer;
    ctx.response = { status: answer, headers: {}, body: Readable.from([Buffer.from(name)]) };
  };
}

test('weighted: weight-0 backends are never chosen; no live backend is a 500 error', async () => {
  const seen: string[] = [];
  const pick = weighted([
    { name: 'a', weight: 0, handler: backend('a', 200, seen) },
    { name: 'b', weight: 3, handler: backend('b', 200, seen) },
  ]);
  for (let i = 0; i < 20; i++) await pick(request());
  assert.ok(seen.every((s) => s.startsWith('b:')));
  await assert.rejects(weighted([])(request()), (e: GwError) => e.code === 'GW_ERR_NO_BACKEND');
});

test('weighted: the split follows the weights', async () => {
  const seen: string[] = [];
  const pick = weighted([
    { name: 'a', weight: 1, handler: backend('a', 200, seen) },
    { name: 'b', weight: 3, handler: backend('b', 200, seen) },
  ]);
  for (let i = 0; i < 2000; i++) await pick(request());
  const a = seen.filter((s) => s.startsWith('a:')).length;
  assert.ok(a > 380 && a < 620, `a chosen ${a} of 2000 times, expected about 500`);
});

test('failover: a 429 or 5xx answer or a connect error moves on to the next group, with the same body', async () => {
  const seen: string[] = [];
  const run = failover(
    [
      backend('first', 429, seen),
      backend('second', new GwError('GW_ERR_UPSTREAM_CONNECT'), seen),
      backend('third', 503, seen),
      backend('fourth', 200, seen),
    ],
    { bufferLimit: 1024 },
  );
  const ctx = request('{"model":"m"}');
  await run(ctx);
  assert.equal(ctx.response?.status, 200);
  assert.deepEqual(seen, [
    'first:-:{"model":"m"}',
    'second:-:{"model":"m"}',
    'third:-:{"model":"m"}',
    'fourth:-:{"model":"m"}',
  ]);
});

test('failover: a success or a client error stays with the group that gave it', async () => {
  const seen: string[] = [];
  const ctx = request();
  await failover([backend('first', 404, seen), backend('second', 200, seen)], { bufferLimit: 1024 })(ctx);
  assert.equal(ctx.response?.status, 404);
  assert.deepEqual(seen, ['first:-:']);
});

test('failover: the last group answers whatever it answers; its error reaches the client', async () => {
  const seen: string[] = [];
  const ctx = request();
  await failover([backend('first', 500, seen), backend('second', 502, seen)], { bufferLimit: 1024 })(ctx);
  assert.equal(ctx.response?.status, 502);
  await assert.rejects(
    failover([backend('a', 500, []), backend('b', new GwError('GW_ERR_UPSTREAM_RESET'), [])], {
      bufferLimit: 1024,
    })(request()),
    (e: GwError) => e.code === 'GW_ERR_UPSTREAM_RESET',
  );
});

test('failover: a body over the buffer limit is sent once, to the first group only', async () => {
  const seen: string[] = [];
  const ctx = request('x'.repeat(100));
  await failover([backend('first', 503, seen), backend('second', 200, seen)], { bufferLimit: 10 })(ctx);
  assert.equal(ctx.response?.status, 503);
  assert.equal(seen.length, 1);
});
