// Federation: many MCP servers (targets) answering as one. `initialize` opens a session on every
// target and merges what they offer; list methods fan out in parallel and merge page by page (the
// gateway's cursor holds each target's own); calls go to the target that owns the name. Names are
// `<target>_<name>` when prefixed (prefixMode). Authorization rules filter lists item by item and
// refuse calls on what they hide.
import { parseGoDuration } from '@gw/api/runtime';
import type { Dispatcher } from 'undici';
import type { CelContext } from '../cel/cel.ts';
import type { McpTarget, McpTargetIR } from '../config/ir.ts';
import type { Headers, RequestExtensions } from '../pipeline/context.ts';
import type { Observation } from '../pipeline/observer.ts';
import { compileRules, decide, type Rule } from '../policies/authorization/decision.ts';
import { AUTHORIZATION, credentialHeader } from '../policies/backend-auth/index.ts';
import { type RemoteLimiter, remoteLimiter } from '../policies/remote-rate-limit/index.ts';
import { VERSION } from '../version.ts';
import type { McpGuardFinding, McpGuardrails } from './guardrails.ts';
import {
  CODE,
  type Id,
  isRequest,
  McpError,
  type Message,
  type Notification,
  type Params,
  type Request,
  type Response,
} from './jsonrpc.ts';
import { mcpLog } from './log.ts';
import { type McpRuntime, STATELESS } from './runtime.ts';
import { homeHere, newSessionNonce, remoteHome, type SessionState } from './session.ts';
import { type ForwardedHeaders, forwardedHeaders } from './upstream/client-headers.ts';
import { idKey, type Relay, type TargetConnection, TargetError } from './upstream/connection.ts';
import { LegacySseConnection } from './upstream/legacy-sse.ts';
import { StdioConnection } from './upstream/stdio.ts';
import type { StreamConnection } from './upstream/stream.ts';
import { StreamableHttpConnection } from './upstream/streamable-http.ts';

/** Protocol versions the gateway speaks, newest first. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
export const LATEST_VERSION = PROTOCOL_VERSIONS[0] as string;
/** Requests the gateway makes on its own (initialize, lists, lookups) without a configured timeout. */
const DEFAULT_FANOUT_TIMEOUT_MS = 10_000;
/** The separator of `<target>_<name>` (agentgateway's; target names cannot contain it). */
export const PREFIX_SEPARATOR = '_';
/** Between a target's name and a resource URI (or template) it serves, as agentgateway writes it. */
export const URI_PREFIX_SEPARATOR = '+';

type ListMethod = 'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list';
const LISTS: Record<ListMethod, { key: string; item: 'tool' | 'prompt' | 'resource' | 'template' }> = {
  'tools/list': { key: 'tools', item: 'tool' },
  'prompts/list': { key: 'prompts', item: 'prompt' },
  'resources/list': { key: 'resources', item: 'resource' },
  'resources/templates/list': { key: 'resourceTemplates', item: 'template' },
};

/** What the access log, trace and CEL see of an MCP request (`ctx.ext.mcp`, `mcp.*`). */
export interface McpRequestInfo {
  method: string;
  /** The target that served it; a fan-out names none. */
  target?: string;
  tool?: { name: string; target: string };
  prompt?: { name: string; target: string };
  resource?: { uri: string; target: string };
  /** ok, error (the target's JSON-RPC error), denied, failed (a target failed), invalid. */
  outcome?: 'ok' | 'error' | 'denied' | 'failed' | 'invalid' | 'limited';
  /** Targets that failed (with FailOpen: left out). */
  failed?: string[];
  /** What the guardrail processors did (mcpGuardrails). */
  guardrails?: McpGuardFinding[];
}

declare module '../pipeline/context.ts' {
  interface RequestExtensions {
    mcp?: McpRequestInfo;
  }
}

/**
 * What the federation reads of the client's HTTP request: its CEL view, its route, and the slot for
 * what it records. A RequestContext is one; so is the view a legacy SSE message sent from another
 * worker arrives as.
 */
export interface McpRequest {
  readonly ext: RequestExtensions;
  celContext(): CelContext;
  readonly route: { key: string } | undefined;
  readonly signal: AbortSignal;
  /** The trace and other observers of a request handled on this worker. */
  readonly obs?: Observation | undefined;
  /**
   * Its headers as the policies left them (authentication took off the credential it checked), for
   * HTTP targets; a message relayed from another worker has none.
   */
  readonly headers?: Headers | undefined;
}

/** One client request as the federation sees it. */
export interface Call {
  ctx: McpRequest;
  /** The session; null in Stateless mode. */
  session: SessionState | null;
  /** Messages for the client about this request (progress, server requests), before its answer. */
  relay: Relay;
  signal: AbortSignal;
  /** The HTTP status of the answer when not 200 (an error that answers the whole POST). */
  status?: number;
  /** Headers for the answer (a rate limit service's quota headers). */
  headers?: Record<string, string>;
}

interface Target {
  ir: McpTargetIR;
  name: string;
  dispatcher: Dispatcher | undefined;
  timeoutMs: number;
  /** The backend's mcpAuthorization rules and the target's own, decided together for its items. */
  rules: Rule[];
  /** Its backendAuth sets the credential: the client's `authorization` is not sent. */
  ownAuth: boolean;
}

