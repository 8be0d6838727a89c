// MCP guardrail processors (mcpGuardrails): remote services that see a client's JSON-RPC request
// before any MCP server does, and its result before the client does, and answer allow, modify or
// reject (@gw/guardrail-sdk's MCP processor contract); or CEL processors (`kind: cel`), whose `when`
// gw evaluates itself over the request and the message (mcp.method, mcp.params, mcp.result), then
// rejects with their `reject` message or replaces the params or result with what `transform` gives.
// Processors run in order; the first reject ends the chain. A processor that fails follows its
// failure mode.
import type { McpRequestVerdict, McpResponseVerdict } from '@gw/guardrail-sdk';
import {
  MCP_CONTRACT_VERSION,
  MCP_REJECT_CODE,
  MCP_REQUEST_PATH,
  MCP_RESPONSE_PATH,
} from '@gw/guardrail-sdk/wire';
import { type CelContext, type CelProgram, celToJson, compileCel } from '../cel/cel.ts';
import type {
  LlmGuardServiceIR,
  McpCelProcessorIR,
  McpGuardrailIR,
  McpProcessorIR,
  McpProcessorPhase,
} from '../config/ir.ts';
import { guardrailContract, preloadGuardrailContract } from '../llm/guardrails/contract.ts';
import { type GuardService, guardService, ServiceFailure } from '../llm/guardrails/service-call.ts';
import type { GuardEnv } from '../llm/guardrails/types.ts';
import type { Observation } from '../pipeline/observer.ts';
import { CODE, type Id, type Params, type Response } from './jsonrpc.ts';

/** What one processor did with one message: for the access log, the trace and the metrics. */
export interface McpGuardFinding {
  /** Index of the processor in mcpGuardrails.processors. */
  processor: number;
  phase: 'request' | 'response';
  /** failed: the call failed (with failOpen the message went on; `applied` says which). */
  action: 'allow' | 'modify' | 'reject' | 'failed';
  /** false for a failure that failed open. */
  applied: boolean;
  /** The processor's reason, or how the call failed. */
  reason?: string;
}

/** The slice of a client request the processors read, and where what they did is recorded. */
export interface GuardedRequest {
  ctx: {
    celContext(): CelContext;
    readonly signal: AbortSignal;
    /** Present on a request handled on this worker: the trace and other observers. */
    readonly obs?: Observation | undefined;
  };
  findings: McpGuardFinding[];
  /** What CEL sees of the request as `mcp` (method, target, tool, …), beside the message itself. */
  info?: object;
}

interface RemoteProcessor {
  kind: 'remote';
  index: number;
  ir: McpProcessorIR;
  service: GuardService;
  metadata: [string, CelProgram][];
  /** The phase of a method, resolved once per method name. */
  phases: Map<string, McpProcessorPhase>;
}

interface CelProcessor {
  kind: 'cel';
  index: number;
  ir: McpCelProcessorIR;
  when: CelProgram | undefined;
  transform: CelProgram | undefined;
  phases: Map<string, McpProcessorPhase>;
}

type Processor = RemoteProcessor | CelProcessor;
type Verdict = McpRequestVerdict | McpResponseVerdict;

/** The outcome of the request phase: the params to go on with, or the client's error answer. */
export type RequestOutcome = { params: Params | undefined } | { answer: Response };

export class McpGuardrails {
  readonly #processors: Processor[];

