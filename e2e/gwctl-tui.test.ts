// The interactive `gwctl proxy trace` view in a real terminal: tmux runs it (on a tmux server of
// this test's own), keys go in with send-keys and the screen comes back with capture-pane.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startUpstream, type TestServer } from '@gw/testkit';
import { cleanupGw, configBlock, type GwProcess, sleep, startGw, tempDir } from './support/gw-process.ts';
import { GWCTL_BIN } from './support/gwctl-process.ts';

const SESSION = 'trace';
const hasTmux = spawnSync('tmux', ['-V']).status === 0;

let upstream: TestServer;
let g: GwProcess;
let port: number;
let adminPort: number;
let dir: string;

/** The tmux server's socket, in the test's own directory (removed with it). */
const socket = () => join(dir, 'tmux.sock');
const tmux = (...args: string[]) => execFileSync('tmux', ['-S', socket(), ...args], { encoding: 'utf8' });
const alive = () => spawnSync('tmux', ['-S', socket(), 'has-session', '-t', SESSION]).status === 0;
const screen = () => tmux('capture-pane', '-p', '-t', SESSION);
const keys = (...k: string[]) => tmux('send-keys', '-t', SESSION, ...k);
const sh = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * Polls the screen until `ok` holds on a settled screen; fails with the last screen after `timeoutMs`.
 * A redraw is one write, but tmux may take it in in pieces, so a capture can show a torn frame: the
 * new title above the old rows. A screen counts once a second capture a little later shows the same.
 */
async function waitScreen(ok: (s: string) => boolean, what: string, timeoutMs = 20_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < end) {
    if (!alive()) {
      throw new Error(
        `gwctl exited while waiting for ${what}; stderr:\n${readFileSync(join(dir, 'stderr'), 'utf8')}`,
      );
    }
    last = screen();
    if (ok(last)) {
      await sleep(40);
      if (screen() === last) return last;
      continue;
    }
    await sleep(50);
  }
  throw new Error(`screen never showed ${what}:\n${last}`);
}

/** The two panes of a captured screen, split at the divider column of the pane title row. */
function panes(s: string): { title: string; list: string[]; detailTitle: string; detail: string[] } {
  const lines = s.split('\n');
  const titleRow = lines[1] ?? '';
  const col = titleRow.indexOf('|');
  const body = lines.slice(2, -2);
  return {
    title: lines[0] ?? '',
    list: body.map((l) => l.slice(0, col)),
    detailTitle: titleRow.slice(col + 1),
    detail: body.map((l) => l.slice(col + 2).trimEnd()),
  };
}

const selected = (s: string) => panes(s).list.find((l) => l.startsWith('>')) ?? '';
const rowOf = (s: string, re: RegExp) => panes(s).list.findIndex((l) => re.test(l));

/** Moves the list selection (focus on the list) to the row matching `re`. */
async function select(re: RegExp): Promise<string> {
  const s = screen();
  const want = rowOf(s, re);
  assert.ok(want !== -1, `no row ${re}`);
  const have = rowOf(s, /^>/);
  if (want !== have) keys(...Array<string>(Math.abs(want - have)).fill(want > have ? 'Down' : 'Up'));
  return await waitScreen((x) => re.test(selected(x)), `selection on ${re}`);
}

before(async () => {
  if (!hasTmux) return;
  dir = tempDir('gwctl-tui-');
  upstream = await startUpstream('echo');
  g = await startGw({
    args: ['--workers', '2'],
    yaml: `${configBlock()}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: plain
    routes:
    - name: tui
      matches: [{ path: { pathPrefix: / } }]
      backends:
      - host: 127.0.0.1:${upstream.port}
        policies: { requestHeaderModifier: { set: { x-tui: replaced, x-backend: added } } }
`,
  });
  port = await g.proxyPort(0);
  adminPort = Number(new URL(g.admin).port);
});

after(async () => {
  if (hasTmux && dir) spawnSync('tmux', ['-S', socket(), 'kill-server']);
  await cleanupGw();
  await upstream?.close();
});

