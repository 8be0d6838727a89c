import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '@gw/testkit/temp-dir';
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

test('batched, as on a worker stdout: every line arrives whole and in order, UTF-8 intact, pino and records() interleaved', () => {
  // The batched hub writes to fd 1, so it runs in a child whose stdout is read here.
  const script = `
    import { LogHub } from ${JSON.stringify(new URL('./logger.ts', import.meta.url).href)};
    const logs = new LogHub('info', process.argv[1], undefined, true);
    const records = logs.records('request');
    for (let i = 0; i < 500; i++) {
      records.info({ n: i, 'http.host': 'bücher.example', 'http.path': '/' + 'x'.repeat(i % 300) });
      if (i % 100 === 0) logs.module('gw').info({ n: i }, 'between');
    }
    await logs.flush();
  `;
  for (const format of ['text', 'json'] as const) {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, format], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.split('\n').filter((l) => l !== '');
    assert.equal(lines.length, 505, `${format}: 500 records and 5 pino lines`);
    const seen = lines.map((l) => {
      if (format === 'json') return JSON.parse(l) as { n: number; msg?: string; 'http.host'?: string };
      const n = /(?:^| )n=(\d+)/.exec(l)?.[1];
      return {
        n: Number(n),
        msg: l.includes(' between') ? 'between' : undefined,
        'http.host': /http\.host=(\S+)/.exec(l)?.[1],
      };
    });
    const records = seen.filter((o) => o.msg === undefined);
    assert.deepEqual(
      records.map((o) => o.n),
      [...Array(500).keys()],
      `${format}: records in order`,
    );
    assert.ok(
      records.every((o) => o['http.host'] === 'bücher.example'),
      `${format}: UTF-8 kept`,
    );
    // Each pino line comes right after the record it followed.
    for (const [i, o] of seen.entries()) if (o.msg === 'between') assert.equal(seen[i - 1]?.n, o.n);
  }
});

test('batched: a line is written within 100 ms without a flush, and an idle hub wakes its thread no more', {
  skip: !existsSync('/proc/thread-self/status') && 'needs /proc',
}, () => {
  // The child's stdout is a file, so the child can see when its line has been written. It then
  // counts its main thread's wake-ups over a second with nothing to log.
  const script = `
    import { readFileSync, statSync } from 'node:fs';
    import { LogHub } from ${JSON.stringify(new URL('./logger.ts', import.meta.url).href)};
    const logs = new LogHub('info', 'json', undefined, true);
    logs.records('request').info({ n: 1 });
    const switches = () =>
      Number(/^voluntary_ctxt_switches:\\s+(\\d+)/m.exec(readFileSync('/proc/thread-self/status', 'utf8'))[1]);
    setTimeout(() => {
      const written = statSync(process.argv[1]).size;
      const before = switches();
      setTimeout(() => {
        process.stderr.write(JSON.stringify({ written, wakeUps: switches() - before }));
        process.exit(0);
      }, 1000);
    }, 300);
  `;
  const out = join(tempDir('gw-logger-'), 'stdout');
  const fd = openSync(out, 'w');
  try {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, out], {
      encoding: 'utf8',
      stdio: ['ignore', fd, 'pipe'],
    });
    assert.equal(r.status, 0, r.stderr);
    const { written, wakeUps } = JSON.parse(r.stderr) as { written: number; wakeUps: number };
    assert.ok(written > 0, 'the buffered line was written by the timer, with no flush()');
    // A flush timer running every 100 ms would wake the thread about 10 times in that second.
    assert.ok(wakeUps < 4, `an idle batched hub woke its thread ${wakeUps} times in a second`);
  } finally {
    closeSync(fd);
  }
});