  constructor(ir: McpGuardrailIR[], env: GuardEnv) {
    if (ir.some((p) => p.kind !== 'cel')) preloadGuardrailContract();
    this.#processors = ir.map(
      (p, index): Processor =>
        p.kind === 'cel'
          ? {
              kind: 'cel',
              index,
              ir: p,
              when: p.when === undefined ? undefined : compileCel(p.when),
              transform: p.transform === undefined ? undefined : compileCel(p.transform),
              phases: new Map(),
            }
          : {
              kind: 'remote',
              index,
              ir: p,
              service: guardService(processorService(p), env, 'verdict'),
              metadata: Object.entries(p.metadata).map(([k, src]) => [k, compileCel(src)]),
              phases: new Map(),
            },
    );
  }

  get empty(): boolean {
    return this.#processors.length === 0;
  }

  /** Runs the request phase of every processor that sees `method` there, in order. */
  async request(
    req: GuardedRequest,
    id: Id | null,
    method: string,
    params: Params | undefined,
  ): Promise<RequestOutcome> {
    let current = params;
    for (const p of this.#matching(method, 'request')) {
      const verdict =
        p.kind === 'cel'
          ? this.#evaluate(p, req, 'request', { method, params: current ?? {} })
          : await this.#call(p, req, 'request', this.#body(p, req, 'request', method, current));
      if (verdict === undefined) continue;
      if (verdict.action === 'reject') return { answer: rejection(id, verdict) };
      if (verdict.action === 'modify' && 'params' in verdict) current = verdict.params as Params;
    }
    return { params: current };
  }

  /** Runs the response phase on a result (errors pass untouched), in order. */
  async response(
    req: GuardedRequest,
    method: string,
    params: Params | undefined,
    res: Response,
    target: string | undefined,
  ): Promise<Response> {
    if (!res.result) return res;
    let result = res.result;
    for (const p of this.#matching(method, 'response')) {
      const verdict =
        p.kind === 'cel'
          ? this.#evaluate(p, req, 'response', { method, params: params ?? {}, result })
          : await this.#call(p, req, 'response', {
              ...this.#body(p, req, 'response', method, params),
              result,
              ...(target === undefined ? {} : { target }),
            });
      if (verdict === undefined) continue;
      if (verdict.action === 'reject') return rejection(res.id, verdict);
      if (verdict.action === 'modify' && 'result' in verdict) result = verdict.result;
    }
    return result === res.result ? res : { ...res, result };
  }

  /** Whether any processor sees `method` in `phase` (so the caller can skip the work otherwise). */
  sees(method: string, phase: 'request' | 'response'): boolean {
    return this.#matching(method, phase).length > 0;
  }

  #matching(method: string, phase: 'request' | 'response'): Processor[] {
    return this.#processors.filter((p) => {
      let ph = p.phases.get(method);
      if (ph === undefined) {
        ph = methodPhase(p.ir.methods, method);
        // Method names come from clients: only a bounded number are remembered.
        if (p.phases.size < 256) p.phases.set(method, ph);
      }
      return ph === 'full' || ph === phase;
    });
  }

  /**
   * A CEL processor's verdict on one message (`message`: what CEL sees under `mcp` beside the
   * request's own mcp.*); undefined when it does not apply, or failed open.
   */
  #evaluate(
    p: CelProcessor,
    req: GuardedRequest,
    phase: 'request' | 'response',
    message: { method: string; params: object; result?: object },
  ): Verdict | undefined {
    const cel = req.ctx.celContext();
    cel.mcp = { ...req.info, ...message };
    const when = p.when ? p.when.eval(cel) : true;
    // an error is not false: the message is not let through unchecked unless the processor says so
    if (when === undefined) return this.#failed(p, req, phase, 'when failed to evaluate');
    if (when !== true) return undefined;
    if (p.ir.reject !== undefined) {
      note(req, { processor: p.index, phase, action: 'reject', applied: true, reason: p.ir.reject });
      return { action: 'reject', message: p.ir.reject };
    }
    const value = p.transform ? celToJson(p.transform.eval(cel)) : undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      return this.#failed(
        p,
        req,
        phase,
        `transform gave ${value === undefined ? 'no value (it failed)' : 'no object'}`,
      );
    note(req, { processor: p.index, phase, action: 'modify', applied: true });
    return phase === 'request'
      ? { action: 'modify', params: value as Record<string, unknown> }
      : { action: 'modify', result: value as Record<string, unknown> };
  }

  /**
   * A processor that failed (`code`: INTERNAL for a CEL one, UPSTREAM for a remote one): recorded; the
   * message goes on with failOpen, else the client gets an error.
   */
  #failed(
    p: CelProcessor | RemoteProcessor,
    req: GuardedRequest,
    phase: 'request' | 'response',
    how: string,
    code: number = CODE.INTERNAL,
  ): Verdict | undefined {
    note(req, { processor: p.index, phase, action: 'failed', applied: !p.ir.failOpen, reason: how });
    if (p.ir.failOpen) return undefined;
    return { action: 'reject', code, message: `MCP guardrail processor ${p.index} failed: ${how}` };
  }

  #body(
    p: RemoteProcessor,
    req: GuardedRequest,
    phase: 'request' | 'response',
    method: string,
    params: Params | undefined,
  ): Record<string, unknown> {
    const cel = req.ctx.celContext();
    const metadata: Record<string, unknown> = {};
    for (const [k, prog] of p.metadata) {
      try {
        metadata[k] = celToJson(prog.eval(cel));
      } catch {
        // an expression that cannot be evaluated on this request is left out
      }
    }
    return {
      version: MCP_CONTRACT_VERSION,
      phase,
      method,
      params: params ?? {},
      headers: forwardedHeaders(p.ir.headers, cel),
      metadata,
    };
  }

  /** One call; undefined when it failed open. A failure that fails closed is a reject verdict. */
  async #call(
    p: RemoteProcessor,
    req: GuardedRequest,
    phase: 'request' | 'response',
    body: Record<string, unknown>,
  ): Promise<McpRequestVerdict | McpResponseVerdict | undefined> {
    let verdict: McpRequestVerdict | McpResponseVerdict;
    try {
      const answer = await p.service.post({
        path: `${p.ir.basePath}${phase === 'request' ? MCP_REQUEST_PATH : MCP_RESPONSE_PATH}`,
        headers: {},
        body: Buffer.from(JSON.stringify(body)),
        signal: req.ctx.signal,
      });
      const { mcpVerdict } = guardrailContract.value ?? (await guardrailContract.ready);
      const parsed = mcpVerdict(phase, answer);
      if (!parsed.ok) throw new ServiceFailure(parsed.error.split('\n')[0] ?? 'invalid verdict');
      verdict = parsed.value;
    } catch (err) {
      return this.#failed(
        p,
        req,
        phase,
        err instanceof ServiceFailure ? err.message : 'failed',
        CODE.UPSTREAM,
      );
    }
    note(req, {
      processor: p.index,
      phase,
      action: verdict.action,
      applied: true,
      ...(verdict.reason ? { reason: verdict.reason } : {}),
    });
    return verdict;
  }
}

