import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogHub } from './logger.ts';

function hub(format: 'json' | 'text', filter = 'info'): { logs: LogHub; lines: string[] } {
  const lines: string[] = [];
  const logs = new LogHub(filter, format, { write: (l: string) => void lines.push(l) });
  return { logs, lines };
}

const RECORD = {
  gateway: 'bind/8080',
  route: undefined,
  'http.path': '/a b?c="d"',
  'http.status': 200,
  'llm.guardrails': ['request:regex:mask:ssn'],
  nested: { a: 1 },
  duration: '1.2ms',
};

/** Both lines without their timestamps, which differ by the time between the two writes. */
const untimed = (line: string | undefined) =>
  (line ?? '').replace(/^\S+Z /, '').replace(/"time":\d+/, '"time":0');

for (const format of ['text', 'json'] as const) {
  test(`${format}: a record written by records() is the line pino writes for it`, () => {
    const { logs, lines } = hub(format);
    logs.module('request').info(RECORD);
    logs.records('request').info(RECORD);
    assert.equal(lines.length, 2);
    assert.equal(untimed(lines[1]), untimed(lines[0]));
    assert.ok(lines[1]?.endsWith('\n'));
  });
}

test('text: values with spaces, quotes or = (JSON of arrays and objects too) are quoted; undefined fields are left out', () => {
  const { logs, lines } = hub('text');
  logs.records('request').info(RECORD);
  assert.match(
    lines[0] ?? '',
    /^\d{4}-\d\d-\d\dT[\d:.]+Z info request gateway=bind\/8080 http\.path="\/a b\?c=\\"d\\"" http\.status=200 llm\.guardrails="\[\\"request:regex:mask:ssn\\"\]" nested="{\\"a\\":1}" duration=1\.2ms\n$/,
  );
});

test('json: an empty record is still one object', () => {
  const { logs, lines } = hub('json');
  logs.records('request').info({});
  const o = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  assert.deepEqual(Object.keys(o), ['level', 'time', 'module']);
  assert.equal(o.module, 'request');
});

test('records() follows the level filter, now and after a change', () => {
  const { logs } = hub('text', 'info,request=warn');
  const r = logs.records('request');
  assert.equal(r.isLevelEnabled('info'), false);
  logs.setFilter('info');
  assert.equal(r.isLevelEnabled('info'), true);
});