export class Federation {
  readonly ir: McpTarget;
  readonly targets: Target[];
  readonly #byName: Map<string, Target>;
  readonly runtime: McpRuntime;
  /** The backend's mcpAuthorization rules (each target adds its own to them). */
  readonly #rules: Rule[];
  readonly #stateless: boolean;
  /** Sessions keep connection-bound targets (stdio, legacy SSE) in their home worker. */
  readonly homeBound: boolean;
  /** The mcpGuardrails processors every client request passes; none when unset. */
  readonly guards: McpGuardrails | undefined;
  readonly #direct: Map<string, TargetConnection>;
  /** The route's mcpRemoteRateLimit; none when unset. */
  readonly #limiter: RemoteLimiter | undefined;

  constructor(
    ir: McpTarget,
    runtime: McpRuntime,
    dispatchers: Map<string, Dispatcher>,
    backendTimeoutMs: number,
    guards?: McpGuardrails,
    /** Connections the gateway serves itself, one per target for every session (openapi targets). */
    direct: Map<string, TargetConnection> = new Map(),
  ) {
    this.#direct = direct;
    this.ir = ir;
    // an MCP request has no LLM usage: token descriptors are left out
    this.#limiter = ir.remoteRateLimit ? remoteLimiter(ir.remoteRateLimit, true) : undefined;
    this.guards = guards;
    this.runtime = runtime;
    this.targets = ir.targets.map((t) => {
      const own = t.policies.http?.requestTimeout
        ? parseGoDuration(t.policies.http.requestTimeout)
        : undefined;
      return {
        ir: t,
        name: t.name,
        dispatcher: dispatchers.get(t.name),
        timeoutMs: own ?? backendTimeoutMs,
        rules: compileRules([...ir.authorization, ...t.authorization]),
        ownAuth: t.policies.backendAuth !== undefined,
      };
    });
    this.#byName = new Map(this.targets.map((t) => [t.name, t]));
    this.#rules = compileRules(ir.authorization);
    this.#stateless = ir.sessionRouting === 'Stateless';
    // the home worker of a session starts its targets for siblings that ask first
    const bound = this.targets.some((t) => t.ir.transport.kind === 'stdio' || t.ir.transport.kind === 'sse');
    this.homeBound = bound && !this.#stateless;
    if (this.homeBound)
      runtime.serve((name, params) => {
        const t = this.#byName.get(name);
        if (!t) throw new TargetError(name, 'not a target of this backend');
        return this.#bound(t, params);
      });
  }

  get prefixed(): boolean {
    return (
      this.ir.prefixMode === 'Always' || (this.ir.prefixMode === 'Conditional' && this.targets.length > 1)
    );
  }