/**
 * The phase `methods` gives `method`: an exact key, else the longest prefix (`tools/*`) or suffix
 * (`*\/list`) wildcard that fits (a prefix wins a tie), else `*`, else off.
 */
export function methodPhase(methods: Record<string, McpProcessorPhase>, method: string): McpProcessorPhase {
  const exact = methods[method];
  if (exact !== undefined) return exact;
  let best: McpProcessorPhase | undefined;
  let bestLen = -1;
  for (const [key, phase] of Object.entries(methods)) {
    if (key === '*') continue;
    let len = -1;
    if (key.endsWith('*') && method.startsWith(key.slice(0, -1))) len = key.length - 1;
    else if (key.startsWith('*') && method.endsWith(key.slice(1))) len = key.length - 1 - 0.5;
    if (len > bestLen) {
      best = phase;
      bestLen = len;
    }
  }
  return best ?? methods['*'] ?? 'off';
}

/** The client's headers a processor may see: all (pseudo-headers too) unless an allow list names them. */
function forwardedHeaders(filter: McpProcessorIR['headers'], cel: CelContext): Record<string, string> {
  const r = (cel.request ?? {}) as {
    headers?: Record<string, string>;
    method?: string;
    pathAndQuery?: string;
    scheme?: string;
  };
  const all: Record<string, string> = { ...(r.headers ?? {}) };
  if (r.headers?.host !== undefined) all[':authority'] = r.headers.host;
  if (r.method !== undefined) all[':method'] = r.method;
  if (r.pathAndQuery !== undefined) all[':path'] = r.pathAndQuery;
  if (r.scheme !== undefined) all[':scheme'] = r.scheme;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(all)) {
    if (filter.disallowed.includes(k)) continue;
    if (filter.allowed.length > 0 && !filter.allowed.includes(k)) continue;
    out[k] = v;
  }
  return out;
}

function rejection(
  id: Id | null,
  v: { message: string; code?: number | undefined; data?: unknown },
): Response {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: v.code ?? MCP_REJECT_CODE,
      message: v.message,
      ...(v.data === undefined ? {} : { data: v.data }),
    },
  };
}

function note(req: GuardedRequest, f: McpGuardFinding): void {
  req.findings.push(f);
  // the observers take the request context itself (a message from another worker has none)
  req.ctx.obs?.event(
    req.ctx as never,
    'mcp.guardrail',
    { ...f },
    null,
    (f.action === 'reject' || f.action === 'failed') && f.applied ? 'warn' : 'info',
  );
}

/**
 * A processor as a guard service: its connection, and its credentials and then its key set over any
 * header of the same name (the key wins a header both name).
 */
function processorService(p: McpProcessorIR): LlmGuardServiceIR {
  const c = p.connection ?? {};
  const headers = c.requestHeaders;
  const secrets = [...(p.credentials ?? []), ...(p.credential ? [p.credential] : [])];
  const set = { ...headers?.set };
  for (const s of secrets) set[s.header] = s.value.reveal();
  return {
    origin: p.origin,
    timeoutMs: p.timeoutMs,
    ...c,
    ...(p.endpoints ? { endpoints: p.endpoints } : {}),
    ...(secrets.length > 0 ? { requestHeaders: { ...headers, set } } : {}),
  };
}