test('the trace view: list, event/snapshot/diff details, panes, scrolling and quit', {
  // `make test` installs tmux (hack/test-tools.sh); only a run outside it can lack it.
  skip: !hasTmux && 'tmux is not installed (make test-services installs it)',
  timeout: 120_000,
}, async () => {
  const cmd = [
    GWCTL_BIN,
    'proxy',
    'trace',
    '-p',
    String(adminPort),
    '--port',
    String(port),
    '--',
    'http://tui.example/hello?x=1',
    '-H',
    'x-tui: yes',
  ]
    .map(sh)
    .join(' ');
  tmux('new-session', '-d', '-s', SESSION, '-x', '160', '-y', '40', `${cmd} 2>${sh(join(dir, 'stderr'))}`);

  // The list fills in, the title bar says the trace is complete and what the request got.
  const complete = (x: string) =>
    /trace complete: \d+ events/.test(x) && panes(x).list.some((l) => l.includes('requestFinished'));
  let s = await waitScreen(complete, 'a complete trace');
  const p = panes(s);
  assert.match(
    p.title,
    /gwctl trace \| admin 127\.0\.0\.1:\d+ \| trace complete: \d+ events \| HTTP\/1\.1 200 OK/,
  );
  for (const type of [
    'requestStarted',
    'requestSnapshot  initial request',
    'routeSelection',
    'backendCallStart',
    'backendCallResult  200',
    'responseSnapshot  final response',
    'requestFinished',
  ]) {
    assert.ok(
      p.list.some((l) => l.includes(type)),
      `list shows ${type}`,
    );
  }
  assert.match(
    p.list[0] ?? '',
    /^>\s+0\s+\d+\.\d{3}ms {2}requestStarted/,
    'first event selected, with its offset',
  );
  assert.match(p.detailTitle, /Detail: event/);
  assert.ok(
    p.detail.some((l) => l.includes('"type": "requestStarted"')),
    'event mode shows the event JSON',
  );

  // s: the initial snapshot as a request line and headers.
  await select(/requestSnapshot {2}initial request/);
  keys('s');
  s = await waitScreen((x) => /Detail: snapshot/.test(x), 'snapshot mode');
  let d = panes(s).detail;
  assert.equal(d[0], 'GET http://tui.example/hello?x=1 HTTP/1.1');
  assert.ok(d.includes('host: tui.example'));
  assert.ok(d.includes('x-tui: yes'));
  assert.ok(d.some((l) => /^source: 127\.0\.0\.1:\d+$/.test(l)));

  // d: the final request against the snapshot before it; the backend policy changed two headers.
  await select(/requestSnapshot {2}final request/);
  keys('d');
  s = await waitScreen((x) => /Detail: diff/.test(x), 'diff mode');
  d = panes(s).detail;
  assert.match(d[0] ?? '', /^#\d+ requestSnapshot \(final request\) against #\d+ requestSnapshot/);
  assert.ok(d.includes('- x-tui: yes'), d.join('\n'));
  assert.ok(d.includes('+ x-tui: replaced'));
  assert.ok(d.includes('+ x-backend: added'));
  assert.ok(d.includes('  host: tui.example'), 'unchanged lines are kept, unmarked');

  // tab moves focus to the detail pane: arrows now scroll it and leave the selection alone.
  keys('e');
  s = await waitScreen((x) => /Detail: event \[1-\d+\/\d+\]/.test(x), 'a long event JSON');
  const before = panes(s).detail;
  const sel = selected(s);
  keys('Tab');
  s = await waitScreen((x) => /> Detail/.test(x), 'focus on the detail pane');
  assert.match(panes(s).list.join('\n'), /./);
  assert.doesNotMatch(s.split('\n')[1] ?? '', /> Events/);
  keys('Down', 'Down', 'Down');
  s = await waitScreen((x) => /Detail: event \[4-/.test(x), 'detail scrolled by three lines');
  assert.deepEqual(panes(s).detail.slice(0, 5), before.slice(3, 8));
  assert.equal(selected(s), sel, 'the selection did not move');

  // tab back: arrows move the selection again.
  keys('Tab');
  await waitScreen((x) => /> Events/.test(x), 'focus on the list');
  keys('Down');
  s = await waitScreen((x) => selected(x) !== sel, 'the selection moved');
  assert.match(selected(s), /backendCallStart/);

  // q ends gwctl, and with it the tmux session; nothing went to stderr.
  keys('q');
  const end = Date.now() + 10_000;
  while (alive() && Date.now() < end) await sleep(50);
  assert.equal(alive(), false, 'q quits');
  assert.equal(readFileSync(join(dir, 'stderr'), 'utf8'), '');
});

test('watch mode in the view: waits, then shows the next request; the view stays after it completes', {
  // `make test` installs tmux (hack/test-tools.sh); only a run outside it can lack it.
  skip: !hasTmux && 'tmux is not installed (make test-services installs it)',
  timeout: 120_000,
}, async () => {
  const cmd = [GWCTL_BIN, 'proxy', 'trace', '--local', '-p', String(adminPort)].map(sh).join(' ');
  tmux('new-session', '-d', '-s', SESSION, '-x', '120', '-y', '30', `${cmd} 2>${sh(join(dir, 'stderr'))}`);
  await waitScreen((x) => /armed; waiting for the next request/.test(x), 'armed');
  const res = await fetch(`http://127.0.0.1:${port}/watched`);
  assert.equal(res.status, 200);
  await res.text();
  let s = await waitScreen(
    (x) => /trace complete/.test(x) && panes(x).list.some((l) => l.includes('requestFinished')),
    'a complete trace',
  );
  assert.match(panes(s).list.join('\n'), /requestStarted.*backendCallResult {2}200.*requestFinished/s);
  // Resize: the view redraws to the new width.
  tmux('resize-window', '-t', SESSION, '-x', '90', '-y', '25');
  s = await waitScreen(
    (x) => /^ q quit \| tab pane/.test(x.split('\n')[24] ?? ''),
    'the help line on the new last row',
  );
  assert.ok(s.split('\n').every((l) => l.length <= 90));
  await sleep(300);
  assert.equal(alive(), true, 'the view stays open after the trace completes');
  keys('q');
  const end = Date.now() + 10_000;
  while (alive() && Date.now() < end) await sleep(50);
  assert.equal(alive(), false);
});
