// The data plane of one worker: owns the listening sockets, the current routing table and the
// upstream pools; serves each request on the table it arrived under; swaps tables atomically.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { type CelProgram, celToJson, celTrue, compileCel } from '../cel/cel.ts';
import type { ProxyIR } from '../config/ir.ts';
import { errorBody, GwError } from '../errors.ts';
import type { ProxyMetrics } from '../observability/metrics.ts';
import { discard } from '../pipeline/body.ts';
import { RequestContext } from '../pipeline/context.ts';
import { pump } from '../pipeline/pump.ts';
import { compileRules, decide, type Rule } from '../policies/authorization/decision.ts';
import type { CompiledMatch } from '../routing/match.ts';
import { type CompiledRoute, compileTable, type RoutingTable, selectListener } from '../routing/table.ts';
import type { TraceEvent } from '../trace/events.ts';
import { TraceRecorder } from '../trace/recorder.ts';
import { redactPolicies } from '../trace/redact.ts';
import { PoolRegistry } from '../upstream/pools.ts';
import { BindServer } from './bind-server.ts';

export interface DataPlaneOptions {
  /** Where the events of a traced request go: (subscription id, event), then (id, null) at its end. */
  traceSink?: ((id: number, event: TraceEvent | null) => void) | undefined;
  log: Logger;
  accessLog: Logger;
  metrics?: ProxyMetrics | undefined;
  /** Several workers share each port through SO_REUSEPORT. */
  reusePort?: boolean;
}

interface TraceArm {
  id: number;
  /** Shared by every worker: the first to flip it from 0 to 1 traces its request. */
  flag: Int32Array;
  filter: CelProgram | undefined;
}

interface AccessLogSpec {
  filter: CelProgram | undefined;
  add: [string, CelProgram][];
  remove: Set<string>;
}

export class DataPlane {
  readonly #opts: DataPlaneOptions;
  readonly #pools = new PoolRegistry();
  readonly #servers = new Map<string, BindServer>();
  readonly #inflight = new Set<RequestContext>();
  #table: RoutingTable | undefined;
  #accessLog: AccessLogSpec | undefined;
  #draining = false;
  #arms: TraceArm[] = [];
  #shared = new Map<string, SharedArrayBuffer>();
  #networkRules: Rule[] | undefined;
  #sensitive: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization']);
  #applying: Promise<unknown> = Promise.resolve();

  constructor(opts: DataPlaneOptions) {
    this.#opts = opts;
  }

  get version(): string | undefined {
    return this.#table?.version;
  }

  get table(): RoutingTable | undefined {
    return this.#table;
  }

  get inflight(): number {
    return this.#inflight.size;
  }

