import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TraceEvent } from './trace-event.ts';
import { readWire } from './wire.ts';

const requestState = {
  request: {
    method: 'GET',
    uri: 'http://h.example/p?q=1',
    path: '/p',
    pathAndQuery: '/p?q=1',
    host: 'h.example',
    scheme: 'http',
    version: 'HTTP/1.1',
    headers: { host: 'h.example', authorization: '<redacted>' },
    startTime: '2025-01-02T03:04:05.000Z',
  },
  source: { address: '127.0.0.1', port: 5000, rawAddress: '127.0.0.1', rawPort: 5000 },
  env: {},
};
const event = (message: Record<string, unknown>) =>
  JSON.stringify({ eventStart: null, eventEnd: 0.25, severity: 'info', message });

test('a snapshot event reads back with its request state', () => {
  const read = readWire(
    TraceEvent,
    event({ type: 'requestSnapshot', stage: 'initial request', requestState }),
  );
  assert.ok(read.ok);
  assert.deepEqual(read.value.message.requestState, requestState);
});

test('message types without a fixed shape pass with all their fields', () => {
  const read = readWire(TraceEvent, event({ type: 'policy', phase: 'route', policy: 'csrf', future: [1] }));
  assert.ok(read.ok);
  assert.deepEqual(read.value.message, { type: 'policy', phase: 'route', policy: 'csrf', future: [1] });
});

test('a snapshot whose request state is wrong is refused, naming the field', () => {
  const bad = { ...requestState, source: { address: '127.0.0.1' } };
  const read = readWire(
    TraceEvent,
    event({ type: 'responseSnapshot', stage: 'final response', requestState: bad }),
  );
  assert.equal(read.ok, false);
  assert.ok(!read.ok && read.problem === 'shape');
  assert.match(read.detail, /^message\.requestState\.source\.port: responseSnapshot: /);
});

test('a body snapshot needs its size and truncation flag; broken JSON is told apart', () => {
  const body = readWire(TraceEvent, event({ type: 'bodySnapshot', stage: 'request', body: 'aGk=' }));
  assert.ok(!body.ok && body.problem === 'shape' && body.detail.startsWith('message.size: '));
  const json = readWire(TraceEvent, '{"eventStart": nope');
  assert.ok(!json.ok && json.problem === 'json');
  const envelope = readWire(
    TraceEvent,
    JSON.stringify({ eventEnd: 1, severity: 'loud', message: { type: 'x' } }),
  );
  assert.ok(!envelope.ok && envelope.detail.startsWith('eventStart: '));
});
