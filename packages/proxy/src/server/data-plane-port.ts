// One DataPlane driven by the supervisor's messages (server/supervisor.ts) over a message port: the
// parent port of a worker thread (server/worker.ts), or one end of a MessageChannel when the only
// data plane runs in the main thread.
import { getHeapStatistics } from 'node:v8';
import { isMainThread, type MessagePort } from 'node:worker_threads';
import type { ProxyIR } from '../config/ir.ts';
import { LogHub } from '../observability/logger.ts';
import { ProxyMetrics } from '../observability/metrics.ts';
import { decodeSecrets } from '../secret.ts';
import { setAdminAddress } from '../upstream/backends/internal/index.ts';
import { DataPlane } from './data-plane.ts';
import { heapSpaces } from './heap-spaces.ts';
import { trimNow, trimWhenQuiet } from './idle-trim.ts';
import { cpuProfile, heapProfile } from './profile.ts';
import type { Envelope, Reply, TraceMessage, WorkerData, WorkerRequest } from './protocol.ts';
import { primeStreamShapes } from './stream-shapes.ts';
import { watchWorkerExits } from './worker-exits.ts';

/**
 * Starts the data plane of worker `data.index`, answering the requests that arrive on `port`. From
 * then on an uncaught exception in the thread is logged, not fatal.
 */
export function runDataPlane(port: MessagePort, data: WorkerData): void {
  // before any request: the hot path is then compiled against the maps of errored streams too
  primeStreamShapes();
  const logs = new LogHub(data.logFilter, data.logFormat, undefined, true);
  const log = logs.module('proxy');
  const metrics = new ProxyMetrics();
  metrics.registry.setDefaultLabels({ worker: String(data.index) });
  const plane = new DataPlane({
    log,
    accessLog: logs.records('request'),
    metrics,
    reusePort: data.workers > 1,
    worker: data.index,
    workers: data.workers,
    traceSink: (id, event) => port.postMessage({ trace: id, event } satisfies TraceMessage),
  });
  trimWhenQuiet(
    (t) => log.debug({ ms: Math.round(t.lastMs), freedBytes: t.lastFreedBytes }, 'idle memory trim'),
    () => plane.served,
  );

  if (data.admin !== undefined) setAdminAddress(data.admin);
  if (data.workers > 1) watchWorkerExits(data.exitedThreads);
  let started = false;
  async function handle(req: WorkerRequest): Promise<unknown> {
    switch (req.type) {
      case 'admin':
        return setAdminAddress(req.address);
      case 'apply': {
        const ports = await plane.apply(decodeSecrets(req.ir) as ProxyIR, req.ports, req.shared);
        // A worker's start-up is over once its first config runs (the main thread, data plane or
        // not, trims itself once its servers are up: cli.ts).
        if (!started && !isMainThread) {
          const t = trimNow();
          if (t) log.debug({ ms: Math.round(t.ms), freedBytes: t.freedBytes }, 'start-up memory trim');
        }
        started = true;
        return ports;
      }
      case 'drain': {
        const cut = await plane.drain(req.deadlineMs);
        // The supervisor terminates this thread next: the last access-log lines must be out first.
        await logs.flush();
        return cut;
      }
      case 'log-level':
        return logs.setFilter(req.filter);
      case 'metrics':
        return await metrics.registry.getMetricsAsJSON();
      case 'health':
        return plane.endpointHealth();
      case 'tasks':
        return { worker: data.index, inflight: plane.tasks(), resources: process.getActiveResourcesInfo() };
      case 'memory':
        return { worker: data.index, heap: getHeapStatistics(), spaces: heapSpaces() };
      case 'trace-arm':
        return plane.armTrace(req.id, req.flag, req.expression);
      case 'trace-disarm':
        return plane.disarmTrace(req.id);
      case 'profile':
        return req.kind === 'cpu' ? await cpuProfile(req.seconds, req.frequency) : await heapProfile();
    }
  }

  port.on('message', (msg: Envelope) => {
    handle(msg.req).then(
      (result) => port.postMessage({ id: msg.id, ok: true, result } satisfies Reply),
      (err: Error) => port.postMessage({ id: msg.id, ok: false, error: err.message } satisfies Reply),
    );
  });

  process.on('uncaughtException', (err) => {
    // A bug in one request must not take the data plane down with every other request on it.
    log.error({ err }, 'uncaught exception in worker');
  });
}
