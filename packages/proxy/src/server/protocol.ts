// Messages between the main thread (config, admin) and the data-plane worker threads.
export type WorkerRequest =
  | { type: 'apply'; ir: unknown; ports: Record<string, number> }
  | { type: 'drain'; deadlineMs: number }
  | { type: 'log-level'; filter: string }
  | { type: 'metrics' }
  | { type: 'tasks' }
  | { type: 'memory' }
  | { type: 'profile'; kind: 'cpu'; seconds: number; frequency: number }
  | { type: 'profile'; kind: 'heap' };

export type Envelope = { id: number; req: WorkerRequest };
export type Reply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

export interface WorkerData {
  index: number;
  workers: number;
  logFilter: string;
  logFormat: 'text' | 'json';
}
