// Entry point of a data-plane worker thread: one DataPlane, driven by messages from the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import { runDataPlane } from './data-plane-port.ts';
import type { WorkerData } from './protocol.ts';

if (!parentPort) throw new Error('worker.ts must run in a worker thread');
runDataPlane(parentPort, workerData as WorkerData);
