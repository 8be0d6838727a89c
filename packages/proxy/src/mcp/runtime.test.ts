// What an MCP backend keeps per session in a worker (stdio processes, legacy SSE streams) is bounded:
// a session idle too long, or older than config.mcp.sessionTtl, loses its connection-bound targets at
// the next sweep, and past the cap the session used least recently makes room for a new one. The
// connections here are stand-ins that record their closing; mcp/session-ttl.test.ts runs a real
// stdio server through the gateway.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { setMcpLogger } from './log.ts';
import { McpRuntime, STATELESS } from './runtime.ts';
import type { StreamConnection } from './upstream/stream.ts';

/** A connection-bound target that records whether it was closed. */
function standIn(closed: Set<string>, name: string, lastUsed = Date.now(), busy = false): StreamConnection {
  const c = {
    lastUsed,
    busy,
    start: () => c,
    close: async () => {
      closed.add(name);
    },
  };
  return c as unknown as StreamConnection;
}

test('past the cap, the session used least recently loses its targets to make room', async () => {
  const closed = new Set<string>();
  const rt = new McpRuntime('test-cap');
  try {
    rt.setLimits({ maxSessions: 2 });
    const now = Date.now();
    rt.connection('a', 't', () => standIn(closed, 'a', now - 5_000));
    rt.connection('b', 't', () => standIn(closed, 'b', now - 1_000));
    // a session already held takes another target without counting again
    rt.connection('a', 'u', () => standIn(closed, 'a2', now - 6_000));
    assert.deepEqual([...rt.streams.keys()], ['a', 'b']);
    rt.connection('c', 't', () => standIn(closed, 'c'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([...rt.streams.keys()].sort(), ['b', 'c']);
    assert.deepEqual([...closed].sort(), ['a', 'a2']);
  } finally {
    await rt.close();
  }
});

test('a sweep ends sessions idle past idleMs, and with a ttl those older than it however busy', async () => {
  const closed = new Set<string>();
  const rt = new McpRuntime('test-sweep');
  try {
    const now = Date.now();
    rt.setLimits({ idleMs: 10_000 });
    rt.connection('idle', 't', () => standIn(closed, 'idle', now - 20_000));
    rt.connection('busy', 't', () => standIn(closed, 'busy', now));
    rt.sweep(now);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([...closed], ['idle']);
    // a ttl counts from the session's first target, used or not
    rt.setLimits({ ttlMs: 1_000 });
    const busy = rt.streams.get('busy')?.get('t');
    if (busy) busy.lastUsed = now + 5_000;
    rt.sweep(now + 2_000);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([...closed].sort(), ['busy', 'idle']);
    assert.equal(rt.streams.size, 0);
  } finally {
    await rt.close();
  }
});

test('the cap passes over sessions in use and the shared stateless targets; with all in use a new one is refused', async () => {
  const closed = new Set<string>();
  const rt = new McpRuntime('test-in-use');
  try {
    rt.setLimits({ maxSessions: 2, ttlMs: 1_000 });
    const now = Date.now();
    rt.connection(STATELESS, 't', () => standIn(closed, 'stateless', now - 60_000));
    rt.connection('calling', 't', () => standIn(closed, 'calling', now - 50_000, true));
    rt.connection('listening', 't', () => standIn(closed, 'listening', now - 40_000));
    rt.clientStreams.set('listening', {
      send: () => {},
      close: () => {},
      signal: new AbortController().signal,
    });
    // the stateless targets are not a session: two sessions, both in use
    assert.throws(
      () => rt.connection('new', 't', () => standIn(closed, 'new')),
      /holds targets for 2 MCP sessions, all in use/,
    );
    // the ttl is a client session's: the stateless targets stay
    rt.sweep(now + 5_000);
    await new Promise((r) => setImmediate(r));
    assert.ok(!closed.has('stateless'));
    assert.ok(rt.streams.has(STATELESS));
  } finally {
    await rt.close();
  }
});

test('the sessions the runtime ends and refuses are logged, evictions and refusals at most once per 10 s, never an id', async () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  setMcpLogger(pino({ level: 'debug' }, sink));
  const closed = new Set<string>();
  const rt = new McpRuntime('test-log');
  try {
    const now = Date.now();
    rt.setLimits({ maxSessions: 1, idleMs: 10_000 });
    rt.connection(STATELESS, 'shared', () => standIn(closed, 'stateless', now - 60_000));
    rt.connection('secret-session-one', 'files', () => standIn(closed, 'one', now - 4_000));
    rt.connection('secret-session-one', 'git', () => standIn(closed, 'one-git', now - 3_000));
    // room for a second session: the first is evicted (info)
    rt.connection('secret-session-two', 'files', () => standIn(closed, 'two', now - 20_000));
    // then it is idle past idleMs (debug), as are the stateless targets, which are no session
    rt.sweep(now);
    // the third takes the free room; the fourth evicts it within 10 s of the first eviction: counted,
    // not written
    rt.connection('secret-session-three', 'files', () => standIn(closed, 'three', now));
    rt.connection('secret-session-four', 'files', () => standIn(closed, 'four', now, true));
    // with the only session in use, the next two are refused (warn, once)
    for (const n of ['five', 'six'])
      assert.throws(() => rt.connection(`secret-session-${n}`, 'files', () => standIn(closed, n)));
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([...closed].sort(), ['one', 'one-git', 'stateless', 'three', 'two']);
    const ended = lines.filter((l) => l['msg'] === 'MCP session stopped its stdio processes and streams');
    assert.deepEqual(
      ended.map((l) => [l['level'], l['reason'], l['targets'], l['limit'], l['count']]),
      [
        [30, 'evicted', ['files', 'git'], 1, 1],
        [20, 'idle', ['files'], undefined, undefined],
      ],
    );
    assert.ok((ended[0]?.['idleSeconds'] as number) >= 3, JSON.stringify(ended[0]));
    assert.ok((ended[0]?.['ageSeconds'] as number) >= 0, JSON.stringify(ended[0]));
    const refused = lines.filter((l) => String(l['msg']).startsWith('MCP session refused'));
    assert.deepEqual(
      refused.map((l) => [l['level'], l['target'], l['limit'], l['count']]),
      [[40, 'files', 1, 1]],
    );
    assert.ok(!JSON.stringify(lines).includes('secret-session'), 'a session id reached the log');
  } finally {
    await rt.close();
    setMcpLogger(pino({ level: 'silent' }));
  }
});