  #fanoutTimeout(t: Target): number {
    return t.timeoutMs || DEFAULT_FANOUT_TIMEOUT_MS;
  }

  /** The initialize params a stateless or resumed connection-bound target is started with. */
  static gatewayInitParams(version: string): Record<string, unknown> {
    return { protocolVersion: version, capabilities: {}, clientInfo: { name: 'gw', version: VERSION } };
  }

  /**
   * A connection to `t` for this session (cheap for HTTP targets; a live one for stdio and SSE).
   * `call`: the client request it serves, whose headers a streamable-HTTP target is sent (and its
   * validated JWT with backendAuth passthrough).
   */
  connection(
    t: Target,
    session: SessionState | null,
    initParams?: Record<string, unknown>,
    call?: Pick<Call, 'ctx'>,
  ): TargetConnection {
    const tr = t.ir.transport;
    const version = session?.p ?? LATEST_VERSION;
    if (tr.kind === 'openapi') {
      const own = this.#direct.get(t.name);
      if (!own) throw new TargetError(t.name, 'not connected (validation only)');
      return own;
    }
    if (tr.kind === 'streamable-http') {
      if (!t.dispatcher) throw new TargetError(t.name, 'not connected (validation only)');
      const auth = passthroughHeader(t.ir, call);
      const headers = call && clientHeaders(t, forwardedHeaders(call.ctx));
      return new StreamableHttpConnection(
        {
          name: t.name,
          origin: tr.origin,
          path: tr.path,
          dispatcher: t.dispatcher,
          timeoutMs: this.#fanoutTimeout(t),
          ...(headers ? { headers } : {}),
          ...(auth ? { auth } : {}),
        },
        session?.s[t.name] ?? null,
        session ? session.p : undefined,
      );
    }
    const nonce = session?.n ?? STATELESS;
    const params = initParams ?? session?.c ?? Federation.gatewayInitParams(version);
    // the process or stream is the home worker's: a client's answer, and the target's state, meet there
    const home = session ? remoteHome(session) : undefined;
    if (home !== undefined) return this.runtime.remote(home, { nonce, target: t.name, params });
    return this.runtime.connection(nonce, t.name, () => this.#bound(t, params));
  }

  /** A new connection to a stdio or legacy SSE target, initialized with `params`. */
  #bound(t: Target, params: Record<string, unknown>): StreamConnection {
    const tr = t.ir.transport;
    if (tr.kind === 'stdio')
      return new StdioConnection({ name: t.name, ...tr }, params, this.#fanoutTimeout(t));
    if (tr.kind !== 'sse' || !t.dispatcher) throw new TargetError(t.name, 'not connected (validation only)');
    return new LegacySseConnection(
      { name: t.name, origin: tr.origin, path: tr.path, dispatcher: t.dispatcher },
      params,
      this.#fanoutTimeout(t),
    );
  }

  /** Targets serving this session: all but those that failed at its initialize (FailOpen). */
  #live(session: SessionState | null): Target[] {
    const down = session?.down;
    return down?.length ? this.targets.filter((t) => !down.includes(t.name)) : this.targets;
  }

  /**
   * Sends a request to one target. In Stateless mode an HTTP target gets a session of its own for
   * the request (initialize, the request, DELETE).
   */
  async #ask(t: Target, call: Call, req: Request, timeoutMs: number): Promise<Response> {
    const conn = this.connection(t, call.session, undefined, call);
    const opts = {
      signal: call.signal,
      relay: this.#relayFrom(t, call.relay, conn),
      timeoutMs,
      // an openapi target's one HTTP request per call carries them (a streamable-HTTP connection has them)
      ...(t.ir.transport.kind === 'openapi' ? { headers: clientHeaders(t, forwardedHeaders(call.ctx)) } : {}),
    };
    if (!(this.#stateless && conn instanceof StreamableHttpConnection)) return conn.request(req, opts);
    const init = await conn.request(
      {
        jsonrpc: '2.0',
        id: `gw-init-${newSessionNonce()}`,
        method: 'initialize',
        params: Federation.gatewayInitParams(LATEST_VERSION),
      },
      { signal: call.signal, timeoutMs: this.#fanoutTimeout(t) },
    );
    if (init.error) throw new TargetError(t.name, `initialize failed: ${init.error.message}`);
    const v = init.result?.protocolVersion;
    if (typeof v === 'string') conn.setVersion(v);
    await conn.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    try {
      return await conn.request(req, opts);
    } finally {
      void conn.close();
    }
  }

  /**
   * Messages of target `t` on their way to the client: a server-to-client request gets an id that
   * names its target (`<target>:<id as JSON>`), so the client's answer finds its way back.
   */
  #relayFrom(t: Target, relay: Relay, conn?: TargetConnection): Relay {
    if (!this.#stateless || !conn) return (m) => relay(this.toClient(t.name, m));
    // Stateless: no session would carry the client's answer back to this target (a request of its
    // own reaches another upstream session, or none), so the gateway answers for the client, as a
    // client without the capability does, rather than leave the call waiting for ever.
    return (m) => {
      if (!isRequest(m)) return relay(this.toClient(t.name, m));
      void conn
        .send({
          jsonrpc: '2.0',
          id: m.id,
          error: {
            code: CODE.METHOD_NOT_FOUND,
            message: `${m.method} is not available: the gateway's Stateless MCP routing carries no requests from a server to its client`,
          },
        })
        .catch(() => {});
    };
  }

  toClient(target: string, m: Message): Message {
    if (isRequest(m)) return { ...m, id: `${target}:${JSON.stringify(m.id)}` };
    // a subscribed resource changed: named as the client knows it
    if ('method' in m && m.method === 'notifications/resources/updated' && this.prefixed) {
      const p = m.params as { uri?: unknown } | undefined;
      if (typeof p?.uri === 'string')
        return { ...m, params: { ...p, uri: `${target}${URI_PREFIX_SEPARATOR}${p.uri}` } };
    }
    if ('method' in m && m.method === 'notifications/cancelled') {
      const p = m.params as { requestId?: Id } | undefined;
      if (p?.requestId !== undefined)
        return { ...m, params: { ...p, requestId: `${target}:${JSON.stringify(p.requestId)}` } };
    }
    return m;
  }

  // ---------- initialize ----------

  /** `nonce`: the session's own (a legacy SSE stream names it before initialize). */
  async initialize(
    call: Call,
    req: Request,
    nonce = newSessionNonce(),
  ): Promise<{ response: Response; state: SessionState | null }> {
    const params = (req.params ?? {}) as Record<string, unknown>;
    const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : LATEST_VERSION;
    const version = PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_VERSION;
    if (this.#stateless) {
      return {
        response: {
          jsonrpc: '2.0',
          id: req.id,
          result: this.#merged(version, this.#staticCapabilities(), []),
        },
        state: null,
      };
    }
    const initParams = { ...params, protocolVersion: version };
    const state: SessionState = {
      v: 1,
      s: {},
      p: version,
      c: initParams,
      t: Math.floor(Date.now() / 1000),
      n: nonce,
      ...homeHere(),
    };
    const results = await Promise.allSettled(
      this.targets.map(async (t) => {
        const conn = this.connection(t, state, initParams, call);
        const r = await conn.request(
          { jsonrpc: '2.0', id: req.id, method: 'initialize', params: initParams },
          { signal: call.signal, timeoutMs: this.#fanoutTimeout(t), relay: this.#relayFrom(t, call.relay) },
        );
        if (r.error) throw new TargetError(t.name, `initialize failed: ${r.error.message}`);
        return { t, conn, result: r.result ?? {} };
      }),
    );
    const ok: { t: Target; conn: TargetConnection; result: Record<string, unknown> }[] = [];
    const failed: TargetError[] = [];
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') ok.push(r.value);
      else failed.push(asTargetError(this.targets[i]?.name ?? '?', r.reason));
    });
    this.#noteFailures(call, failed);
    if (failed.length > 0 && (this.ir.failureMode === 'FailClosed' || ok.length === 0)) {
      // The targets that did open a session close it again.
      for (const o of ok) void o.conn.close();
      void this.runtime.endSession(state.n);
      throw failure(failed);
    }
    for (const o of ok) state.s[o.t.name] = o.conn.sessionId;
    if (failed.length > 0) state.down = failed.map((f) => f.target);
    // The lowest version any target answered with: every target can speak it.
    let negotiated = version;
    for (const o of ok) {
      const v = o.result.protocolVersion;
      if (typeof v === 'string' && PROTOCOL_VERSIONS.includes(v) && v < negotiated) negotiated = v;
    }
    state.p = negotiated;
    const result = this.#merged(
      negotiated,
      ok.map((o) => (o.result.capabilities ?? {}) as Record<string, unknown>),
      ok.map((o) => [o.t.name, o.result.instructions] as const),
      ok.length === 1 ? ok[0]?.result.serverInfo : undefined,
    );
    return { response: { jsonrpc: '2.0', id: req.id, result }, state };
  }

  /** What a stateless gateway offers without asking (it opens no sessions at initialize). */
  #staticCapabilities(): Record<string, unknown>[] {
    return [
      { tools: { listChanged: false }, prompts: { listChanged: false }, resources: { listChanged: false } },
    ];
  }

  #merged(
    version: string,
    caps: Record<string, unknown>[],
    instructions: (readonly [string, unknown])[],
    upstreamInfo?: unknown,
  ): Record<string, unknown> {
    const out: Record<string, Record<string, unknown>> = {};
    for (const c of caps) {
      for (const [k, v] of Object.entries(c)) {
        if (!v || typeof v !== 'object') continue;
        const into = out[k] ?? {};
        out[k] = into;
        for (const [f, fv] of Object.entries(v as Record<string, unknown>)) {
          // A flag is on when any target has it on.
          if (typeof fv === 'boolean') into[f] = into[f] === true || fv;
          else if (!(f in into)) into[f] = fv;
        }
      }
    }
    // server: what a federation of several targets reports of itself (agentgateway's overrides)
    const own = this.targets.length > 1 ? this.ir.server : undefined;
    // one target: the gateway is that server to its clients, and says so with its name (as agentgateway)
    const single =
      this.targets.length === 1 && upstreamInfo !== null && typeof upstreamInfo === 'object'
        ? (upstreamInfo as Record<string, unknown>)
        : undefined;
    const result: Record<string, unknown> = {
      protocolVersion: version,
      capabilities: out,
      serverInfo: single ?? {
        name: own?.name ?? 'gw',
        version: own?.version ?? VERSION,
        ...(own?.title !== undefined ? { title: own.title } : {}),
      },
    };
    const text = instructions
      .filter(([, i]) => typeof i === 'string' && i.length > 0)
      .map(([n, i]) => (this.targets.length > 1 ? `${n}: ${i}` : (i as string)));
    if (own?.instructions) text.unshift(own.instructions);
    if (text.length > 0) result.instructions = text.join('\n\n');
    return result;
  }

  // ---------- requests ----------

  /** The answer to a client request (never throws for a target's failure: that is an error answer). */
  async request(call: Call, req: Request): Promise<Response> {
    const start = call.ctx.obs ? performance.now() : null;
    const res = await this.#request(call, req);
    traceRequest(call.ctx, start);
    return res;
  }

  async #request(call: Call, req: Request): Promise<Response> {
    const info: McpRequestInfo = { method: req.method };
    call.ctx.ext.mcp = info;
    try {
      if (!this.guards) {
        const res = await this.#dispatch(call, req, info);
        info.outcome ??= res.error ? 'error' : 'ok';
        return res;
      }
      return await this.#guarded(this.guards, call, info, req, (r) => this.#dispatch(call, r, info));
    } catch (err) {
      if (err instanceof McpError) {
        info.outcome ??= err.code === CODE.FORBIDDEN ? 'denied' : 'invalid';
        if (err.httpStatus !== 200) call.status = err.httpStatus;
        return errorAnswer(req.id, err);
      }
      if (err instanceof TargetError) {
        info.outcome = 'failed';
        this.#noteFailures(call, [err]);
        const code = err.timeout ? CODE.TIMEOUT : CODE.UPSTREAM;
        return {
          jsonrpc: '2.0',
          id: req.id,
          error: { code, message: err.message, data: { target: err.target } },
        };
      }
      throw err;
    }
  }

  /**
   * `work` between the processors' request phase (which may change the params or answer instead)
   * and their response phase (which may change the result or turn it into an error).
   */
  async #guarded(
    guards: McpGuardrails,
    call: Call,
    info: McpRequestInfo,
    req: Request,
    work: (req: Request) => Promise<Response>,
  ): Promise<Response> {
    info.guardrails ??= [];
    const g = { ctx: call.ctx, findings: info.guardrails, info };
    const before = await guards.request(g, req.id, req.method, req.params);
    if ('answer' in before) {
      info.outcome = guardOutcome(before.answer);
      return before.answer;
    }
    const sent = before.params === req.params ? req : { ...req, params: before.params as Params };
    const res = await work(sent);
    const after = await guards.response(g, req.method, sent.params, res, info.target);
    info.outcome ??= after.error ? (after === res ? 'error' : guardOutcome(after)) : 'ok';
    return after;
  }

  /** initialize through the processors; a session whose initialize they refuse is ended. */
  async guardedInitialize(
    call: Call,
    req: Request,
    info: McpRequestInfo,
    nonce?: string,
  ): Promise<{ response: Response; state: SessionState | null }> {
    if (!this.guards) return this.initialize(call, req, nonce);
    let state: SessionState | null = null;
    const response = await this.#guarded(this.guards, call, info, req, async (r) => {
      const out = await this.initialize(call, r, nonce);
      state = out.state;
      return out.response;
    });
    if (response.error && state) {
      void this.end(state);
      return { response, state: null };
    }
    return { response, state };
  }

  async #dispatch(call: Call, req: Request, info: McpRequestInfo): Promise<Response> {
    const p = (req.params ?? {}) as Record<string, unknown>;
    switch (req.method) {
      case 'ping':
        return { jsonrpc: '2.0', id: req.id, result: {} };
      case 'tools/list':
      case 'prompts/list':
      case 'resources/list':
      case 'resources/templates/list':
        await this.#rateLimit(call, info);
        return this.#list(call, req, req.method, info);
      case 'tools/call':
        return this.#routed(call, req, 'tool', str(p.name, 'name'), info);
      case 'prompts/get':
        return this.#routed(call, req, 'prompt', str(p.name, 'name'), info);
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.#routed(call, req, 'resource', str(p.uri, 'uri'), info);
      case 'completion/complete': {
        const ref = (p.ref ?? {}) as Record<string, unknown>;
        if (ref.type === 'ref/prompt')
          return this.#routed(call, req, 'prompt', str(ref.name, 'ref.name'), info, true);
        if (ref.type === 'ref/resource')
          return this.#routed(call, req, 'resource', str(ref.uri, 'ref.uri'), info, true);
        throw new McpError(CODE.INVALID_PARAMS, 'completion/complete needs ref/prompt or ref/resource');
      }
      case 'logging/setLevel':
        await this.#rateLimit(call, info);
        await this.#everywhere(call, req);
        return { jsonrpc: '2.0', id: req.id, result: {} };
      default: {
        const live = this.#live(call.session);
        const only = live.length === 1 ? live[0] : undefined;
        if (!only)
          throw new McpError(CODE.METHOD_NOT_FOUND, `method ${req.method} is not federated across targets`);
        info.target = only.name;
        await this.#rateLimit(call, info);
        return this.#ask(only, call, req, only.timeoutMs);
      }
    }
  }

  /** A request every live target gets (logging level); a target's failure follows failureMode. */
  async #everywhere(call: Call, req: Request): Promise<void> {
    const live = this.#live(call.session);
    const results = await Promise.allSettled(
      live.map((t) => this.#ask(t, call, req, this.#fanoutTimeout(t))),
    );
    const failed = results.flatMap((r, i) =>
      r.status === 'rejected' ? [asTargetError(live[i]?.name ?? '?', r.reason)] : [],
    );
    this.#noteFailures(call, failed);
    if (failed.length > 0 && (this.ir.failureMode === 'FailClosed' || failed.length === live.length))
      throw failed[0];
  }

  /**
   * The route's mcpRemoteRateLimit on this request, its CEL seeing mcp.* (`view`, default `info`): over the limit a JSON-RPC
   * error answered with HTTP 429 and the service's quota headers; a service that gives no verdict
   * lets the request on (failOpen) or answers 500. Within the limit the quota headers go on the answer.
   */
  async #rateLimit(call: Call, info: McpRequestInfo, view: McpRequestInfo = info): Promise<void> {
    const limiter = this.#limiter;
    if (!limiter) return;
    const d = await limiter.decide(call.ctx as never, this.#celFor(call, view), call.signal, { mcp: true });
    if (d.kind === 'unavailable') {
      info.outcome = 'failed';
      throw new McpError(CODE.INTERNAL, 'rate limit service unavailable', undefined, 500);
    }
    if (d.kind === 'limited') {
      call.headers = { ...call.headers, ...d.headers };
      info.outcome = 'limited';
      throw new McpError(CODE.RATE_LIMITED, `rate limit exceeded for ${info.method}`, undefined, 429);
    }
    if (d.ok) call.headers = { ...call.headers, ...d.ok.headers };
  }

  #celFor(call: Call, info: McpRequestInfo): CelContext {
    const c = call.ctx.celContext();
    c.mcp = info;
    return c;
  }

  /** Whether the rules of the item's target (the backend's and its own) allow it. */
  #allowed(call: Call, info: McpRequestInfo): boolean {
    const target = info.target ?? info.tool?.target ?? info.prompt?.target ?? info.resource?.target;
    const rules = (target !== undefined ? this.#byName.get(target)?.rules : undefined) ?? this.#rules;
    if (rules.length === 0) return true;
    return decide(rules, this.#celFor(call, info)).allowed;
  }

  // ---------- lists ----------

  async #list(call: Call, req: Request, method: ListMethod, info: McpRequestInfo): Promise<Response> {
    const { key, item } = LISTS[method];
    const live = this.#live(call.session);
    const cursor = (req.params as { cursor?: unknown } | undefined)?.cursor;
    let pages: Map<string, string | null>;
    if (cursor === undefined) pages = new Map(live.map((t) => [t.name, null]));
    else pages = decodeCursor(cursor, new Set(live.map((t) => t.name)));
    const asked = live.filter((t) => pages.has(t.name));
    const results = await Promise.allSettled(
      asked.map(async (t) => {
        const c = pages.get(t.name);
        const params: Record<string, unknown> = { ...(req.params ?? {}) };
        if (c === null || c === undefined) delete params.cursor;
        else params.cursor = c;
        const r = await this.#ask(t, call, { ...req, params }, this.#fanoutTimeout(t));
        if (r.error) throw new TargetError(t.name, `${method} failed: ${r.error.message}`);
        return r.result ?? {};
      }),
    );
    const failed: TargetError[] = [];
    const items: Record<string, unknown>[] = [];
    const next: Record<string, string> = {};
    const seen = new Map<string, string>();
    const learned: [string, string][] = [];
    results.forEach((r, i) => {
      const t = asked[i] as Target;
      if (r.status === 'rejected') {
        failed.push(asTargetError(t.name, r.reason));
        return;
      }
      const res = r.value;
      if (typeof res.nextCursor === 'string') next[t.name] = res.nextCursor;
      const list = Array.isArray(res[key]) ? (res[key] as Record<string, unknown>[]) : [];
      for (const x of list) {
        const out = this.#exposeItem(call, item, t.name, x, seen, learned);
        if (out) items.push(out);
      }
    });
    this.#noteFailures(call, failed);
    if (failed.length > 0 && (this.ir.failureMode === 'FailClosed' || failed.length === asked.length)) {
      info.failed = failed.map((f) => f.target);
      throw failed[0];
    }
    if (failed.length > 0) info.failed = failed.map((f) => f.target);
    if (call.session && learned.length > 0) this.runtime.learn(call.session.n, learned);
    const result: Record<string, unknown> = { [key]: items };
    if (Object.keys(next).length > 0) result.nextCursor = encodeCursor(next);
    return { jsonrpc: '2.0', id: req.id, result };
  }

  /** One listed item as the client sees it (prefixed), or undefined when a rule hides it. */
  #exposeItem(
    call: Call,
    item: 'tool' | 'prompt' | 'resource' | 'template',
    target: string,
    x: Record<string, unknown>,
    seen: Map<string, string>,
    learned: [string, string][],
  ): Record<string, unknown> | undefined {
    if (item === 'tool' || item === 'prompt') {
      const name = typeof x.name === 'string' ? x.name : '';
      const probe: McpRequestInfo = { method: `${item}s/list`, target, [item]: { name, target } };
      if (!this.#allowed(call, probe)) return undefined;
      const exposed = this.prefixed ? `${target}${PREFIX_SEPARATOR}${name}` : name;
      const other = seen.get(exposed);
      if (other !== undefined && other !== target) {
        throw new McpError(
          CODE.INTERNAL,
          `the ${item} ${JSON.stringify(name)} is served by targets ${other} and ${target}; prefixMode Never needs names unique across targets`,
          { targets: [other, target] },
        );
      }
      seen.set(exposed, target);
      learned.push([`${item}:${exposed}`, target]);
      return exposed === name ? x : { ...x, name: exposed };
    }
    const uri = typeof x.uri === 'string' ? x.uri : typeof x.uriTemplate === 'string' ? x.uriTemplate : '';
    if (
      item === 'resource' &&
      !this.#allowed(call, { method: 'resources/list', target, resource: { uri, target } })
    )
      return undefined;
    // several targets: `<target>+<uri>`, so that two targets' equal URIs stay apart and a read finds
    // its target without asking
    const exposed = this.prefixed ? `${target}${URI_PREFIX_SEPARATOR}${uri}` : uri;
    learned.push([`${item}:${exposed}`, target]);
    if (exposed === uri) return x;
    return item === 'resource' ? { ...x, uri: exposed } : { ...x, uriTemplate: exposed };
  }

  // ---------- calls routed to one target ----------

  async #routed(
    call: Call,
    req: Request,
    kind: 'tool' | 'prompt' | 'resource',
    name: string,
    info: McpRequestInfo,
    completion = false,
  ): Promise<Response> {
    // A name this worker has not seen listed is looked up by asking the targets' lists: the limit is
    // checked before that fan-out (its CEL sees the name, not yet the target), else after authorization.
    let checked = false;
    const precheck = async () => {
      checked = true;
      const item = kind === 'resource' ? { resource: { uri: name } } : { [kind]: { name } };
      await this.#rateLimit(call, info, { ...info, ...item } as McpRequestInfo);
    };
    const owner =
      kind === 'resource'
        ? await this.#resourceOwner(call, name, precheck)
        : await this.#nameOwner(call, kind, name, precheck);
    // A denied item is answered as one no target serves, as agentgateway answers it: the list left
    // it out, and the answer does not tell the client it is there (the log and metrics say denied).
    const unknown = (): Response => {
      const what =
        kind === 'resource' ? `resource ${JSON.stringify(name)}` : `${kind} ${JSON.stringify(name)}`;
      return {
        jsonrpc: '2.0',
        id: req.id,
        error: { code: CODE.INVALID_PARAMS, message: `unknown ${what}: no target serves it` },
      };
    };
    if (!owner) {
      info.outcome = 'invalid';
      return unknown();
    }
    const [t, upstreamName] = owner;
    info.target = t.name;
    if (kind === 'resource') info.resource = { uri: upstreamName, target: t.name };
    else info[kind] = { name: upstreamName, target: t.name };
    if (!this.#allowed(call, info)) {
      info.outcome = 'denied';
      return unknown();
    }
    if (!checked) await this.#rateLimit(call, info);
    const params = { ...(req.params ?? {}) } as Record<string, unknown>;
    if (completion)
      params.ref = {
        ...(params.ref as object),
        ...(kind === 'prompt' ? { name: upstreamName } : { uri: upstreamName }),
      };
    else if (kind === 'resource') params.uri = upstreamName;
    else params.name = upstreamName;
    const key = call.session ? `${call.session.n}|${idKey(req.id)}` : undefined;
    if (key) this.runtime.inflight.set(key, t.name);
    // A client that goes away (or a deadline) cancels the call on the target too.
    let answered = false;
    const cancel = () => {
      if (answered || this.#stateless) return;
      const reason = call.ctx.signal.aborted ? 'the client went away' : 'the gateway gave up waiting';
      void this.connection(t, call.session, undefined, call)
        .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: req.id, reason } })
        .catch(() => {});
    };
    call.signal.addEventListener('abort', cancel, { once: true });
    try {
      const res = await this.#ask(t, call, { ...req, params }, t.timeoutMs);
      answered = true;
      return res;
    } catch (err) {
      if (err instanceof TargetError && err.timeout) cancel();
      answered = true;
      throw err;
    } finally {
      call.signal.removeEventListener('abort', cancel);
      if (key) this.runtime.inflight.delete(key);
    }
  }

  /** The target of a tool or prompt and its name there. */
  async #nameOwner(
    call: Call,
    kind: 'tool' | 'prompt',
    name: string,
    beforeLookup: () => Promise<void>,
  ): Promise<[Target, string] | undefined> {
    const live = this.#live(call.session);
    if (this.prefixed) {
      const i = name.indexOf(PREFIX_SEPARATOR);
      if (i <= 0) return undefined;
      const t = this.#byName.get(name.slice(0, i));
      return t && live.includes(t) ? [t, name.slice(i + 1)] : undefined;
    }
    if (live.length === 1) return [live[0] as Target, name];
    // Never: whoever listed it; look it up when this worker has not seen the list.
    const nonce = call.session?.n;
    const known = nonce ? this.runtime.owner(nonce, `${kind}:${name}`) : undefined;
    if (known) {
      const t = this.#byName.get(known);
      if (t) return [t, name];
    }
    await beforeLookup();
    const found = await this.#find(
      call,
      live,
      kind === 'tool' ? 'tools/list' : 'prompts/list',
      (x) => x.name === name,
    );
    return found ? [found, name] : undefined;
  }

  /** The target of a resource URI: who listed it, else who lists a template it fits. */
  async #resourceOwner(
    call: Call,
    uri: string,
    beforeLookup: () => Promise<void>,
  ): Promise<[Target, string] | undefined> {
    const live = this.#live(call.session);
    if (this.prefixed) {
      const i = uri.indexOf(URI_PREFIX_SEPARATOR);
      const t = i > 0 ? this.#byName.get(uri.slice(0, i)) : undefined;
      if (t && live.includes(t)) return [t, uri.slice(i + 1)];
      // else a URI without a target's prefix (one a client kept from before): looked up below
    }
    if (live.length === 1) return [live[0] as Target, uri];
    const nonce = call.session?.n;
    const known = nonce ? this.runtime.owner(nonce, `resource:${uri}`) : undefined;
    const kt = known ? this.#byName.get(known) : undefined;
    if (kt) return [kt, uri];
    await beforeLookup();
    const listed = await this.#find(call, live, 'resources/list', (x) => x.uri === uri);
    if (listed) return [listed, uri];
    const templated = await this.#find(call, live, 'resources/templates/list', (x) =>
      typeof x.uriTemplate === 'string' ? templateFits(x.uriTemplate, uri) : false,
    );
    return templated ? [templated, uri] : undefined;
  }

  /** The first target (in config order) whose list, all pages, has an item `match` accepts. */
  async #find(
    call: Call,
    live: Target[],
    method: ListMethod,
    match: (x: Record<string, unknown>) => boolean,
  ): Promise<Target | undefined> {
    const key = LISTS[method].key;
    const found = await Promise.all(
      live.map(async (t) => {
        let cursor: string | undefined;
        for (let page = 0; page < 20; page++) {
          const params: Record<string, unknown> = cursor ? { cursor } : {};
          const r = await this.#ask(
            t,
            { ...call, relay: () => {} },
            { jsonrpc: '2.0', id: `gw-find-${newSessionNonce()}`, method, params },
            this.#fanoutTimeout(t),
          ).catch(() => undefined);
          const list = r?.result?.[key];
          if (Array.isArray(list) && list.some((x) => match(x as Record<string, unknown>))) return true;
          cursor = typeof r?.result?.nextCursor === 'string' ? r.result.nextCursor : undefined;
          if (!cursor) return false;
        }
        return false;
      }),
    );
    const i = found.indexOf(true);
    return i === -1 ? undefined : live[i];
  }

  // ---------- messages that are not requests ----------

  /**
   * A notification or an answer from the client. Answers go to the target named in their id;
   * cancellations to the target that has the request; other notifications to every target.
   */
  async fromClient(call: Call, m: Notification | Response): Promise<void> {
    const live = this.#live(call.session);
    if (!('method' in m)) {
      const parsed = typeof m.id === 'string' ? splitClientId(m.id) : undefined;
      const t = parsed ? this.#byName.get(parsed[0]) : undefined;
      if (!t || !parsed) return;
      await this.connection(t, call.session, undefined, call).send({ ...m, id: parsed[1] });
      return;
    }
    let to = live;
    let msg: Notification = m;
    if (m.method === 'notifications/cancelled') {
      const rid = (m.params as { requestId?: Id } | undefined)?.requestId;
      const owner =
        call.session && rid !== undefined
          ? this.runtime.inflight.get(`${call.session.n}|${idKey(rid)}`)
          : undefined;
      const parsed = typeof rid === 'string' ? splitClientId(rid) : undefined;
      if (parsed && this.#byName.has(parsed[0])) {
        // Cancelling a request a target made of the client.
        to = live.filter((t) => t.name === parsed[0]);
        msg = { ...m, params: { ...m.params, requestId: parsed[1] } };
      } else if (owner) to = live.filter((t) => t.name === owner);
    }
    const results = await Promise.allSettled(
      to.map((t) => this.connection(t, call.session, undefined, call).send(msg)),
    );
    const failed = results.flatMap((r, i) =>
      r.status === 'rejected' ? [asTargetError(to[i]?.name ?? '?', r.reason)] : [],
    );
    this.#noteFailures(call, failed);
  }

  /** Everything the targets say outside requests, for the client's GET stream, until `signal`. */
  async listen(call: Call): Promise<void> {
    const live = this.#live(call.session);
    await Promise.allSettled(
      live.map(async (t) => {
        try {
          await this.connection(t, call.session, undefined, call).listen(
            this.#relayFrom(t, call.relay),
            call.signal,
          );
        } catch (err) {
          this.#noteFailures(call, [asTargetError(t.name, err)]);
        }
      }),
    );
  }

  /** Ends the session on every target; `call`: the client's DELETE, whose headers go with it. */
  async end(session: SessionState, call?: Pick<Call, 'ctx'>): Promise<void> {
    await Promise.allSettled(
      this.#live(session)
        .filter((t) => t.ir.transport.kind === 'streamable-http')
        .map((t) => this.connection(t, session, undefined, call).close()),
    );
    const home = remoteHome(session);
    if (home !== undefined) this.runtime.endAt(home, session.n);
    await this.runtime.endSession(session.n);
  }

  #noteFailures(call: Call, failed: TargetError[]): void {
    if (failed.length === 0) return;
    const info = call.ctx.ext.mcp;
    if (info) info.failed = [...new Set([...(info.failed ?? []), ...failed.map((f) => f.target)])];
    for (const f of failed) {
      mcpLog().warn(
        {
          target: f.target,
          route: call.ctx.route?.key,
          method: info?.method,
          failureMode: this.ir.failureMode,
        },
        f.message,
      );
    }
  }
}

