import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TraceEvent } from '@gw/api/admin/trace-event';
import { SseParser } from './trace-stream.ts';
import { parseKeys } from './trace-tui.ts';
import { detailLines, diffLines, eventRow, sanitize, snapshotAt } from './trace-view.ts';

const state = (headers: Record<string, string>, path = '/p') => ({
  request: {
    method: 'GET',
    uri: `http://h.example${path}`,
    path,
    pathAndQuery: path,
    host: 'h.example',
    scheme: 'http',
    version: 'HTTP/1.1',
    headers,
    startTime: '2025-01-02T03:04:05.000Z',
  },
  source: { address: '127.0.0.1', port: 5000, rawAddress: '127.0.0.1', rawPort: 5000 },
  env: {},
});
const ev = (eventEnd: number, message: TraceEvent['message']): TraceEvent => ({
  eventStart: null,
  eventEnd,
  severity: 'info',
  message,
});
const events: TraceEvent[] = [
  ev(0.1, { type: 'requestStarted' }),
  ev(0.2, {
    type: 'requestSnapshot',
    stage: 'initial request',
    requestState: state({ host: 'h.example', a: '1' }),
  }),
  ev(0.3, { type: 'policy', phase: 'route', policy: 'csrf', outcome: 'passed' }),
  ev(0.4, {
    type: 'requestSnapshot',
    stage: 'final request',
    requestState: state({ host: 'h.example', a: '2', b: 'new' }, '/v2'),
    backend: { name: 'up', type: 'static', protocol: 'http' },
  }),
  ev(0.5, {
    type: 'bodySnapshot',
    stage: 'response',
    body: Buffer.from('hello\nworld').toString('base64'),
    size: 11,
    truncated: false,
  }),
];

test('list rows: index, offset, type and stage; policy events with policy and outcome', () => {
  assert.equal(eventRow(events[1] as TraceEvent, 1), '  1     0.200ms  requestSnapshot  initial request');
  assert.equal(eventRow(events[2] as TraceEvent, 2), '  2     0.300ms  policy  route csrf passed');
});

test('A2A events: phase, method, task, state and outcome', () => {
  const a2a = ev(0.6, {
    type: 'a2a',
    phase: 'response',
    method: 'message/stream',
    outcome: 'ok',
    streaming: true,
    taskId: 't-1',
    taskState: 'completed',
  });
  assert.equal(eventRow(a2a, 6), '  6     0.600ms  a2a  response message/stream t-1 completed ok');
});

test('snapshot mode reads like a request; a non-snapshot event shows the state before it', () => {
  const s = detailLines(events, 1, 'snapshot');
  assert.deepEqual(s.slice(0, 3), ['GET http://h.example/p HTTP/1.1', 'host: h.example', 'a: 1']);
  assert.ok(s.includes('source: 127.0.0.1:5000'));
  assert.ok(s.includes('env: (standalone)'));
  assert.equal(snapshotAt(events, 2), 1);
  assert.equal(detailLines(events, 2, 'snapshot')[0], '(state at #1 requestSnapshot (initial request))');
  assert.ok(detailLines(events, 3, 'snapshot').includes('backend: up (static, http)'));
  assert.deepEqual(detailLines(events, 4, 'snapshot').slice(2), ['hello', 'world']);
  assert.match(detailLines(events, 0, 'snapshot')[0] ?? '', /no request snapshot yet/);
});

test('diff mode compares requestState with the previous snapshot', () => {
  const d = detailLines(events, 3, 'diff');
  assert.equal(d[0], '#3 requestSnapshot (final request) against #1 requestSnapshot (initial request)');
  assert.ok(d.includes('- GET http://h.example/p HTTP/1.1'));
  assert.ok(d.includes('+ GET http://h.example/v2 HTTP/1.1'));
  assert.ok(d.includes('- a: 1'));
  assert.ok(d.includes('+ a: 2'));
  assert.ok(d.includes('+ b: new'));
  assert.ok(d.includes('  host: h.example'));
  assert.ok(!d.some((l) => l.includes('backend:')), 'only requestState is compared');
  assert.match(detailLines(events, 1, 'diff')[0] ?? '', /first snapshot; all lines are new/);
});

test('diffLines is a line diff keeping common lines', () => {
  assert.deepEqual(diffLines(['a', 'b', 'c'], ['a', 'c', 'd']), ['  a', '- b', '  c', '+ d']);
  assert.deepEqual(diffLines([], ['x']), ['+ x']);
});

test('control characters from the wire cannot reach the terminal', () => {
  assert.equal(sanitize('a\x1b[2Jb\x07'), 'a\\x1b[2Jb\\x07');
});

test('keys: several in one read, both arrow encodings, unknown ones dropped', () => {
  assert.deepEqual(parseKeys('\t\x1b[A\x1bOBjkqx\x1b[5~\x1b[99~d'), [
    'tab',
    'up',
    'down',
    'down',
    'up',
    'quit',
    'pageUp',
    'd',
  ]);
});

test('SSE: comments, data split across chunks, CRLF', () => {
  const p = new SseParser();
  assert.deepEqual(p.push(': armed\n\ndata: {"a"'), [{ comment: 'armed' }]);
  assert.deepEqual(p.push(':1}\r\n\r'), []);
  assert.deepEqual(p.push('\n'), [{ data: '{"a":1}' }]);
});
