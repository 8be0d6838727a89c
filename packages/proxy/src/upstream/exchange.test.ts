// The upstream exchange against a real node:http server through an undici Pool: the head as gw
// forwards it, the body streamed with backpressure, and every way an exchange can end early.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { GwError } from '../errors.ts';
import { takeComplete } from '../pipeline/body.ts';
import { connectionNames } from '../pipeline/context.ts';
import { Exchange, forwardedHeaders } from './exchange.ts';
import { Pool } from './undici.ts';

type Route = (req: IncomingMessage, res: ServerResponse) => void;
const routes = new Map<string, Route>();
let server: http.Server;
let pool: Pool;
let origin: string;

before(async () => {
  server = http.createServer((req, res) => {
    const route = routes.get(req.url ?? '');
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  pool = new Pool(origin);
});
after(async () => {
  await pool.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function text(body: Readable): Promise<string> {
  let s = '';
  for await (const c of body) s += (c as Buffer).toString();
  return s;
}

test('forwardedHeaders: lower-case names, repeats as arrays, no hop-by-hop or connection-listed names', () => {
  const raw = [
    ['Content-Type', 'text/plain'],
    ['Set-Cookie', 'a=1'],
    ['set-cookie', 'b=2'],
    ['Connection', 'keep-alive, X-Private'],
    ['Keep-Alive', 'timeout=5'],
    ['Transfer-Encoding', 'chunked'],
    ['X-Private', 'secret'],
    ['X-Kept', 'yes'],
    ['__proto__', 'p'],
  ]
    .flat()
    .map((s) => Buffer.from(s, 'latin1'));
  const h = forwardedHeaders(raw);
  assert.deepEqual(Object.keys(h).sort(), ['__proto__', 'content-type', 'set-cookie', 'x-kept']);
  assert.deepEqual(h['set-cookie'], ['a=1', 'b=2']);
  assert.equal(h['content-type'], 'text/plain');
  // An own property, not the object's prototype.
  assert.equal(Object.getPrototypeOf(h), Object.prototype);
  assert.equal(Object.getOwnPropertyDescriptor(h, '__proto__')?.value, 'p');
});

test('connectionNames: the usual keep-alive or close names nothing; other names come lower-case', () => {
  for (const v of ['keep-alive', 'Keep-Alive', 'close', 'CLOSE', '', 'keep-alive, Upgrade', ['close']])
    assert.equal(connectionNames(v), undefined, JSON.stringify(v));
  assert.deepEqual([...(connectionNames('Keep-Alive, X-Private ,x-other') ?? [])], ['x-private', 'x-other']);
  assert.deepEqual([...(connectionNames(['close', 'X-A']) ?? [])], ['x-a']);
  assert.equal(connectionNames(undefined), undefined);
});

test('an exchange sends the request and streams the answer', async () => {
  routes.set('/echo?x=1', (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      res.writeHead(201, { 'x-method': req.method ?? '', 'x-seen': String(req.headers['x-in']) });
      res.end(`got ${body}`);
    });
  });
  const x = new Exchange(pool, {
    path: '/echo?x=1',
    method: 'POST',
    headers: { 'x-in': 'hello', 'content-length': '4' },
    body: Buffer.from('ping'),
  });
  const res = await x.response;
  assert.equal(res.status, 201);
  assert.equal(res.headers['x-method'], 'POST');
  assert.equal(res.headers['x-seen'], 'hello');
  assert.equal(res.headers.connection, undefined);
  assert.equal(await text(res.body), 'got ping');
});

test('an answer that came with its head is complete and taken whole; one still arriving is not', async () => {
  routes.set('/whole', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  let finish: (() => void) | undefined;
  routes.set('/partial', (_req, res) => {
    res.writeHead(200);
    res.write('first ');
    finish = () => res.end('last');
  });
  const whole = await new Exchange(pool, { path: '/whole', method: 'GET', headers: {}, body: null }).response;
  // Sent in one write: undici parsed the head, the body and its end in the same read.
  assert.equal((whole.body as Readable & { complete: boolean }).complete, true);
  assert.equal(takeComplete(whole.body, 1024)?.toString(), '{"ok":true}');
  // Taken whole, the body ends as one read to its end does: the connection goes back to the pool.
  await once(whole.body, 'end');
  // Over the limit it is left to be streamed.
  const again = await new Exchange(pool, { path: '/whole', method: 'GET', headers: {}, body: null }).response;
  assert.equal(takeComplete(again.body, 4), undefined);
  assert.equal(await text(again.body), '{"ok":true}');

  const partial = await new Exchange(pool, { path: '/partial', method: 'GET', headers: {}, body: null })
    .response;
  for (let i = 0; i < 250 && partial.body.readableLength === 0; i++)
    await new Promise((r) => setTimeout(r, 4));
  assert.equal(takeComplete(partial.body, 1024), undefined, 'part of the body is still to come');
  finish?.();
  assert.equal(await text(partial.body), 'first last');
});

test('a body the reader does not keep up with pauses the upstream, and all of it arrives', async () => {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const chunks = 64;
  let paused = 0;
  routes.set('/big', (_req, res) => {
    res.writeHead(200);
    let i = 0;
    const more = () => {
      while (i < chunks) {
        i++;
        if (!res.write(chunk)) {
          paused++;
          res.once('drain', more);
          return;
        }
      }
      res.end();
    };
    more();
  });
  const res = await new Exchange(pool, { path: '/big', method: 'GET', headers: {}, body: null }).response;
  // Nothing is read for a while: the server's writes back up.
  for (let i = 0; i < 250 && paused === 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(paused > 0, 'the upstream saw backpressure');
  let n = 0;
  for await (const c of res.body) n += (c as Buffer).length;
  assert.equal(n, chunk.length * chunks);
});

test('abort before the head rejects with the reason and closes the upstream connection', async () => {
  let reached!: () => void;
  const atUpstream = new Promise<void>((r) => {
    reached = r;
  });
  const closed = new Promise<void>((resolve) => {
    routes.set('/slow-head', (req) => {
      req.socket.once('close', () => resolve());
      reached();
    });
  });
  const x = new Exchange(pool, { path: '/slow-head', method: 'GET', headers: {}, body: null });
  // aborted once the request is at the upstream, before any answer
  await atUpstream;
  const reason = new GwError('GW_ERR_BACKEND_TIMEOUT');
  x.abort(reason);
  await assert.rejects(x.response, (err) => err === reason);
  await closed;
});

test('abort before the request is sent: nothing reaches the upstream', async () => {
  let reached = false;
  routes.set('/never', (_req, res) => {
    reached = true;
    res.end();
  });
  // A pool of its own, with no connection yet: undici hands a request to an idle connection within
  // dispatch() (onConnect, then the write, before the constructor returns), so an abort could not
  // come first; a new connection is made asynchronously, and the abort lands before it.
  const fresh = new Pool(origin);
  const x = new Exchange(fresh, { path: '/never', method: 'GET', headers: {}, body: null });
  const reason = new GwError('GW_ERR_CLIENT_CLOSED');
  x.abort(reason);
  await assert.rejects(x.response, (err) => err === reason);
  // the connection it would have used is made and idle: nothing was written on it
  await new Promise((r) => setTimeout(r, 30));
  await fresh.close();
  assert.equal(reached, false);
});

test('abort mid-body destroys the body with the reason', async () => {
  routes.set('/trickle', (_req, res) => {
    res.writeHead(200);
    res.write('first');
  });
  const x = new Exchange(pool, { path: '/trickle', method: 'GET', headers: {}, body: null });
  const res = await x.response;
  const [first] = (await once(res.body, 'data')) as [Buffer];
  assert.equal(first.toString(), 'first');
  const reason = new GwError('GW_ERR_CLIENT_CLOSED');
  const errored = once(res.body, 'error');
  x.abort(reason);
  const [err] = (await errored) as [Error];
  assert.equal(err, reason);
});

test('destroying the body before its end closes the upstream connection', async () => {
  const closed = new Promise<void>((resolve) => {
    routes.set('/endless', (req, res) => {
      res.writeHead(200);
      res.write('x');
      req.socket.once('close', () => resolve());
    });
  });
  const res = await new Exchange(pool, { path: '/endless', method: 'GET', headers: {}, body: null }).response;
  await once(res.body, 'data');
  const errored = once(res.body, 'error');
  res.body.destroy();
  const [err] = (await errored) as [Error & { code?: string }];
  assert.equal(err.code, 'UND_ERR_ABORTED');
  await closed;
});

test('an upstream that cuts its answer errors the body; a streamed request body is destroyed on failure', async (t) => {
  routes.set('/cut', (req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('partial');
    setTimeout(() => req.socket.destroy(), 10);
  });
  const res = await new Exchange(pool, { path: '/cut', method: 'GET', headers: {}, body: null }).response;
  await assert.rejects(text(res.body));

  const requestBody = new PassThrough();
  requestBody.write('part of a body');
  const refused = new Pool('http://127.0.0.1:1');
  t.after(() => refused.destroy());
  const x = new Exchange(refused, {
    path: '/',
    method: 'POST',
    headers: {},
    body: requestBody,
  });
  await assert.rejects(x.response, (err: Error & { code?: string }) => err.code === 'ECONNREFUSED');
  assert.equal(requestBody.destroyed, true);
});
