// The main thread of a proxy: starts one data-plane worker per core, hands each config version to
// all of them (worker 0 first, so ports chosen by the OS are shared), and drains them on shutdown.
// A proxy with one worker may run it in this thread instead (SupervisorOptions.oneInProcess).
import { availableParallelism } from 'node:os';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import type { TraceEvent } from '@gw/api';
import type { Logger } from 'pino';
import type { ProxyIR } from '../config/ir.ts';
import { entryUrl } from '../lazy.ts';
import type { SharedMemoryNeed } from '../policies/types.ts';
import { encodeSecrets } from '../secret.ts';
import { activeHealthMemoryOf } from '../upstream/active-health.ts';
import { connectionMemoryOf } from './connection-limit.ts';
import type { Envelope, Reply, TraceMessage, WorkerData, WorkerRequest } from './protocol.ts';
import { announceWorkerExit, workerExits } from './worker-exits.ts';

// The worker: the module beside this one, or the bundle's gw-worker entry.
const WORKER_URL = entryUrl(import.meta.url, './worker.ts', 'gw-worker');

/**
 * Each worker's young generation, sized rather than left to V8, which grows it to tens of MiB (64 MiB
 * committed under load on a 24 GiB machine). A request's garbage, and the 64 KiB socket buffers a
 * streamed body leaves, are freed at a scavenge; a smaller young generation scavenges more often and
 * holds less. Measured pinned on one worker (wrk -c64, 1 KiB plain GET / 1 MiB POST and answer / 1 KiB
 * OpenAI chat), V8's default, 48, 16, 8 and 6 MiB:
 *   peak RSS, plain: 196-209, 178-182, 166, 154, 150 MiB
 *   peak RSS, 1 MiB bodies: 295-311, 307-312, 280-287, 266-273, 222 MiB
 *   scavenge pauses per LLM request (11 s at 10k req/s): -, 2.6, 4.0, 6.5 us (6 MiB: 15% more CPU)
 * 16 MiB takes most of the memory at about 1% of CPU; below 8 MiB scavenges start to cost real CPU.
 * A --max-semi-space-size given to node (in NODE_OPTIONS too) overrides it: bin/gw and the image pass
 * 5 (MiB; the young generation is three semi-spaces) for the main thread, which holds the data plane
 * when there is one worker (peak RSS, plain, pinned: 154-157 MiB without it, 116-124 with it).
 */
const YOUNG_GENERATION_MB = 16;

export class WorkerHandle {
  readonly index: number;
  /** The worker thread; undefined when the data plane runs in this thread. */
  readonly worker: Worker | undefined;
  /** The worker's thread id (Worker.threadId reads -1 once it exited); -1 in this thread. */
  readonly threadId: number = -1;
  version: string | undefined;
  /** The worker thread, or this end of the channel to the data plane in this thread. */
  readonly #port: Worker | MessagePort;
  #next = 1;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #failed: Error | undefined;

  constructor(
    index: number,
    data: WorkerData,
    onExit: (code: number) => void,
    onTrace: (id: number, event: TraceEvent | null) => void,
    inProcess = false,
  ) {
    this.index = index;
    if (inProcess) {
      // The same messages over a MessageChannel, cloned as they would be between threads. The data
      // plane's code loads now; what is posted meanwhile waits in the channel.
      const { port1, port2 } = new MessageChannel();
      this.worker = undefined;
      this.#port = port1;
      import('./data-plane-port.ts').then(
        ({ runDataPlane }) => runDataPlane(port2, data),
        (err: Error) => this.#fail(new Error(`cannot load the data plane: ${err.message}`)),
      );
    } else {
      this.worker = new Worker(WORKER_URL, {
        workerData: data,
        stdout: false,
        stderr: false,
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
      });
      this.#port = this.worker;
      this.threadId = this.worker.threadId;
      this.worker.on('error', (err) => this.#fail(err, false));
      this.worker.on('exit', (code) => {
        this.#fail(new Error(`worker ${index} exited with code ${code}`), false);
        onExit(code);
      });
    }
    this.#port.on('message', (r: Reply | TraceMessage) => {
      if ('trace' in r) {
        onTrace(r.trace, r.event as TraceEvent | null);
        return;
      }
      const p = this.#pending.get(r.id);
      if (!p) return;
      this.#pending.delete(r.id);
      if (r.ok) p.resolve(r.result);
      else p.reject(new Error(r.error));
    });
  }

  /** Rejects what is pending with `err`; `forGood`, every later call too (a thread restarts instead). */
  #fail(err: Error, forGood = true): void {
    if (forGood) this.#failed = err;
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }

  call<T = unknown>(req: WorkerRequest): Promise<T> {
    if (this.#failed) return Promise.reject(this.#failed);
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#port.postMessage({ id, req } satisfies Envelope);
    });
  }

  /** Ends the worker thread, or closes the channel to the data plane in this thread. */
  async terminate(): Promise<void> {
    if (this.worker) await this.worker.terminate();
    else (this.#port as MessagePort).close();
  }
}