  /** Bound port of every bind, by bind key. */
  ports(): Record<string, number> {
    return Object.fromEntries([...this.#servers].map(([k, s]) => [k, s.port]));
  }

  /**
   * Compiles `ir` and makes it current. Fails without touching the running config when compiling or
   * binding a new port fails. `ports` overrides configured ports (port 0 resolved by another worker).
   */
  apply(
    ir: ProxyIR,
    ports: Record<string, number> = {},
    shared: Record<string, SharedArrayBuffer> = {},
  ): Promise<Record<string, number>> {
    const run = this.#applying.then(() => this.#apply(ir, ports, shared));
    this.#applying = run.catch(() => {});
    return run;
  }

  async #apply(
    ir: ProxyIR,
    ports: Record<string, number>,
    given: Record<string, SharedArrayBuffer>,
  ): Promise<Record<string, number>> {
    if (this.#draining) throw new Error('shutting down');
    // State shared across workers (rate limit buckets): buffers the main thread allocated win; a
    // single-threaded plane keeps its own, so counters survive a reload of an unchanged limit.
    const used = new Map<string, SharedArrayBuffer>();
    const memory = (key: string, bytes: number) => {
      const m = given[key] ?? this.#shared.get(key) ?? new SharedArrayBuffer(bytes);
      used.set(key, m);
      return m;
    };
    const table = compileTable(ir, this.#pools, memory);
    const accessLog = compileAccessLog(ir);
    const created: BindServer[] = [];
    try {
      for (const [key, bind] of table.binds) {
        const existing = this.#servers.get(key);
        if (existing && existing.scheme === (bind.ir.protocol === 'HTTPS' ? 'https' : 'http')) continue;
        const server = new BindServer(bind, {
          idleTimeoutMs: ir.global.http1IdleTimeoutMs,
          onRequest: (bs, req, res) => this.#handle(bs, req, res),
          onClientError: (err) => this.#opts.log.debug({ err: err.message }, 'client connection error'),
          admit: (address, port) => this.#admit(address, port),
        });
        await server.listen(bind.ir.address, ports[key] ?? bind.ir.port, this.#opts.reusePort ?? false);
        created.push(server);
      }
    } catch (err) {
      for (const s of created) s.stopAccepting();
      this.#pools.retainOnly(this.#table?.pools ?? new Set());
      throw new Error(`cannot listen: ${(err as Error).message}`, { cause: err });
    }
    // Commit: from here on nothing fails.
    for (const s of created) {
      const old = this.#servers.get(s.key);
      if (old) old.stopAccepting();
      this.#servers.set(s.key, s);
    }
    for (const [key, server] of this.#servers) {
      const bind = table.binds.get(key);
      if (bind) server.current = bind;
      else {
        server.stopAccepting();
        this.#servers.delete(key);
      }
    }
    this.#table = table;
    this.#networkRules = ir.frontend.networkAuthorization
      ? compileRules(ir.frontend.networkAuthorization)
      : undefined;
    this.#shared = used;
    this.#accessLog = accessLog;
    this.#sensitive = new Set(ir.global.sensitiveHeaders);
    this.#pools.retainOnly(table.pools);
    this.#opts.metrics?.configVersion.inc();
    return this.ports();
  }

  #handle(
    bs: BindServer,
    req: IncomingMessage | Http2ServerRequest,
    res: ServerResponse | Http2ServerResponse,
  ): void {
    const bind = bs.current;
    const ctx = new RequestContext(req, res, bs.scheme);
    this.#inflight.add(ctx);
    res.once('close', () => this.#finish(ctx));
    if ((this.#draining || bs.retired) && 'shouldKeepAlive' in res) res.shouldKeepAlive = false;

    if (this.#arms.length > 0) this.#claimTrace(ctx);

    const listener = selectListener(bind, ctx.host);
    if (!listener) {
      ctx.trace?.emit('routeSelection', {
        selectedRoute: null,
        evaluatedRoutes: [],
        reason: 'no listener for host',
      });
      this.#fail(ctx, new GwError('GW_ERR_NO_LISTENER'));
      return;
    }
    const m = listener.router.select(ctx.host, ctx);
    if (ctx.trace)
      traceRouteSelection(ctx, ctx.trace, listener.router.candidates(ctx.host), m?.route, this.#sensitive);
    if (!m) {
      this.#fail(ctx, new GwError('GW_ERR_NO_ROUTE'));
      return;
    }
    ctx.route = m.route.info;
    ctx.matchedPrefix = m.prefix;
    let done: Promise<void>;
    try {
      done = ctx.trace ? m.route.tracedHandler(ctx) : m.route.handler(ctx);
    } catch (err) {
      // A layer that is not async may throw before returning its promise.
      this.#fail(ctx, err);
      return;
    }
    done.then(
      () => this.#respond(ctx),
      (err) => this.#fail(ctx, err),
    );
  }

  #respond(ctx: RequestContext): void {
    const { res } = ctx;
    const r = ctx.response;
    if (!r) {
      this.#fail(ctx, new GwError('GW_ERR_INTERNAL', 'no response was produced'));
      return;
    }
    if (res.destroyed || res.headersSent) {
      discard(r.body);
      return;
    }
    try {
      (res as ServerResponse).writeHead(r.status, r.headers as Record<string, string | string[]>);
    } catch (err) {
      discard(r.body);
      this.#fail(
        ctx,
        new GwError('GW_ERR_UPSTREAM_PROTOCOL', `invalid response header: ${(err as Error).message}`),
      );
      return;
    }
    let body = r.body;
    if (ctx.trace) {
      ctx.trace.responseSnapshot('final response', ctx);
      if (body && ctx.method !== 'HEAD') body = ctx.trace.tapBody('response', body);
    }
    if (body === null || ctx.method === 'HEAD') {
      if (body && !Buffer.isBuffer(body)) body.resume();
      res.end();
    } else if (Buffer.isBuffer(body)) {
      res.end(body);
    } else {
      pump(body, res as unknown as Writable, (err) => {
        if (!ctx.error) {
          ctx.error =
            err instanceof GwError
              ? err
              : new GwError('GW_ERR_UPSTREAM_RESET', `response stream failed: ${err.message}`);
        }
      });
    }
  }

  #fail(ctx: RequestContext, err: unknown): void {
    let e: GwError;
    if (err instanceof GwError) e = err;
    else if (ctx.signal.aborted && ctx.signal.reason instanceof GwError) e = ctx.signal.reason;
    else {
      e = new GwError('GW_ERR_INTERNAL', undefined, { cause: err });
      this.#opts.log.error({ err, route: ctx.route?.key }, 'request failed');
    }
    ctx.error = e;
    const { res } = ctx;
    discard(ctx.response?.body);
    if (res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    const body = Buffer.from(errorBody(e));
    const headers: Record<string, string> = {
      ...e.headers,
      'content-type': 'text/plain; charset=utf-8',
      'content-length': String(body.length),
    };
    if (ctx.trace) {
      ctx.trace.emit('error', { code: e.code, status: e.status, detail: e.detail }, null, 'warn');
      ctx.response = { status: e.status, headers, body };
      ctx.trace.responseSnapshot('final response', ctx);
      ctx.trace.tapBody('response', body);
    }
    (res as ServerResponse).writeHead(e.status, headers);
    res.end(body);
  }

  #finish(ctx: RequestContext): void {
    this.#inflight.delete(ctx);
    ctx.trace?.finish();
    const { res } = ctx;
    if (!res.writableFinished) {
      // The client went away (or the response was cut): stop the upstream side too.
      ctx.abort(new GwError('GW_ERR_CLIENT_CLOSED'));
      if (!ctx.error) ctx.error = new GwError('GW_ERR_CLIENT_CLOSED');
    }
    const status = res.headersSent ? res.statusCode : (ctx.error?.status ?? 499);
    const seconds = (performance.now() - ctx.startTime) / 1000;
    const route = ctx.route;
    const m = this.#opts.metrics;
    if (m) m.record(route, ctx.backendName, status, seconds);
    const spec = this.#accessLog;
    const log = this.#opts.accessLog;
    if (!spec || !log.isLevelEnabled('info')) return;
    const cel = spec.filter || spec.add.length > 0 ? ctx.celContext() : undefined;
    if (cel && ctx.response === undefined) cel.response = { code: status, headers: {} };
    if (spec.filter && cel && !celTrue(spec.filter, cel)) return;
    const rec: Record<string, unknown> = {
      gateway: route?.gateway,
      listener: route?.listener,
      route: route?.key,
      endpoint: ctx.endpoint,
      'src.addr': `${ctx.source.address}:${ctx.source.port}`,
      'http.method': ctx.method,
      'http.host': ctx.authority,
      'http.path': ctx.originalUrl,
      'http.version': `HTTP/${ctx.httpVersion}`,
      'http.status': status,
      duration: `${Math.round(seconds * 1e4) / 10}ms`,
    };
    if (ctx.error) rec.error = ctx.error.detail;
    for (const k of spec.remove) delete rec[k];
    if (cel) {
      for (const [k, p] of spec.add) {
        const v = p.eval(cel);
        if (v !== undefined) rec[k] = celToJson(v);
      }
    }
    log.info(rec);
  }

  #admit(address: string, port: number): boolean {
    const rules = this.#networkRules;
    if (!rules) return true;
    const a = address.startsWith('::ffff:') ? address.slice(7) : address;
    const d = decide(rules, { source: { address: a, port } });
    if (!d.allowed)
      this.#opts.log.debug({ address: a, reason: d.reason }, 'connection refused by networkAuthorization');
    return d.allowed;
  }

  /** Arms a trace of the next request (matching `expression`, when given) that this worker serves. */
  armTrace(id: number, flag: SharedArrayBuffer, expression?: string): void {
    const filter = expression ? compileCel(expression) : undefined;
    this.#arms = [...this.#arms, { id, flag: new Int32Array(flag), filter }];
  }

  disarmTrace(id: number): void {
    this.#arms = this.#arms.filter((a) => a.id !== id);
  }

  #claimTrace(ctx: RequestContext): void {
    const sink = this.#opts.traceSink;
    for (const arm of this.#arms) {
      if (arm.filter && !celTrue(arm.filter, ctx.celContext())) continue;
      this.disarmTrace(arm.id);
      if (Atomics.compareExchange(arm.flag, 0, 0, 1) !== 0 || !sink) continue;
      const tr = new TraceRecorder((e) => sink(arm.id, e), this.#sensitive, ctx.startTime);
      ctx.trace = tr;
      tr.emit('requestStarted', {}, 0);
      tr.requestSnapshot('initial request', ctx);
      return;
    }
  }

  /** In-flight requests, oldest first: what /debug/tasks shows. */
  tasks(): {
    method: string;
    path: string;
    route: string | undefined;
    backend: string | undefined;
    ageMs: number;
  }[] {
    const now = performance.now();
    return [...this.#inflight].map((c) => ({
      method: c.method,
      path: c.path,
      route: c.route?.key,
      backend: c.backendName,
      ageMs: Math.round(now - c.startTime),
    }));
  }

  /** Stops accepting, lets in-flight requests finish until the deadline, then cuts the rest. */
  async drain(deadlineMs: number): Promise<{ cut: number }> {
    this.#draining = true;
    for (const s of this.#servers.values()) s.stopAccepting();
    const until = Date.now() + deadlineMs;
    while (this.#inflight.size > 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 25));
      for (const s of this.#servers.values()) s.closeIdle();
    }
    const cut = this.#inflight.size;
    for (const s of this.#servers.values()) s.destroyAll();
    await this.#pools.closeAll();
    return { cut };
  }
}

function compileAccessLog(ir: ProxyIR): AccessLogSpec | undefined {
  const a = ir.frontend.accessLog;
  return {
    filter: a?.filter ? compileCel(a.filter) : undefined,
    add: Object.entries(a?.add ?? {}).map(([k, v]) => [k, compileCel(v)] as [string, CelProgram]),
    remove: new Set(a?.remove ?? []),
  };
}

function traceRouteSelection(
  ctx: RequestContext,
  tr: TraceRecorder,
  candidates: CompiledMatch<CompiledRoute>[],
  selected: CompiledRoute | undefined,
  sensitive: ReadonlySet<string>,
): void {
  const evaluatedRoutes = candidates.map((c) => ({
    route: c.route.info.key,
    matched: c.test(ctx),
    selected: c.route === selected,
  }));
  tr.emit('routeSelection', {
    selectedRoute: selected ? { ...selected.info, definedAt: selected.ir.path } : null,
    evaluatedRoutes,
  });
  if (!selected) return;
  const byPhase: Record<'gateway' | 'route', Record<string, unknown>> = { gateway: {}, route: {} };
  for (const [name, config] of Object.entries(selected.ir.policies)) {
    byPhase[selected.ir.policySources[name] ?? 'route'][name] = config;
  }
  byPhase.gateway = redactPolicies(byPhase.gateway, sensitive);
  byPhase.route = redactPolicies(byPhase.route, sensitive);
  tr.emit('policySelection', { phase: 'gateway', effectivePolicy: byPhase.gateway });
  tr.emit('policySelection', { phase: 'route', effectivePolicy: byPhase.route });
}
