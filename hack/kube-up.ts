// `make kube-up` / `make kube-down`: the test API server of packages/testkit/src/kube.ts (kube-apiserver +
// etcd, Gateway API CRDs and ours) in the background, outliving the make command, for use with kubectl.
//   node hack/kube-up.ts          starts it (or finds it running); the last line printed is KUBECONFIG=<path>
//   node hack/kube-up.ts --down   stops it
//   node hack/kube-up.ts --serve  the background process itself (started by the first form)
import { spawn } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type KubeHarness, startKube } from '../packages/testkit/src/kube.ts';

const self = fileURLToPath(import.meta.url);
const root = join(dirname(self), '..');
const home = join(root, '.kube-harness');
const stateFile = join(home, 'state.json');
const kubeconfig = join(home, 'kubeconfig');
const serveLog = join(home, 'serve.log');

interface State {
  /** The --serve process. */
  pid: number;
  apiserverPid: number;
  server: string;
  /** The harness's working dir (etcd data, certs, apiserver.log). */
  dir: string;
  kubeconfig: string;
  startedAt: string;
}

function readState(): State | undefined {
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8')) as State;
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs and its command line contains every one of `words` (a recycled pid is not ours). */
function running(pid: number, words: string[]): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/^\S+ \(.*\) Z/s.test(stat)) return false; // exited, not yet reaped
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return words.every((w) => cmdline.some((arg) => arg.includes(w)));
  } catch {
    return false;
  }
}

const isServe = (s: State) => running(s.pid, [self, '--serve']);
const isApiserver = (s: State) => running(s.apiserverPid, ['kube-apiserver', s.dir]);

function forget(): void {
  rmSync(stateFile, { force: true });
  rmSync(kubeconfig, { force: true });
}

async function waitGone(alive: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (alive()) {
    if (Date.now() > end) return false;
    await sleep(100);
  }
  return true;
}

/** Stops what a state file describes: the serve process (which stops its apiserver), or leftovers of a crashed one. */
async function stopState(s: State): Promise<void> {
  if (isServe(s)) {
    process.kill(s.pid, 'SIGTERM');
    if (!(await waitGone(() => isServe(s), 15_000))) process.kill(s.pid, 'SIGKILL');
  }
  if (isApiserver(s)) {
    process.kill(s.apiserverPid, 'SIGKILL');
    await waitGone(() => isApiserver(s), 5_000);
  }
  rmSync(s.dir, { recursive: true, force: true });
  forget();
}

async function up(): Promise<void> {
  const s = readState();
  if (s && isServe(s)) {
    console.log(`kube-up: already running (pid ${s.pid}, ${s.server}, since ${s.startedAt})`);
    console.log(`KUBECONFIG=${s.kubeconfig}`);
    return;
  }
  if (s) await stopState(s); // left over from a process that died

  mkdirSync(home, { recursive: true });
  const fd = openSync(serveLog, 'w');
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', self, '--serve'], {
    cwd: root,
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  child.unref();
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = signal ?? `code ${code}`;
  });
  process.once('SIGINT', () => {
    child.kill('SIGTERM');
    process.exit(130);
  });
  console.log(`kube-up: starting in the background (pid ${child.pid}, log ${serveLog})`);

  // Relay the serve process's progress lines until it reports ready by writing the state file.
  const log = openSync(serveLog, 'r');
  const buf = Buffer.alloc(64 * 1024);
  let pending = '';
  const relay = () => {
    for (let n = readSync(log, buf); n > 0; n = readSync(log, buf)) pending += buf.toString('utf8', 0, n);
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) console.log(line);
  };
  for (;;) {
    relay();
    const ready = readState();
    if (ready && ready.pid === child.pid) {
      console.log(`KUBECONFIG=${ready.kubeconfig}`);
      process.exit(0);
    }
    if (exited) {
      if (pending) console.log(pending);
      console.error(
        `kube-up: the background process exited (${exited}) before it was ready; see ${serveLog}`,
      );
      process.exit(1);
    }
    await sleep(200);
  }
}

async function down(): Promise<void> {
  const s = readState();
  if (!s) {
    console.log('kube-down: not running');
    return;
  }
  const wasRunning = isServe(s);
  await stopState(s);
  console.log(
    wasRunning ? `kube-down: stopped (pid ${s.pid})` : 'kube-down: was not running; removed its state',
  );
}

async function serve(): Promise<void> {
  let harness: KubeHarness | undefined;
  let stopping = false;
  const shutdown = async (why: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`kube: ${why}, stopping`);
    // Still starting: exiting SIGKILLs the apiserver and removes its dir (startKube's exit hook).
    if (!harness) process.exit(1);
    await harness.stop();
    if (readState()?.pid === process.pid) forget();
    console.log('kube: stopped');
    process.exit(0);
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => void shutdown(sig));

  harness = await startKube({ log: (line) => console.log(line) });
  copyFileSync(harness.kubeconfig, kubeconfig);
  const state: State = {
    pid: process.pid,
    apiserverPid: harness.pid,
    server: harness.server,
    dir: harness.dir,
    kubeconfig,
    startedAt: new Date().toISOString(),
  };
  // Written last and atomically: its appearance is what `up` waits for.
  writeFileSync(`${stateFile}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(`${stateFile}.tmp`, stateFile);

  const h = harness;
  setInterval(() => {
    if (stopping) return;
    try {
      process.kill(h.pid, 0);
    } catch {
      console.log(
        `kube: kube-apiserver exited on its own; last lines of its log:\n${tail(join(h.dir, 'apiserver.log'))}`,
      );
      void shutdown('apiserver gone');
    }
  }, 1_000);
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-40).join('\n');
  } catch {
    return '(no log)';
  }
}

const mode = process.argv[2];
if (mode === '--serve') await serve();
else if (mode === '--down') await down();
else if (mode === undefined) await up();
else {
  console.error('usage: node hack/kube-up.ts [--down]');
  process.exit(2);
}
