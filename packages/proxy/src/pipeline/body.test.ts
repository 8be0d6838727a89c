import assert from 'node:assert/strict';
import { once } from 'node:events';
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { bufferUpTo, takeComplete } from './body.ts';

/**
 * A server whose handler first waits a turn of the event loop (as a route does behind an auth call)
 * and reports what takeComplete saw.
 */
async function withServer(
  limit: number,
  run: (port: number, seen: Promise<{ taken: string | undefined; rest: string }>) => Promise<void>,
): Promise<void> {
  let report!: (v: { taken: string | undefined; rest: string }) => void;
  const seen = new Promise<{ taken: string | undefined; rest: string }>((r) => {
    report = r;
  });
  const server = http.createServer(async (req: IncomingMessage, res) => {
    await new Promise((r) => setTimeout(r, 5));
    const whole = takeComplete(req, limit);
    // Whatever was not taken is still there for a reader: nothing is lost either way.
    const r = await bufferUpTo(req, 1 << 20);
    const rest = r.ok ? r.data.toString() : '';
    report({ taken: whole?.toString(), rest });
    res.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    await run((server.address() as AddressInfo).port, seen);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

test('before its body is parsed, even one from the same packet, a request has nothing to take', async () => {
  let seen: { complete: boolean; taken: Buffer | undefined } | undefined;
  const server = http.createServer(async (req, res) => {
    await Promise.resolve();
    seen = { complete: req.complete, taken: takeComplete(req, 1024) };
    req.resume();
    res.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const s = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    s.resume();
    s.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\nconnection: close\r\n\r\nabc');
    await once(s, 'close');
    assert.deepEqual(seen, { complete: false, taken: undefined });
  } finally {
    server.close();
  }
});

test('a small body that has all arrived is taken whole, at once', async () => {
  await withServer(1024, async (port, seen) => {
    const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{"model":"m"}' });
    assert.equal(res.status, 200);
    assert.deepEqual(await seen, { taken: '{"model":"m"}', rest: '' });
  });
});

test('a chunked body that has ended is taken whole too; an empty one is an empty buffer', async () => {
  await withServer(1024, async (port, seen) => {
    const s = net.connect(port, '127.0.0.1');
    s.write(
      'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n',
    );
    assert.deepEqual(await seen, { taken: 'abcde', rest: '' });
    s.destroy();
  });
  await withServer(1024, async (port, seen) => {
    const s = net.connect(port, '127.0.0.1');
    s.write('POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n');
    assert.deepEqual(await seen, { taken: '', rest: '' });
    s.destroy();
  });
});

test('a body still on its way, or over the limit, is left to be streamed', async () => {
  await withServer(1024, async (port, seen) => {
    const s = net.connect(port, '127.0.0.1');
    s.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n01234');
    setTimeout(() => s.end('56789'), 100);
    assert.deepEqual(await seen, { taken: undefined, rest: '0123456789' });
    s.destroy();
  });
  await withServer(4, async (port, seen) => {
    const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '0123456789' });
    assert.equal(res.status, 200);
    assert.deepEqual(await seen, { taken: undefined, rest: '0123456789' });
  });
});

/** bufferUpTo's answer, or 'hung' if it has none within 1 s. */
function settled(p: Promise<unknown>): Promise<unknown> {
  let t: NodeJS.Timeout | undefined;
  const hung = new Promise((resolve) => {
    t = setTimeout(() => resolve('hung'), 1000);
  });
  return Promise.race([
    p.then(
      (v) => v,
      (err: Error) => err,
    ),
    hung,
  ]).finally(() => clearTimeout(t));
}

test('a body destroyed before its end (its client left) is an error, not a wait for good', async () => {
  // All of it arrived and nobody read it, then the stream was destroyed: no 'end' will ever come.
  const unread = new Readable({ read() {} });
  unread.push('abc');
  unread.push(null);
  unread.destroy();
  const a = await settled(bufferUpTo(unread, 1024));
  assert.ok(a instanceof Error && /closed before it ended/.test(a.message), String(a));

  // Destroyed while being read, with no error of its own.
  const midway = new Readable({ read() {} });
  midway.push('abc');
  const b = settled(bufferUpTo(midway, 1024));
  setTimeout(() => midway.destroy(), 10);
  const err = await b;
  assert.ok(err instanceof Error && /closed before it ended/.test(err.message), String(err));

  // An error it was destroyed with is the one reported.
  const failed = new Readable({ read() {} });
  const c = settled(bufferUpTo(failed, 1024));
  failed.destroy(new Error('socket hang up'));
  assert.equal(((await c) as Error).message, 'socket hang up');

  // One that ended normally is still read whole.
  assert.deepEqual(await settled(bufferUpTo(Readable.from([Buffer.from('ok')]), 1024)), {
    ok: true,
    data: Buffer.from('ok'),
  });
});
