// A session's stdio process lives in one worker of the proxy, the one that handled its initialize,
// whichever worker the session's later requests reach: one process per session, its state whole, a
// client's answer to the target's sampling request and the target's own notifications find their
// way, and DELETE on any worker stops the process. Two workers sharing the port; every request on a
// connection of its own, so the kernel spreads them over both. Then the channel between a worker and a
// session's home on its own, in one thread: aborts and a home that never answers.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eventually, eventuallyFound, httpGet } from '@gw/testkit';
import pino from 'pino';
import { loadConfigText } from '../config/load.ts';
import { sharedMemoryOf } from '../policies/shared-memory.ts';
import { Supervisor } from '../server/supervisor.ts';
import type { Message, Request, Response } from './jsonrpc.ts';
import { type Home, HomeLink } from './remote-connection.ts';
import { sessionSealer } from './session.ts';
import { SseParser } from './sse.ts';
import { alive } from './test-support.ts';
import { type RequestOptions, type TargetConnection, TargetError } from './upstream/connection.ts';

const SERVER = join(import.meta.dirname, 'testdata/home-server.ts');
const ACCEPT = 'application/json, text/event-stream';
/** Requests (each on a new connection) per check: all on one worker by chance is 1 in 2^(n-1). */
const ROUNDS = 8;

type Json = Record<string, unknown>;

let sup: Supervisor;
let port: number;

before(async () => {
  // what the CLI does before it starts the workers: they seal and open session ids with one key
  process.env.SESSION_KEY ??= randomBytes(32).toString('base64');
  sup = new Supervisor({ workers: 2, logFilter: 'error', logFormat: 'json', log: pino({ level: 'silent' }) });
  const ir = loadConfigText(
    'gw.yaml',
    `binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - mcp:
          targets:
          - name: home
            stdio: {cmd: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(SERVER)}]}
`,
    process.cwd(),
  ).ir;
  await sup.apply(ir, sharedMemoryOf(ir));
  port = Object.values(sup.ports)[0] as number;
});

after(async () => {
  await sup.stop(1000);
});

