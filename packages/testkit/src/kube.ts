// A real Kubernetes API server for tests: hack/kube-apiserver's kube-apiserver + embedded etcd on free
// loopback ports, RBAC on, static tokens, and the Gateway API CRDs (plus ours) installed and Established.
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from './http-client.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubeHarness {
  /** `https://127.0.0.1:<port>` */
  server: string;
  /** A kubeconfig file: the cluster with the serving CA, the admin user, current-context set (context `gw-nobody` for the other user). */
  kubeconfig: string;
  /** Bearer token of `gw-admin` (group system:masters). */
  token: string;
  /** Bearer token of `gw-nobody`: authenticated, no groups, no RBAC grants — for proving RBAC is enforced. */
  unprivilegedToken: string;
  /** PEM of the CA that signed the serving certificate. */
  ca: string;
  /** The kube-apiserver process. */
  pid: number;
  /** Working directory: etcd data, certs, tokens, `apiserver.log`. */
  dir: string;
  /** Runs the machine's kubectl with --kubeconfig (and a discovery cache in `dir`); never throws on a non-zero exit. */
  kubectl(args: string[], opts?: { input?: string; timeoutMs?: number }): Promise<KubectlResult>;
  /**
   * Stops the apiserver (SIGTERM) and starts it again on the same port, certificates and etcd data;
   * resolves once it is ready. Its watch cache starts afresh, so a watch resumed from a resourceVersion
   * older than the restart gets 410 Gone ("too old resource version"), as after an upgrade.
   */
  restart(): Promise<void>;
  /** SIGTERMs the apiserver (SIGKILL after 5 s), waits for it to exit, removes `dir` unless `keep`. */
  stop(): Promise<void>;
}

export interface KubeHarnessOptions {
  /** The Gateway API channel whose CRDs are installed; default 'experimental' (a superset of standard). */
  gatewayApi?: 'standard' | 'experimental' | false;
  /** CRD directories (every *.yaml in them) or files to install too; default: the repo's crds/ when it exists. */
  crdDirs?: string[];
  /** Keep `dir` on stop, for debugging. */
  keep?: boolean;
  /** Progress lines: build, ready, CRDs established. */
  log?: (line: string) => void;
}

/** Runs a script, hands its stderr to `log` line by line (build progress), returns its trimmed stdout. */
function runScript(path: string, log: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(path, [], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const err: string[] = [];
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
    });
    createInterface({ input: child.stderr }).on('line', (line) => {
      err.push(line);
      log(line);
    });
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`${path} exited with ${code}:\n${err.join('\n')}`)),
    );
  });
}

/** The kube-apiserver binary's path; built (minutes, once per go.sum) when it is not cached yet. */
export function kubeApiserverBinary(log: (line: string) => void = () => {}): Promise<string> {
  return runScript(join(root, 'hack/kube-apiserver/build.sh'), log);
}

/** The Gateway API module's config/crd directory, straight from the Go module cache. */
export function gatewayApiCrdDir(log: (line: string) => void = () => {}): Promise<string> {
  return runScript(join(root, 'hack/gateway-api/crd-dir.sh'), log);
}

/** The Gateway API Inference Extension module's CRD directory (InferencePool v1), from the Go module cache. */
export function inferenceExtensionCrdDir(log: (line: string) => void = () => {}): Promise<string> {
  return runScript(join(root, 'hack/inference-extension/crd-dir.sh'), log);
}

/**
 * `n` distinct loopback ports from freePort: below the ephemeral range and reserved against the other
 * test processes, so they are still free when the API server binds them again after a restart.
 */
function freePorts(n: number): Promise<number[]> {
  return Promise.all(Array.from({ length: n }, () => freePort()));
}