export interface SupervisorOptions {
  workers: number | 'auto';
  logFilter: string;
  logFormat: 'text' | 'json';
  log: Logger;
  /**
   * With one worker, run its data plane in this thread rather than a thread of its own: a second V8
   * isolate with its own copy of the shared modules cost about 15 MiB of idle RSS (94 -> 79 MiB,
   * plain config). The data plane then shares the event loop with the admin, stats and readiness
   * servers, and is not restarted apart from the process.
   */
  oneInProcess?: boolean;
}

export class Supervisor {
  readonly workers: WorkerHandle[] = [];
  readonly #opts: SupervisorOptions;
  #ir: ProxyIR | undefined;
  #ports: Record<string, number> = {};
  #stopping = false;
  #ready = false;
  #queue: Promise<unknown> = Promise.resolve();
  onWorkerExit: (index: number, code: number) => void = () => {};

  /** True when the one data plane runs in this thread (SupervisorOptions.oneInProcess). */
  readonly inProcess: boolean;

  constructor(opts: SupervisorOptions) {
    this.#opts = opts;
    const n = opts.workers === 'auto' ? availableParallelism() : opts.workers;
    this.inProcess = n === 1 && opts.oneInProcess === true;
    for (let i = 0; i < n; i++) this.#spawn(i, n);
  }

  /** Where the admin API listens: internal backends send their requests there. */
  #admin: string | undefined;

  /** Tells every data plane, and each started later, where the admin API listens (undefined: off). */
  async setAdminAddress(address: string | undefined): Promise<void> {
    this.#admin = address;
    await this.broadcast({ type: 'admin', ...(address !== undefined ? { address } : {}) });
  }