/** One POST to /mcp on a connection of its own; the messages of its answer (JSON or SSE). */
async function post(
  message: Json,
  sid?: string,
): Promise<{ status: number; sid?: string; messages: Json[] }> {
  const r = await httpGet(port, '/mcp', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      ...(sid ? { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  const messages = String(r.headers['content-type']).includes('text/event-stream')
    ? new SseParser().push(r.body).map((e) => JSON.parse(e.data) as Json)
    : r.body
      ? [JSON.parse(r.body) as Json]
      : [];
  const out = r.headers['mcp-session-id'];
  return { status: r.status, messages, ...(typeof out === 'string' ? { sid: out } : {}) };
}

async function initialize(): Promise<string> {
  const r = await post({
    id: 0,
    method: 'initialize',
    params: {
      protocolVersion: '2025-06-18',
      capabilities: { sampling: {} },
      clientInfo: { name: 't', version: '1' },
    },
  });
  assert.equal(r.status, 200);
  assert.ok(r.sid, 'a session id');
  assert.equal((await post({ method: 'notifications/initialized' }, r.sid)).status, 202);
  return r.sid;
}

/** The text a tool answers with. */
async function callTool(sid: string, id: number, name: string, args: Json = {}): Promise<string> {
  const r = await post({ id, method: 'tools/call', params: { name, arguments: args } }, sid);
  const answer = r.messages.find((m) => m.id === id) as
    | { result?: { content: { text: string }[] } }
    | undefined;
  const text = answer?.result?.content[0]?.text;
  assert.ok(text !== undefined, `an answer to ${name}: ${JSON.stringify(r.messages)}`);
  return text;
}

/** A request whose answer is an SSE stream, read as it comes: the messages so far in `seen`. */
function stream(method: 'GET' | 'POST', sid: string, body?: Json): { seen: Json[]; close(): void } {
  const seen: Json[] = [];
  const parser = new SseParser();
  const req = http.request({
    host: '127.0.0.1',
    port,
    path: '/mcp',
    method,
    agent: false,
    headers: {
      accept: method === 'GET' ? 'text/event-stream' : ACCEPT,
      'content-type': 'application/json',
      'mcp-session-id': sid,
      'mcp-protocol-version': '2025-06-18',
    },
  });
  req.on('response', (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      for (const e of parser.push(chunk)) if (e.data) seen.push(JSON.parse(e.data) as Json);
    });
  });
  // a stream the test closes ends with an error here: nothing to report
  req.on('error', () => {});
  req.end(body ? JSON.stringify({ jsonrpc: '2.0', ...body }) : undefined);
  return { seen, close: () => req.destroy() };
}

describe('an MCP session with a stdio target, over two workers', () => {
  test('one process per session, its state whole; DELETE on any worker stops it', async () => {
    const sid = await initialize();
    const answers: string[] = [];
    for (let i = 1; i <= ROUNDS; i++) answers.push(await callTool(sid, i, 'whoami'));
    const pids = new Set(answers.map((a) => a.split(' ')[0]));
    assert.equal(pids.size, 1, `one process answers every call: ${answers.join(', ')}`);
    assert.deepEqual(
      answers.map((a) => Number(a.split(' ')[1])),
      Array.from({ length: ROUNDS }, (_, i) => i + 1),
      'one process counted every call',
    );
    const pid = Number([...pids][0]);
    assert.ok(alive(pid));

    const del = await httpGet(port, '/mcp', { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    assert.equal(del.status, 200);
    await eventually(() => !alive(pid), 5000, `process ${pid} to end after DELETE`);
  });

  test("the client's answer to a sampling request, on a connection of its own, reaches the process", async () => {
    const sid = await initialize();
    for (let i = 1; i <= ROUNDS; i++) {
      const call = stream('POST', sid, {
        id: i,
        method: 'tools/call',
        params: { name: 'ask', arguments: {} },
      });
      try {
        const ask = await eventuallyFound(
          'the sampling request',
          () => call.seen.find((m) => m.method === 'sampling/createMessage'),
          10_000,
        );
        const answered = await post(
          {
            id: ask.id,
            result: { role: 'assistant', content: { type: 'text', text: `yes ${i}` }, model: 'm' },
          },
          sid,
        );
        assert.equal(answered.status, 202);
        const done = await eventuallyFound(
          'the answer to tools/call',
          () => call.seen.find((m) => m.id === i),
          10_000,
        );
        assert.deepEqual(done.result, { content: [{ type: 'text', text: `client said: yes ${i}` }] });
      } finally {
        call.close();
      }
    }
    await httpGet(port, '/mcp', { method: 'DELETE', headers: { 'mcp-session-id': sid } });
  });

  test("the target's notifications reach the GET stream, whichever worker has it", async () => {
    const sid = await initialize();
    const get = stream('GET', sid);
    try {
      const said = (text: string) =>
        get.seen.some((m) => m.method === 'notifications/message' && (m.params as Json).data === text);
      // the stream listens once the process is told of it
      let n = 0;
      await eventually(
        async () => {
          await callTool(sid, ++n, 'notify', { text: `warm ${n}` });
          await new Promise((r) => setTimeout(r, 100));
          return get.seen.length > 0;
        },
        10_000,
        'the GET stream to listen',
      );
      for (let i = 1; i <= ROUNDS; i++) await callTool(sid, 100 + i, 'notify', { text: `note ${i}` });
      await eventually(
        () => Array.from({ length: ROUNDS }, (_, i) => said(`note ${i + 1}`)).every(Boolean),
        5000,
        'every notification on the GET stream',
      );
    } finally {
      get.close();
      await httpGet(port, '/mcp', { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    }
  });

  // last: it ends a worker (the supervisor starts another)
  test('a session whose home worker exited is a 404 on every worker, at once: the client starts anew', async () => {
    const sid = await initialize();
    await callTool(sid, 1, 'whoami');
    const home = sessionSealer().open(sid)?.h;
    const handle = sup.workers.find((w) => w.threadId === home);
    assert.ok(handle?.worker, `the session's home (thread ${home}) is a worker of the supervisor`);
    const restarted = new Promise<void>((resolve) => {
      sup.onWorkerExit = () => resolve();
    });
    await handle.worker.terminate();
    await restarted;
    // each on a connection of its own: the surviving worker and the one started in its place
    await eventually(
      async () => (await post({ id: 2, method: 'tools/list' }, sid)).status === 404,
      5000,
      'the exit to reach the siblings',
    );
    for (let i = 0; i < ROUNDS; i++) {
      const started = performance.now();
      const r = await post({ id: 3 + i, method: 'tools/call', params: { name: 'whoami' } }, sid);
      assert.equal(r.status, 404, JSON.stringify(r.messages));
      assert.match(String((r.messages[0]?.error as Json | undefined)?.message), /worker holding its stdio/);
      assert.ok(performance.now() - started < 2000, 'answered without waiting for the gone home');
    }
    // a new session works
    const again = await initialize();
    assert.match(await callTool(again, 1, 'whoami'), /^\d+ 1$/);
  });
});

describe('a connection through the home worker', () => {
  const where = { nonce: 'n', target: 't', params: {} };
  const req: Request = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } };

  /** A home whose target relays a notification, then answers unless `hang`; what it was asked. */
  function fakeHome(hang: boolean): Home & { aborted: boolean; ended: string[] } {
    const home = {
      aborted: false,
      ended: [] as string[],
      connection: (): TargetConnection => ({
        target: 't',
        sessionId: null,
        request: (r: Request, o: RequestOptions = {}) =>
          new Promise<Response>((resolve, reject) => {
            o.relay?.({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } });
            if (!hang) resolve({ jsonrpc: '2.0', id: r.id, result: { ok: true } });
            o.signal?.addEventListener('abort', () => {
              home.aborted = true;
              reject(new TargetError('t', 'cancelled'));
            });
          }),
        send: async () => {},
        listen: async () => {},
        close: async () => {},
      }),
      close: async () => {},
      end: async (nonce: string) => {
        home.ended.push(nonce);
      },
    };
    return home;
  }

  // two ends of one channel in this thread: each hears the other (never itself), both threadId 0
  function pair(hang: boolean, name: string) {
    const home = fakeHome(hang);
    const there = new HomeLink(name, home);
    const here = new HomeLink(name, fakeHome(false), 200);
    return {
      home,
      there,
      here,
      close: () => {
        here.close();
        there.close();
      },
    };
  }

  test('answers, with what the target relays on the way; DELETE ends the session there', async () => {
    const p = pair(false, 'gw-test-home-answer');
    try {
      const relayed: Message[] = [];
      const r = await p.here.connection(0, where).request(req, { relay: (m) => relayed.push(m) });
      assert.deepEqual(r.result, { ok: true });
      assert.equal(relayed.length, 1);
      p.here.end(0, 'n');
      await eventually(() => p.home.ended.includes('n'), 1000, 'the session ended at home');
    } finally {
      p.close();
    }
  });

  test("the caller's abort and timeout end the wait here and the request at home", async () => {
    const p = pair(true, 'gw-test-home-abort');
    try {
      const ac = new AbortController();
      const waiting = p.here.connection(0, where).request(req, { signal: ac.signal });
      setTimeout(() => ac.abort(), 50);
      await assert.rejects(waiting, /target t: cancelled/);
      await eventually(() => p.home.aborted, 1000, 'the home to stop waiting');
      await assert.rejects(
        p.here.connection(0, where).request(req, { timeoutMs: 50 }),
        (e: TargetError) => e.timeout && /no answer within 50 ms/.test(e.message),
      );
    } finally {
      p.close();
    }
  });

  test('a home that never answers fails the request as a timeout, listening included', async () => {
    const here = new HomeLink('gw-test-home-silent', fakeHome(false), 200);
    try {
      const conn = here.connection(0, where);
      await assert.rejects(conn.request(req), (e: TargetError) => e instanceof TargetError && e.timeout);
      await assert.rejects(
        conn.listen(() => {}, new AbortController().signal),
        TargetError,
      );
    } finally {
      here.close();
    }
  });
});