/** Runs the machine's kubectl against `kubeconfig`; never throws on a non-zero exit. */
export function runKubectl(
  kubeconfig: string,
  args: string[],
  opts: { input?: string; timeoutMs?: number; cacheDir?: string } = {},
): Promise<KubectlResult> {
  const ms = opts.timeoutMs ?? 60_000;
  const cache = opts.cacheDir ? ['--cache-dir', opts.cacheDir] : [];
  return new Promise((resolve) => {
    const child = spawn('kubectl', ['--kubeconfig', kubeconfig, ...cache, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, ms);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ code: 127, stdout: '', stderr: `kubectl: ${e.message}` });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString() + (timedOut ? `\nkubectl: killed after ${ms}ms` : '');
      resolve({ code: code ?? 1, stdout: Buffer.concat(out).toString(), stderr });
    });
    // kubectl may exit before reading its input.
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

interface Reply {
  status: number;
  body: string;
}

/** One GET with the bearer token; without `ca` the serving certificate is not checked (it may not exist yet). */
function get(url: string, token: string, ca?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const tls = ca ? { ca } : { rejectUnauthorized: false };
    const req = https.get(
      url,
      { headers: { authorization: `Bearer ${token}` }, ...tls, agent: false, timeout: 5_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

interface Apiserver {
  child: ChildProcess;
  exited: Promise<void>;
  done(): boolean;
}

function launch(bin: string, args: string[], logFile: string, dir: string, keep: boolean): Apiserver {
  const fd = openSync(logFile, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  // A test run that ends without stop() (a crash, --test-force-exit) must not leave the server behind.
  const reap = () => {
    child.kill('SIGKILL');
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', reap);
  let done = false;
  const exited = new Promise<void>((r) => {
    const finish = () => {
      done = true;
      process.off('exit', reap);
      r();
    };
    child.once('exit', finish);
    child.once('error', finish);
  });
  return { child, exited, done: () => done };
}

async function terminate(a: Apiserver): Promise<void> {
  if (a.done()) return;
  a.child.kill('SIGTERM');
  const t = setTimeout(() => a.child.kill('SIGKILL'), 5_000);
  await a.exited;
  clearTimeout(t);
}

function tail(file: string, n = 40): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}

class ExitedEarly extends Error {}

/** Polls /readyz until it answers 200; fails when the process exits or after `ms`. */
async function waitReady(a: Apiserver, server: string, token: string, logFile: string, ms = 60_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (a.done()) {
      const why = a.child.exitCode !== null ? `code ${a.child.exitCode}` : `signal ${a.child.signalCode}`;
      throw new ExitedEarly(
        `kube-apiserver exited (${why}) before it was ready; last lines of ${logFile}:\n${tail(logFile)}`,
      );
    }
    if ((await get(`${server}/readyz`, token).catch(() => undefined))?.status === 200) return;
    await sleep(100);
  }
  throw new Error(
    `kube-apiserver not ready after ${ms / 1000}s; last lines of ${logFile}:\n${tail(logFile)}`,
  );
}

interface CrdList {
  items: {
    metadata: { name: string };
    spec: { group: string; names: { plural: string }; versions: { name: string; served: boolean }[] };
    status?: { conditions?: { type: string; status: string }[] };
  }[];
}

/**
 * Waits until every CRD on the server is Established and each served version is in discovery (so a
 * kubectl apply of a custom resource right after finds its kind); returns how many CRDs there are.
 * Not `kubectl wait --for condition=established crd --all`: kubectl 1.32 waits CRD by CRD, ~100 ms each.
 */
async function waitForCrds(server: string, token: string, ca: string, ms = 60_000): Promise<number> {
  const end = Date.now() + ms;
  let pending: string[] = [];
  while (Date.now() < end) {
    const list = await get(`${server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, token, ca);
    if (list.status !== 200) throw new Error(`listing CRDs: ${list.status} ${list.body}`);
    const crds = (JSON.parse(list.body) as CrdList).items;
    pending = crds
      .filter((c) => !c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'))
      .map((c) => `${c.metadata.name} (not Established)`);
    if (pending.length === 0) {
      const plurals = new Map<string, string[]>();
      for (const c of crds) {
        for (const v of c.spec.versions.filter((v) => v.served)) {
          const gv = `${c.spec.group}/${v.name}`;
          plurals.set(gv, [...(plurals.get(gv) ?? []), c.spec.names.plural]);
        }
      }
      for (const [gv, want] of plurals) {
        const r = await get(`${server}/apis/${gv}`, token, ca);
        const have =
          r.status === 200 ? (JSON.parse(r.body) as { resources: { name: string }[] }).resources : [];
        for (const p of want) {
          if (!have.some((x) => x.name === p)) pending.push(`${p} (not in discovery of ${gv})`);
        }
      }
      if (pending.length === 0) return crds.length;
    }
    await sleep(100);
  }
  throw new Error(`CRDs not ready after ${ms / 1000}s: ${pending.join(', ')}`);
}

function kubeconfigYaml(server: string, ca: string, token: string, unprivilegedToken: string): string {
  const caData = Buffer.from(ca).toString('base64');
  return `apiVersion: v1
kind: Config
clusters:
  - name: gw-test
    cluster:
      server: ${server}
      certificate-authority-data: ${caData}
users:
  - name: gw-admin
    user:
      token: ${token}
  - name: gw-nobody
    user:
      token: ${unprivilegedToken}
contexts:
  - name: gw-test
    context: { cluster: gw-test, user: gw-admin }
  - name: gw-nobody
    context: { cluster: gw-test, user: gw-nobody }
current-context: gw-test
`;
}

/** The CA of the self-signed serving certificate the apiserver wrote into --cert-dir (cert, then its CA). */
function servingCa(certDir: string): string {
  const pem = readFileSync(join(certDir, 'apiserver.crt'), 'utf8');
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
  const ca = blocks.find((b) => new X509Certificate(b).ca);
  if (!ca) throw new Error(`no CA certificate in ${certDir}/apiserver.crt`);
  return ca;
}

/** The YAML files to apply from a directory (not recursive) or a file; kustomization files are skipped. */
function yamlFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [resolve(path)];
  return readdirSync(path)
    .filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml')
    .sort()
    .map((f) => resolve(path, f));
}

/**
 * Starts a kube-apiserver (with its embedded etcd) on free loopback ports and installs the CRDs;
 * resolves once it is ready and every CRD is Established. Each call gets its own dir and ports.
 */
export async function startKube(opts: KubeHarnessOptions = {}): Promise<KubeHarness> {
  const log = opts.log ?? (() => {});
  const keep = opts.keep ?? false;
  const channel = opts.gatewayApi ?? 'experimental';
  const t0 = performance.now();
  const secs = (from: number) => ((performance.now() - from) / 1000).toFixed(1);
  const crdDir = channel ? gatewayApiCrdDir(log) : Promise.resolve('');
  crdDir.catch(() => {}); // awaited below; the apiserver may fail first
  log('kube: getting the kube-apiserver binary (hack/kube-apiserver/build.sh: minutes the first time only)');
  const bin = await kubeApiserverBinary(log);

  const dir = mkdtempSync(join(tmpdir(), 'gw-kube-'));
  const logFile = join(dir, 'apiserver.log');
  const certDir = join(dir, 'certs');
  const etcdDir = join(dir, 'etcd');
  const token = randomBytes(24).toString('hex');
  const unprivilegedToken = randomBytes(24).toString('hex');
  let apiserver: Apiserver | undefined;
  try {
    mkdirSync(certDir);
    // token,user,uid,"groups"
    writeFileSync(
      join(dir, 'tokens.csv'),
      `${token},gw-admin,gw-admin,"system:masters"\n${unprivilegedToken},gw-nobody,gw-nobody\n`,
      { mode: 0o600 },
    );
    const sa = generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    writeFileSync(join(dir, 'sa.key'), sa.privateKey, { mode: 0o600 });
    writeFileSync(join(dir, 'sa.pub'), sa.publicKey);

    // A port picked as free may be taken before the server binds it: try again with new ones.
    let server = '';
    let args: string[] = [];
    for (let attempt = 1; ; attempt++) {
      const [port, etcdClient, etcdPeer] = (await freePorts(3)) as [number, number, number];
      server = `https://127.0.0.1:${port}`;
      rmSync(etcdDir, { recursive: true, force: true });
      log(`kube: starting kube-apiserver on ${server} (dir ${dir})`);
      const started = performance.now();
      args = [
        `--embedded-etcd-dir=${etcdDir}`,
        `--embedded-etcd-client-url=http://127.0.0.1:${etcdClient}`,
        `--embedded-etcd-peer-url=http://127.0.0.1:${etcdPeer}`,
        `--etcd-servers=http://127.0.0.1:${etcdClient}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${port}`,
        `--cert-dir=${certDir}`,
        '--authorization-mode=RBAC',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--disable-admission-plugins=ServiceAccount',
        '--allow-privileged',
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${join(dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
        `--token-auth-file=${join(dir, 'tokens.csv')}`,
      ];
      apiserver = launch(bin, args, logFile, dir, keep);
      try {
        await waitReady(apiserver, server, token, logFile);
        log(`kube: kube-apiserver ready in ${secs(started)}s`);
        break;
      } catch (err) {
        await terminate(apiserver);
        if (!(err instanceof ExitedEarly) || attempt === 3 || !/address already in use/.test(tail(logFile))) {
          throw err;
        }
        log('kube: a port was taken, trying new ones');
      }
    }

    const ca = servingCa(certDir);
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(server, ca, token, unprivilegedToken), { mode: 0o600 });
    const cacheDir = join(dir, 'kube-cache');
    // Our own discovery cache: a later server on a reused port must not see this one's API groups.
    const run: KubeHarness['kubectl'] = (args, o) => runKubectl(kubeconfig, args, { ...o, cacheDir });

    // Not the ValidatingAdmissionPolicy beside the CRDs (*_vap_safeupgrades.yaml): it only guards CRD
    // upgrades in a long-lived cluster, and would stop a test from installing another channel on top.
    const files = [
      ...(channel ? yamlFiles(join(await crdDir, channel)).filter((f) => !/_vap_/.test(f)) : []),
      ...(opts.crdDirs ?? (existsSync(join(root, 'crds')) ? [join(root, 'crds')] : [])).flatMap(yamlFiles),
    ];
    if (files.length > 0) {
      const installing = performance.now();
      log(`kube: installing ${files.length} CRD files`);
      const applied = await run(['apply', '--server-side', ...files.flatMap((f) => ['-f', f])]);
      if (applied.code !== 0) throw new Error(`kubectl apply of the CRDs failed:\n${applied.stderr}`);
      const n = await waitForCrds(server, token, ca);
      log(`kube: ${n} CRDs established in ${secs(installing)}s`);
    }
    log(`kube: ready in ${secs(t0)}s (${server})`);

    let a = apiserver;
    let stopping: Promise<void> | undefined;
    const harness: KubeHarness = {
      server,
      kubeconfig,
      token,
      unprivilegedToken,
      ca,
      pid: a.child.pid ?? 0,
      dir,
      kubectl: run,
      restart: async () => {
        if (stopping) throw new Error('kube: restart after stop');
        await terminate(a);
        log(`kube: restarting kube-apiserver on ${server}`);
        a = launch(bin, args, logFile, dir, keep);
        harness.pid = a.child.pid ?? 0;
        await waitReady(a, server, token, logFile);
      },
      stop: () => {
        stopping ??= terminate(a).then(() => {
          if (!keep) rmSync(dir, { recursive: true, force: true });
        });
        return stopping;
      },
    };
    return harness;
  } catch (err) {
    if (apiserver) await terminate(apiserver);
    if (!keep) rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