  #spawn(index: number, total: number): void {
    const data: WorkerData = {
      index,
      workers: total,
      logFilter: this.#opts.logFilter,
      logFormat: this.#opts.logFormat,
      ...(this.#admin !== undefined ? { admin: this.#admin } : {}),
      exitedThreads: workerExits(),
    };
    this.workers[index] = new WorkerHandle(
      index,
      data,
      (code) => {
        if (this.#stopping) return;
        this.#opts.log.error({ worker: index, code }, 'data-plane worker exited; starting a new one');
        const gone = this.workers[index]?.threadId;
        if (gone !== undefined && gone >= 0) announceWorkerExit(gone);
        this.onWorkerExit(index, code);
        this.#spawn(index, total);
        const ir = this.#ir;
        const w = this.workers[index];
        if (ir && w) {
          const shared = Object.fromEntries(this.#shared);
          w.call({ type: 'apply', ir: encodeSecrets(ir), ports: this.#ports, shared })
            .then(() => {
              w.version = ir.version;
            })
            .catch((err: Error) =>
              this.#opts.log.error({ worker: index, err: err.message }, 'restarted worker rejected config'),
            );
        }
      },
      (id, event) => this.#onTrace(id, event),
      this.inProcess,
    );
  }

  readonly #traces = new Map<number, (event: TraceEvent | null) => void>();
  #nextTrace = 1;

  #onTrace(id: number, event: TraceEvent | null): void {
    const deliver = this.#traces.get(id);
    if (!deliver) return;
    if (event === null) this.#traces.delete(id);
    deliver(event);
  }

  /**
   * Subscribes to the trace of the next request any worker handles (matching `expression` when
   * given). Resolves once every worker is armed; `cancel` disarms them all.
   */
  async trace(
    onEvent: (event: TraceEvent | null) => void,
    expression?: string,
  ): Promise<{ cancel: () => void }> {
    const id = this.#nextTrace++;
    const flag = new SharedArrayBuffer(4);
    let claimed = false;
    this.#traces.set(id, (event) => {
      if (!claimed) {
        claimed = true;
        // One worker won the flag; the others need not keep checking their requests.
        for (const w of this.workers) w.call({ type: 'trace-disarm', id }).catch(() => {});
      }
      onEvent(event);
    });
    const req: WorkerRequest = expression
      ? { type: 'trace-arm', id, flag, expression }
      : { type: 'trace-arm', id, flag };
    await this.broadcast(req);
    return {
      cancel: () => {
        this.#traces.delete(id);
        for (const w of this.workers) w.call({ type: 'trace-disarm', id }).catch(() => {});
      },
    };
  }

  #shared = new Map<string, SharedArrayBuffer>();

  /**
   * One buffer per shared block (the policies' rate limit buckets, bind connection counts, the
   * endpoints' active health that worker 0 probes for all), kept while its key is unchanged.
   */
  #sharedFor(ir: ProxyIR, policyMemory: SharedMemoryNeed[]): Record<string, SharedArrayBuffer> {
    const next = new Map<string, SharedArrayBuffer>();
    for (const { key, bytes } of [...policyMemory, ...connectionMemoryOf(ir), ...activeHealthMemoryOf(ir)])
      next.set(key, this.#shared.get(key) ?? new SharedArrayBuffer(bytes));
    this.#shared = next;
    return Object.fromEntries(next);
  }

  get ir(): ProxyIR | undefined {
    return this.#ir;
  }

  get ports(): Record<string, number> {
    return { ...this.#ports };
  }

  get ready(): boolean {
    return this.#ready && !this.#stopping;
  }

  /**
   * Applies a config to every worker. Worker 0 goes first: if it refuses (compile error, port in use)
   * no other worker sees the config and the running one stays. `policyMemory` is what the config's
   * policies share across workers (policies/shared-memory.ts), worked out where the config was
   * compiled: sizing it here would load every policy's code into this thread.
   */
  apply(ir: ProxyIR, policyMemory: SharedMemoryNeed[]): Promise<void> {
    const run = this.#queue.then(() => this.#apply(ir, policyMemory));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #apply(ir: ProxyIR, policyMemory: SharedMemoryNeed[]): Promise<void> {
    const encoded = encodeSecrets(ir);
    const shared = this.#sharedFor(ir, policyMemory);
    const [first, ...rest] = this.workers as [WorkerHandle, ...WorkerHandle[]];
    const ports = await first.call<Record<string, number>>({
      type: 'apply',
      ir: encoded,
      ports: this.#ports,
      shared,
    });
    first.version = ir.version;
    const results = await Promise.allSettled(
      rest.map((w) => w.call({ type: 'apply', ir: encoded, ports, shared })),
    );
    results.forEach((r, i) => {
      const w = rest[i] as WorkerHandle;
      if (r.status === 'fulfilled') w.version = ir.version;
      else this.#opts.log.error({ worker: w.index, err: r.reason?.message }, 'worker failed to apply config');
    });
    this.#ir = ir;
    this.#ports = ports;
    this.#ready = true;
  }

  broadcast<T>(req: WorkerRequest): Promise<T[]> {
    return Promise.all(this.workers.map((w) => w.call<T>(req)));
  }

  /** Stopping has begun: readiness fails from now on, while the workers keep serving until stop(). */
  beginStop(): void {
    this.#stopping = true;
  }

  async stop(deadlineMs: number): Promise<number> {
    this.#stopping = true;
    const results = await Promise.allSettled(
      this.workers.map((w) => w.call<{ cut: number }>({ type: 'drain', deadlineMs })),
    );
    await Promise.allSettled(this.workers.map((w) => w.terminate()));
    return results.reduce((n, r) => n + (r.status === 'fulfilled' ? r.value.cut : 0), 0);
  }
}