function str(v: unknown, field: string): string {
  if (typeof v !== 'string' || v === '')
    throw new McpError(CODE.INVALID_PARAMS, `params.${field} must be a non-empty string`);
  return v;
}

function asTargetError(target: string, err: unknown): TargetError {
  if (err instanceof TargetError) return err;
  if (err instanceof McpError) throw err;
  return new TargetError(target, (err as Error)?.message ?? String(err));
}

function failure(failed: TargetError[]): TargetError {
  if (failed.length === 1) return failed[0] as TargetError;
  return new TargetError(failed.map((f) => f.target).join(', '), failed.map((f) => f.message).join('; '));
}

function errorAnswer(id: Id, err: McpError): Response {
  const error: Response['error'] = { code: err.code, message: err.message };
  if (err.data !== undefined) error.data = err.data;
  return { jsonrpc: '2.0', id, error };
}

/** `<target>:<original id as JSON>` back to its parts. */
function splitClientId(id: string): [string, Id] | undefined {
  const i = id.indexOf(':');
  if (i <= 0) return undefined;
  try {
    const v = JSON.parse(id.slice(i + 1)) as unknown;
    return typeof v === 'string' || typeof v === 'number' ? [id.slice(0, i), v] : undefined;
  } catch {
    return undefined;
  }
}

