// The access log as a request observer: one record per finished request, shaped by the frontend's
// `accessLog` policy (CEL filter, fields added by CEL, fields removed). The record and its shaping
// are also what the spans of a traced request carry (tracing.ts), with the tracing policy's own.

import { setCelField } from '@gw/api/runtime';
import { finalOutcome } from '../a2a/info.ts';
import { type CelContext, type CelProgram, celTrue, compileCel } from '../cel/cel.ts';
import type { FrontendIR } from '../config/ir.ts';
import type { ObservedRequest, RequestObserver, RequestSummary } from '../pipeline/observer.ts';
import { redactQuery } from '../trace/redact.ts';
import type { RecordLog } from './logger.ts';

/** A filter that keeps some requests, fields added by CEL and fields removed, compiled once. */
export class RecordShape {
  readonly #filter: CelProgram | undefined;
  readonly #add: [string, CelProgram][];
  readonly #remove: Set<string>;

  constructor(
    s: {
      filter?: string | undefined;
      add?: Record<string, string> | undefined;
      remove?: string[] | undefined;
    } = {},
  ) {
    this.#filter = s.filter ? compileCel(s.filter) : undefined;
    this.#add = Object.entries(s.add ?? {}).map(([k, v]) => [k, compileCel(v)] as [string, CelProgram]);
    this.#remove = new Set(s.remove ?? []);
  }

  /** The CEL view of a finished request, when the filter or an added field needs one. */
  cel(req: ObservedRequest, status: number): CelContext | undefined {
    if (!this.#filter && this.#add.length === 0) return undefined;
    const cel = req.celContext();
    if (req.response === undefined) cel.response = { code: status, headers: {} };
    return cel;
  }

  /** Whether the filter keeps the request (an error or a non-true value drops it). */
  keeps(cel: CelContext | undefined): boolean {
    return !this.#filter || (cel !== undefined && celTrue(this.#filter, cel));
  }

  /** Removes the removed fields, then adds the added ones (a failing expression adds nothing). */
  apply(rec: Record<string, unknown>, cel: CelContext | undefined): void {
    for (const k of this.#remove) delete rec[k];
    if (!cel) return;
    for (const [k, p] of this.#add) {
      const v = p.eval(cel);
      // flatten(x): one field per entry of x (`k.<key>`)
      if (v !== undefined) setCelField(rec, k, v);
    }
  }
}

export class AccessLogObserver implements RequestObserver {
  readonly #log: RecordLog;
  readonly #shape: RecordShape;
  /** Query parameters that carry credentials: logged as [redacted]. */
  readonly #credentialParams: ReadonlySet<string>;

  constructor(log: RecordLog, frontend: FrontendIR, credentialParams: readonly string[] = []) {
    this.#log = log;
    this.#shape = new RecordShape(frontend.accessLog);
    this.#credentialParams = new Set(credentialParams);
  }

  end(req: ObservedRequest, summary: RequestSummary): void {
    const log = this.#log;
    if (!log.isLevelEnabled('info')) return;
    const cel = this.#shape.cel(req, summary.status);
    if (!this.#shape.keeps(cel)) return;
    const rec = requestRecord(req, summary, this.#credentialParams);
    this.#shape.apply(rec, cel);
    log.info(rec);
  }
}

/** What gw records of a finished request: the access-log line's fields, before any shaping. */
export function requestRecord(
  req: ObservedRequest,
  { status, seconds }: RequestSummary,
  credentialParams: ReadonlySet<string>,
): Record<string, unknown> {
  const route = req.route;
  const rec: Record<string, unknown> = {
    gateway: route?.gateway,
    listener: route?.listener,
    route: route?.key,
    endpoint: req.endpoint,
    'src.addr': `${req.source.address}:${req.source.port}`,
    'http.method': req.method,
    'http.host': req.authority,
    'http.path': redactQuery(req.originalUrl, credentialParams),
    'http.version': `HTTP/${req.httpVersion}`,
    'http.status': status,
    duration: `${Math.round(seconds * 1e4) / 10}ms`,
  };
  if (req.error) rec.error = req.error.detail;
  const upgrade = req.ext.upgrade;
  if (upgrade) {
    rec['upgrade.protocol'] = upgrade.protocol;
    // Counted on the client's connection from the switch on: what the tunnel carried each way.
    if (upgrade.spliced && upgrade.socket) {
      rec['upgrade.bytesReceived'] = upgrade.socket.bytesRead - upgrade.spliced.read;
      rec['upgrade.bytesSent'] = upgrade.socket.bytesWritten - upgrade.spliced.written;
    }
  }
  const llm = req.ext.llm;
  if (llm) {
    rec['llm.provider'] = llm.provider;
    rec['llm.requestModel'] = llm.requestModel;
    rec['llm.model'] = llm.model;
    rec['llm.responseModel'] = llm.responseModel;
    rec['llm.streaming'] = llm.streaming;
    if (llm.usage) {
      rec['llm.inputTokens'] = llm.usage.input;
      rec['llm.outputTokens'] = llm.usage.output;
      const cost = llm.cost;
      if (cost) rec['llm.cost'] = cost.total;
    }
    if (llm.guardrails.length > 0)
      rec['llm.guardrails'] = llm.guardrails.map(
        (g) => `${g.phase}:${g.guard}:${g.action}${g.applied ? '' : '(not applied)'}:${g.rule}`,
      );
  }
  const mcp = req.ext.mcp;
  if (mcp) {
    rec['mcp.method'] = mcp.method;
    if (mcp.target) rec['mcp.target'] = mcp.target;
    if (mcp.outcome) rec['mcp.outcome'] = mcp.outcome;
    const item = mcp.tool?.name ?? mcp.prompt?.name ?? mcp.resource?.uri;
    if (item) rec[mcp.tool ? 'mcp.tool' : mcp.prompt ? 'mcp.prompt' : 'mcp.resource'] = item;
    if (mcp.failed) rec['mcp.failedTargets'] = mcp.failed;
    if (mcp.guardrails?.length)
      rec['mcp.guardrails'] = mcp.guardrails.map(
        (g) => `${g.phase}:processor${g.processor}:${g.action}${g.applied ? '' : '(not applied)'}`,
      );
  }
  const a2a = req.ext.a2a;
  if (a2a) {
    rec['a2a.method'] = a2a.method;
    if (a2a.taskId) rec['a2a.taskId'] = a2a.taskId;
    if (a2a.taskState) rec['a2a.taskState'] = a2a.taskState;
    rec['a2a.outcome'] = finalOutcome(a2a, req.error);
    if (a2a.errorCode !== undefined) rec['a2a.errorCode'] = a2a.errorCode;
  }
  return rec;
}
