// Claims requests for debug-trace subscribers: each armed subscription takes the next request (that
// matches its CEL expression) served by any worker; the first worker to flip the subscription's
// shared flag wins, so exactly one request is traced per subscription.

import type { TraceEvent } from '@gw/api';
import { DEFAULT_SENSITIVE_HEADERS } from '@gw/api/runtime';
import { type CelProgram, celTrue, compileCel } from '../cel/cel.ts';
import type { ObservedRequest, ObserverSource, RequestObserver } from '../pipeline/observer.ts';
import { TraceRecorder } from './recorder.ts';

interface TraceArm {
  id: number;
  /** Shared by every worker: the first to flip it from 0 to 1 traces its request. */
  flag: Int32Array;
  filter: CelProgram | undefined;
}

export class TraceSource implements ObserverSource {
  readonly #sink: ((id: number, event: TraceEvent | null) => void) | undefined;
  #arms: TraceArm[] = [];
  /** Header names whose values a trace never shows. */
  sensitive: ReadonlySet<string> = new Set(DEFAULT_SENSITIVE_HEADERS);
  /** Query parameters that carry credentials: their values are never shown either. */
  credentialParams: ReadonlySet<string> = new Set();

  constructor(sink: ((id: number, event: TraceEvent | null) => void) | undefined) {
    this.#sink = sink;
  }

  get armed(): boolean {
    return this.#arms.length > 0;
  }

  arm(id: number, flag: SharedArrayBuffer, expression?: string): void {
    const filter = expression ? compileCel(expression) : undefined;
    this.#arms = [...this.#arms, { id, flag: new Int32Array(flag), filter }];
  }

  disarm(id: number): void {
    this.#arms = this.#arms.filter((a) => a.id !== id);
  }

  attach(req: ObservedRequest): RequestObserver | undefined {
    const sink = this.#sink;
    for (const arm of this.#arms) {
      if (arm.filter && !celTrue(arm.filter, req.celContext())) continue;
      this.disarm(arm.id);
      if (Atomics.compareExchange(arm.flag, 0, 0, 1) !== 0 || !sink) continue;
      return new TraceRecorder(
        (e) => sink(arm.id, e),
        { headers: this.sensitive, queryParams: this.credentialParams },
        req.startTime,
      );
    }
    return undefined;
  }
}