/** The gateway's cursor: each target with more to list and its own cursor, as base64url JSON. */
export function encodeCursor(next: Record<string, string>): string {
  return Buffer.from(JSON.stringify(next)).toString('base64url');
}

function decodeCursor(cursor: unknown, names: Set<string>): Map<string, string | null> {
  if (typeof cursor !== 'string') throw new McpError(CODE.INVALID_PARAMS, 'params.cursor must be a string');
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    v = undefined;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new McpError(CODE.INVALID_PARAMS, 'params.cursor is not a cursor this gateway gave out');
  const out = new Map<string, string | null>();
  for (const [k, c] of Object.entries(v)) if (names.has(k) && typeof c === 'string') out.set(k, c);
  return out;
}

/** Whether a URI fits an RFC 6570 template, literally around its expressions. */
export function templateFits(template: string, uri: string): boolean {
  const parts = template.split(/\{[^}]*\}/);
  const re = new RegExp(`^${parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.+')}$`);
  return re.test(uri);
}

/** A processor's refusal is `denied`; a processor that failed closed is `failed`. */
function guardOutcome(res: Response): 'failed' | 'denied' {
  return res.error?.code === CODE.UPSTREAM ? 'failed' : 'denied';
}

/** The trace's record of one MCP request: what was asked, of which target, and how it ended. */
export function traceRequest(ctx: McpRequest, start: number | null): void {
  const info = ctx.ext.mcp;
  if (!ctx.obs || !info) return;
  const item = info.tool ?? info.prompt ?? info.resource;
  ctx.obs.event(
    ctx as never,
    'mcp',
    {
      method: info.method,
      ...(info.target ? { target: info.target } : {}),
      ...(info.tool ? { tool: info.tool.name } : {}),
      ...(info.prompt ? { prompt: info.prompt.name } : {}),
      ...(info.resource ? { resource: info.resource.uri } : {}),
      ...(item && !info.target ? { target: item.target } : {}),
      outcome: info.outcome ?? 'ok',
      ...(info.failed?.length ? { failedTargets: info.failed } : {}),
    },
    start,
    info.outcome === 'ok' || info.outcome === undefined ? 'info' : 'warn',
  );
}

/** The client's headers for target `t`: its backendAuth, when it has one, replaces their Authorization. */
function clientHeaders(t: Target, h: ForwardedHeaders): Readonly<Headers> {
  return t.ownAuth ? h.withoutAuthorization() : h.all;
}

/**
 * backendAuth passthrough on a streamable-HTTP target: the client's validated JWT (jwtAuth,
 * mcpAuthentication) in the Authorization header (Bearer) or the header its location names; none
 * when the request carries none.
 */
function passthroughHeader(
  t: McpTargetIR,
  call: Pick<Call, 'ctx'> | undefined,
): Record<string, string> | undefined {
  const auth = t.policies.backendAuth;
  if (!auth || !('passthrough' in auth)) return undefined;
  const token = call?.ctx.ext.jwtToken;
  if (token === undefined) return undefined;
  const header = credentialHeader(auth.passthrough.location ?? AUTHORIZATION, token.reveal());
  return header && { [header[0]]: header[1] };
}
