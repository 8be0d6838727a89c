// Messages between the main thread (config, admin) and the data-plane worker threads.
export type WorkerRequest =
  | { type: 'apply'; ir: unknown; ports: Record<string, number>; shared: Record<string, SharedArrayBuffer> }
  | { type: 'drain'; deadlineMs: number }
  | { type: 'log-level'; filter: string }
  | { type: 'metrics' }
  | { type: 'tasks' }
  | { type: 'health' }
  | { type: 'memory' }
  | { type: 'profile'; kind: 'cpu'; seconds: number; frequency: number }
  | { type: 'profile'; kind: 'heap' }
  | { type: 'trace-arm'; id: number; flag: SharedArrayBuffer; expression?: string }
  | { type: 'trace-disarm'; id: number }
  /** Where the admin API listens (undefined: off), for internal backends. */
  | { type: 'admin'; address?: string };

/** Sent by a worker unasked: an event of a traced request (null when the trace is complete). */
export type TraceMessage = { trace: number; event: unknown };

export type Envelope = { id: number; req: WorkerRequest };
export type Reply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

export interface WorkerData {
  index: number;
  workers: number;
  logFilter: string;
  logFormat: 'text' | 'json';
  /** Where the admin API listens, once it does (a worker started after it: a restart). */
  admin?: string;
  /** Thread ids of the workers that exited before this one started (server/worker-exits.ts). */
  exitedThreads?: number[];
}
