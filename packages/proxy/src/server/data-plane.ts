// The data plane of one worker: owns the listening sockets, the current routing table and the
// upstream pools; serves each request on the table it arrived under; swaps tables atomically.

import { randomBytes } from 'node:crypto';
import {
  type IncomingMessage,
  type OutgoingHttpHeaders,
  ServerResponse,
  validateHeaderName,
  validateHeaderValue,
} from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { TraceEvent } from '@gw/api';
import { hostPort } from '@gw/api/runtime';
import type { Logger } from 'pino';
import { compileCel, useCelFunctions } from '../cel/cel.ts';
import type { AccessLogOtlpIR, BindIR, CollectorConnectionIR, ProxyIR, TracingIR } from '../config/ir.ts';
import { errorFormatFor, errorResponse, GwError } from '../errors.ts';
import { Lazy } from '../lazy.ts';
import { setMcpLogger } from '../mcp/log.ts';
import { accessLogObserver, RecordObserver, RecordShape } from '../observability/access-log.ts';
import type { RecordLog } from '../observability/logger.ts';
import type { ProxyMetrics } from '../observability/metrics.ts';
import type { SpanExport } from '../observability/otel-export.ts';
import type { LogExport } from '../observability/otel-logs.ts';
import { tcpConnectionObserver } from '../observability/tcp-log.ts';
import { TracingSource } from '../observability/tracing.ts';
import { discard } from '../pipeline/body.ts';
import { RequestContext } from '../pipeline/context.ts';
import { answerContinueOnRead } from '../pipeline/expect-continue.ts';
import { setForwardedHeaders, TrustedProxies } from '../pipeline/forwarded.ts';
import { DEFAULT_PATH_NORMALIZATION, type PathNormalization } from '../pipeline/normalize-path.ts';
import {
  Observation,
  type ObserverSource,
  observeBody,
  type RequestObserver,
  type RouteSelection,
  wantsDetail,
} from '../pipeline/observer.ts';
import { pump } from '../pipeline/pump.ts';
import { resolveRequestTarget } from '../pipeline/request-target.ts';
import { compileRules, decide, type Rule } from '../policies/authorization/decision.ts';
import { serviceHeadersOf } from '../policies/service-call.ts';
import type { CompiledMatch } from '../routing/match.ts';
import {
  type CompiledListener,
  type CompiledRoute,
  compileTable,
  type RoutingTable,
  selectListener,
} from '../routing/table.ts';
import { TraceSource } from '../trace/source.ts';
import { inClientCase } from '../upstream/call.ts';
import { endpointHealthOf, type HealthSnapshot } from '../upstream/health.ts';
import { PoolRegistry } from '../upstream/pools.ts';
import { readUpstream, type UpgradeState } from '../upstream/upgrade.ts';
import { BindServer, type BindSettings, leftHttp } from './bind-server.ts';
import { serverNameOf, unverifiedClient } from './client-certs.ts';
import { TunnelSocket, tunnelTarget } from './connect-tunnel.ts';
import type { ConnectionCheck } from './connection-check.ts';
import { ConnectionLimit, connectionMemoryKey, requestMemoryKey } from './connection-limit.ts';
import type { Peer, ProxyProtocolIR } from './proxy-protocol.ts';
import { watchRequestBody } from './request-body-idle.ts';
import { Roster, type RosterEntry } from './roster.ts';
import { splice } from './splice.ts';
import { TcpBindServer, type TcpConnectionSummary, tcpSchemeOf } from './tcp-bind-server.ts';

/** The OpenTelemetry SDK and exporters: loaded by a worker whose config has tracing, when it first does. */
const otel = new Lazy(() => import('../observability/otel-export.ts'));

/** The OpenTelemetry logs SDK and exporters: loaded by a worker whose config has accessLog.otlp. */
const otelLogs = new Lazy(() => import('../observability/otel-logs.ts'));

/** A worker's span exporter, kept across reloads while its collector settings stay the same. */
interface Spans {
  key: string;
  export: Lazy<SpanExport>;
}

/** A worker's access log exporter (accessLog.otlp), kept across reloads as Spans is. */
interface Logs {
  key: string;
  export: Lazy<LogExport>;
}

export interface DataPlaneOptions {
  /** Where the events of a traced request go: (subscription id, event), then (id, null) at its end. */
  traceSink?: ((id: number, event: TraceEvent | null) => void) | undefined;
  log: Logger;
  /** The access log (LogHub.records('request')); a pino Logger serves too. */
  accessLog: RecordLog;
  metrics?: ProxyMetrics | undefined;
  /** Several workers share each port through SO_REUSEPORT. */
  reusePort?: boolean;
  /** This worker's index, and how many workers the replica runs (limits per replica are split). */
  worker?: number;
  workers?: number;
}

/**
 * Who observes requests. `always` observers see every request; those that only need its end (access
 * log, metrics) cost no Observation. Sources (the debug trace) attach an observer to the requests
 * they want.
 */
interface Observers {
  always: RequestObserver[];
  /** The always-observers that need more than the end: every request gets an Observation. */
  detailed: RequestObserver[];
  endOnly: RequestObserver[];
}

export class DataPlane {
  readonly #opts: DataPlaneOptions;
  readonly #pools: PoolRegistry;
  /** Each bind's connection count, by bind key; kept across reloads (see ConnectionLimit). */
  #connections = new Map<string, ConnectionLimit>();
  readonly #servers = new Map<string, BindServer | TcpBindServer>();
  /** Where the connections of TCP and TLS listeners are logged and counted when they end. */
  #tcpEnd: (s: TcpConnectionSummary) => void = () => {};
  readonly #inflight = new Roster<RequestContext>();
  #served = 0;
  #table: RoutingTable | undefined;
  #draining = false;
  readonly #trace: TraceSource;
  /** OpenTelemetry: set while the config has tracing; no request pays anything otherwise. */
  #tracing: TracingSource | undefined;
  #spans: Spans | undefined;
  #logs: Logs | undefined;
  #sources: ObserverSource[];
  #observers: Observers = { always: [], detailed: [], endOnly: [] };
  #shared = new Map<string, SharedArrayBuffer>();
  #networkRules: Rule[] | undefined;
  /** frontendPolicies.proxyProtocol of the config in force: what new connections start with. */
  #proxyProtocol: ProxyProtocolIR | undefined;
  /** frontendPolicies.connect of the config in force: whether CONNECT requests are routed (else 405). */
  #connect: ProxyIR['frontend']['connect'];
  #connectionCheck: { key: string; check: ConnectionCheck } | undefined;
  /** Frontend HTTP settings every request starts with: path normalisation, trusted proxies. */
  #requests: { paths: PathNormalization; trusted: TrustedProxies } = {
    paths: DEFAULT_PATH_NORMALIZATION,
    trusted: new TrustedProxies([]),
  };
  #applying: Promise<unknown> = Promise.resolve();

  constructor(opts: DataPlaneOptions) {
    this.#opts = opts;
    setMcpLogger(opts.log);
    // Worker 0 (or the one worker) probes the endpoints with active health checks for every worker.
    this.#pools = new PoolRegistry(opts.workers ?? 1, (opts.worker ?? 0) === 0);
    opts.metrics?.watchEndpoints(() => endpointHealthOf(this.#pools));
    opts.metrics?.watchBinds(() => [...this.#servers.values()]);
    this.#trace = new TraceSource(opts.traceSink);
    this.#sources = [this.#trace];
  }

  #setObservers(always: RequestObserver[]): void {
    const detailed = always.filter(wantsDetail);
    this.#observers = { always, detailed, endOnly: always.filter((o) => !wantsDetail(o) && o.end) };
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

  /** Requests taken in since start-up (HTTP; TCP connections are not counted). */
  get served(): number {
    return this.#served;
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
    // the config's CEL functions, for its expressions (and those compiled while it runs: trace filters)
    const restoreCel = useCelFunctions(ir.global.customFunctions);
    try {
      return await this.#compileAndSwap(ir, ports, given);
    } catch (err) {
      restoreCel();
      throw err;
    }
  }

  async #compileAndSwap(
    ir: ProxyIR,
    ports: Record<string, number>,
    given: Record<string, SharedArrayBuffer>,
  ): Promise<Record<string, number>> {
    // State shared across workers (rate limit buckets): buffers the main thread allocated win; a
    // single-threaded plane keeps its own, so counters survive a reload of an unchanged limit.
    const used = new Map<string, SharedArrayBuffer>();
    const memory = (key: string, bytes: number) => {
      const m = given[key] ?? this.#shared.get(key) ?? new SharedArrayBuffer(bytes);
      used.set(key, m);
      return m;
    };
    const table = compileTable(ir, this.#pools, memory);
    const requests = {
      paths: ir.frontend.paths ?? DEFAULT_PATH_NORMALIZATION,
      trusted: new TrustedProxies(ir.frontend.trustedProxies ?? []),
    };
    const accessLog = accessLogObserver(
      this.#opts.accessLog,
      ir.frontend,
      ir.global.credentialQueryParams,
      ir.global.maxBufferSize,
    );
    const logs = await this.#logsFor(ir.frontend.accessLogOtlp);
    const otlpLog =
      logs && ir.frontend.accessLogOtlp
        ? new RecordObserver(
            {
              enabled: () => logs.export.value !== undefined,
              write: (rec) => logs.export.value?.emit(rec, Date.now()),
            },
            new RecordShape(ir.frontend.accessLogOtlp),
            ir.global.credentialQueryParams,
            ir.global.maxBufferSize,
          )
        : undefined;
    const connectionCheck = await this.#connectionCheckFor(ir.frontend.networkExtAuthz);
    const spans = await this.#spansFor(ir.frontend.tracing, ir.global.customFunctions);
    const tracing =
      spans && ir.frontend.tracing
        ? new TracingSource(
            ir.frontend.tracing,
            spans.export,
            ir.global.credentialQueryParams,
            ir.global.maxBufferSize,
          )
        : undefined;
    const connections = new Map<string, ConnectionLimit>();
    // One ConnectionLimit per buffer for the life of this worker: a new one takes back its slot.
    const counter = (key: string) => {
      const m = memory(key, ConnectionLimit.memoryBytes);
      const known = connections.get(key) ?? this.#connections.get(key);
      const c = known?.memory === m ? known : new ConnectionLimit(m, this.#opts.worker ?? 0);
      connections.set(key, c);
      return c;
    };
    const settings = (key: string): BindSettings => ({
      idleTimeoutMs: ir.global.http1IdleTimeoutMs,
      limits: ir.global.downstream,
      connections: counter(connectionMemoryKey(key)),
      requests: counter(requestMemoryKey(key)),
      counted: this.#opts.metrics?.connectionCounts(key),
    });
    // What HTTP and TCP binds share: who may connect, and what gets logged when one cannot.
    const common = {
      admit: (address: string, port: number) => this.#admit(address, port),
      proxyProtocol: () => this.#proxyProtocol,
      connectionCheck: () => this.#connectionCheck?.check,
      onProxyRefused: (reason: string, socket: Socket) =>
        this.#opts.log.debug(
          { address: socket.remoteAddress, reason },
          'connection closed for its PROXY header (frontendPolicies.proxyProtocol)',
        ),
      onClientError: (err: Error) => this.#opts.log.debug({ err: err.message }, 'client connection error'),
      onConnectionLimit: (bs: { key: string }, refused: number, limit: number) =>
        this.#opts.log.warn(
          { bind: bs.key, limit, refused },
          'connection limit reached: new connections to this bind are closed (frontendPolicies.tcp.maxConnections)',
        ),
      onRequestLimit: (bs: { key: string }, refused: number, limit: number) =>
        this.#opts.log.warn(
          { bind: bs.key, limit, refused },
          'request limit reached: new requests to this bind are answered 503 (frontendPolicies.http.maxConcurrentRequests)',
        ),
    };
    const created: (BindServer | TcpBindServer)[] = [];
    // Binds whose port this plane already holds with another protocol (HTTP to HTTPS, to TCP...).
    // Without SO_REUSEPORT (one worker) the new socket cannot open beside the old one: these go last,
    // once every other bind opened, and the old one stops accepting just before (its connections
    // finish as they would at any reload).
    const replacing: { server: BindServer | TcpBindServer; old: BindServer | TcpBindServer; ir: BindIR }[] =
      [];
    try {
      for (const [key, bind] of table.binds) {
        const existing = this.#servers.get(key);
        const tcp = tcpSchemeOf(bind.ir);
        if (existing && existing.scheme === (tcp ?? (bind.ir.protocol === 'HTTPS' ? 'https' : 'http')))
          continue;
        const server: BindServer | TcpBindServer = tcp
          ? new TcpBindServer(bind, {
              ...settings(key),
              ...common,
              onEnd: (s) => this.#tcpEnd(s),
            })
          : new BindServer(bind, {
              ...settings(key),
              ...common,
              onRequest: (bs, req, res) => this.#handle(bs, req, res),
              onUpgrade: (bs, req, socket, head) => this.#upgrade(bs, req, socket, head),
            });
        // the old server on this port: this bind's own, or a bind this config drops (its address changed)
        const port = ports[key] ?? bind.ir.port;
        const old =
          existing ??
          (port > 0
            ? [...this.#servers.values()].find((o) => o.port === port && !table.binds.has(o.key))
            : undefined);
        if (old && !this.#opts.reusePort && !bind.ir.internal) {
          replacing.push({ server, old, ir: bind.ir });
          continue;
        }
        await this.#open(server, bind.ir, ports[key]);
        created.push(server);
      }
      for (const r of replacing) {
        r.old.stopAccepting();
        await this.#open(r.server, r.ir, ports[r.server.key] ?? r.old.port);
        created.push(r.server);
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
      if (bind) {
        server.current = bind;
        server.configure(settings(key));
      } else {
        server.stopAccepting();
        this.#servers.delete(key);
      }
    }
    this.#table = table;
    this.#networkRules = ir.frontend.networkAuthorization
      ? compileRules(ir.frontend.networkAuthorization)
      : undefined;
    this.#proxyProtocol = ir.frontend.proxyProtocol;
    this.#connect = ir.frontend.connect;
    this.#connectionCheck = connectionCheck;
    this.#requests = requests;
    this.#shared = used;
    this.#connections = connections;
    this.#setObservers([
      ...(this.#opts.metrics ? [this.#opts.metrics] : []),
      accessLog,
      ...(otlpLog ? [otlpLog] : []),
    ]);
    this.#tcpEnd = tcpConnectionObserver(this.#opts.accessLog, ir.frontend, this.#opts.metrics);
    this.#opts.metrics?.configure(ir.global.metrics, ir.global.customFunctions);
    this.#tracing = tracing;
    this.#sources = tracing ? [this.#trace, tracing] : [this.#trace];
    if (this.#logs !== logs) {
      // records of requests in flight under the old config still go out through it
      const old = this.#logs?.export.value;
      if (old) setTimeout(() => void old.shutdown().catch(() => {}), 10_000).unref();
      this.#logs = logs;
    }
    if (this.#spans !== spans) {
      // requests still in flight under the old config end their spans there first
      const old = this.#spans?.export.value;
      if (old) setTimeout(() => void old.shutdown().catch(() => {}), 10_000).unref();
      this.#spans = spans;
    }
    this.#trace.sensitive = new Set(ir.global.sensitiveHeaders);
    this.#trace.credentialParams = new Set(ir.global.credentialQueryParams);
    this.#pools.retainOnly(table.pools);
    this.#opts.metrics?.configVersion.inc();
    return this.ports();
  }

  /**
   * A request that asks to switch protocols (WebSocket): it runs through its route like any other,
   * answered on a response object of its own over the detached connection. A 101 from the backend
   * joins the two connections; any other answer is written and the connection closed.
   */
  #upgrade(bs: BindServer, req: IncomingMessage, socket: Socket, head: Buffer): void {
    leftHttp.add(socket);
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    // The response's 'close' (which ends the request's life: access log, metrics) follows the socket's.
    res.assignSocket(socket);
    socket.on('error', () => socket.destroy());
    const connect = req.method === 'CONNECT';
    const state: UpgradeState = connect
      ? { protocol: '', socket, head, connect }
      : { protocol: req.headers.upgrade ?? '', socket, head };
    // A tunnel's 200 has neither length nor chunks, nor a Connection header: what follows it is the
    // tunnel's bytes (RFC 9110 §9.3.6).
    if (connect) {
      res.useChunkedEncodingByDefault = false;
      res.removeHeader('connection');
    }
    res.once('finish', () => {
      const up = state.upstream;
      if (state.handover && joinsTunnel(res.statusCode)) {
        // the request ends here (no byte counts: the connection lives on in the bind that takes it)
        res.detachSocket(socket);
        state.handover();
        res.emit('close');
        return;
      }
      if (up && (res.statusCode === 101 || (connect && joinsTunnel(res.statusCode)))) {
        state.spliced = { read: socket.bytesRead, written: socket.bytesWritten };
        if (up.head.length > 0) socket.write(up.head);
        if (head.length > 0) up.socket.write(head);
        splice(socket, up.socket, bs.idleTimeoutMs, undefined, state.relay);
        readUpstream(state);
      } else {
        up?.socket.destroy();
        socket.end();
        socket.once('finish', () => socket.destroy());
      }
    });
    // The client left before the answer was written: a backend connection already upgraded goes too.
    res.once('close', () => {
      if (!state.spliced) state.upstream?.socket.destroy();
    });
    this.#handle(bs, req, res, state);
  }

  #handle(
    bs: BindServer,
    req: IncomingMessage | Http2ServerRequest,
    res: ServerResponse | Http2ServerResponse,
    upgrade?: UpgradeState,
  ): void {
    const bind = bs.current;
    const peer = bs.peer(req);
    const ctx = new RequestContext(req, res, bs.scheme, peer);
    this.#served++;
    const listed = this.#inflight.add(ctx);
    let unwatchBody: (() => void) | undefined;
    /** The request's place under frontendPolicies.http.maxConcurrentRequests, until its response is sent. */
    let place: ConnectionLimit | undefined;
    res.once('close', () => {
      place?.close();
      place = undefined;
      unwatchBody?.();
      // An upgrade's reader (a realtime session's usage) has read all the session first.
      const settling = ctx.ext.upgrade?.reader?.settle();
      if (settling) void settling.then(() => this.#finish(ctx, listed));
      else this.#finish(ctx, listed);
    });
    if (ctx.method === 'CONNECT' && upgrade === undefined && 'stream' in req) {
      upgrade = extendedConnect(ctx, req, bs.idleTimeoutMs);
      const state = upgrade;
      // The client left before the backend's answer was joined: a backend connection goes too.
      res.once('close', () => state.spliced || state.upstream?.socket.destroy());
    }
    if (upgrade !== undefined) {
      ctx.ext.upgrade = upgrade;
      // Whatever follows the head belongs to the new protocol, never an HTTP body.
      ctx.body = null;
    }
    if ((this.#draining || bs.retired) && 'shouldKeepAlive' in res) res.shouldKeepAlive = false;
    if (ctx.body !== null) {
      if ('stream' in req) req.once('close', () => drainUnreadStream(req));
      else {
        // the body idle timeout (or, when it is off, a minute) bounds what is still owed
        const grace = this.#table?.ir.global.downstream.requestBodyIdleTimeoutMs || 60_000;
        res.once('finish', () => discardUnreadBody(req, grace));
      }
    }
    // Before anyone looks at the request: routes, policies, observers and the upstream see one path.
    const { paths, trusted } = this.#requests;
    const maxHeaders = bs.http1MaxHeaders;
    const refused =
      maxHeaders > 0 && 'rawHeaders' in req && !('stream' in req) && req.rawHeaders.length > 2 * maxHeaders
        ? new GwError(
            'GW_ERR_TOO_MANY_HEADERS',
            `more than ${maxHeaders} headers (frontendPolicies.http.http1MaxHeaders)`,
          )
        : resolveRequestTarget(ctx, paths);
    setForwardedHeaders(ctx, trusted);
    answerContinueOnRead(ctx);
    if (bs.preserveHeaderCase && !('stream' in req)) ctx.ext.clientHeaderCase = req.rawHeaders;

    if (this.#observers.detailed.length > 0) ctx.obs = new Observation(this.#observers.detailed);
    if (this.#trace.armed || this.#tracing !== undefined) this.#attach(ctx);
    const obs = ctx.obs;
    obs?.start(ctx);
    const taken = bs.startRequest();
    if (taken === false) {
      this.#fail(
        ctx,
        new GwError(
          'GW_ERR_OVERLOADED',
          'request limit exceeded: this bind has as many requests in flight as frontendPolicies.http.maxConcurrentRequests allows',
        ),
      );
      return;
    }
    if (taken) {
      place = taken;
      // an upgrade's request is over once its answer is sent (HTTP/2: once its stream is the tunnel);
      // the connection it becomes is not a request
      if (upgrade !== undefined) {
        const release = () => {
          place?.close();
          place = undefined;
        };
        res.once('finish', release);
        upgrade.joined = release;
      }
    }
    if (refused) {
      this.#fail(ctx, refused);
      return;
    }
    if (bind.ir.tunnel && !upgrade?.connect) {
      this.#fail(
        ctx,
        new GwError(
          'GW_ERR_METHOD_NOT_ALLOWED',
          'this port takes CONNECT tunnels only (tunnelProtocol: connect)',
          { headers: { allow: 'CONNECT' } },
        ),
      );
      return;
    }
    /** frontendPolicies.connect mode tunnel (or a tunnelProtocol connect bind): not routed. */
    let tunnel = false;
    if (upgrade?.connect) {
      const mode = bind.ir.tunnel ? 'tunnel' : this.#connect;
      if (mode === 'tunnel' && !peer.tunnelled) tunnel = true;
      else if (mode !== 'route') {
        this.#fail(
          ctx,
          new GwError(
            'GW_ERR_METHOD_NOT_ALLOWED',
            mode === 'tunnel'
              ? 'a CONNECT inside a CONNECT tunnel is not tunnelled again'
              : 'CONNECT is not allowed here (frontendPolicies.connect mode: route or tunnel lets it through)',
            // RFC 9110 §15.5.6: what the target does take
            { headers: { allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS' } },
          ),
        );
        return;
      }
    }
    if (tunnel) {
      // The authority is where the tunnel goes, not a listener's name: the listener is the one whose
      // certificate the handshake chose (by SNI, as the server did), and its client check applies.
      const sni = serverNameOf(req);
      const unverified = unverifiedClient(
        (sni !== undefined ? selectListener(bind, sni) : undefined) ?? bind.listeners[0],
        req,
      );
      if (unverified) {
        this.#fail(ctx, unverified);
        return;
      }
      this.#tunnel(ctx, upgrade as UpgradeState, peer);
      return;
    }

    const listener = selectListener(bind, ctx.host);
    if (!listener) {
      obs?.routeSelected(ctx, NO_LISTENER);
      this.#fail(ctx, new GwError('GW_ERR_NO_LISTENER'));
      return;
    }
    // On a port with several listeners, the handshake chose a certificate (and its client check)
    // by the TLS server name: a Host that belongs to another listener is refused, not served with
    // that listener's routes and policies (a client reusing a connection gets the 421 it retries on).
    if (bind.listeners.length > 1 && listener.ir.tls) {
      const sni = serverNameOf(req);
      if (sni !== undefined && selectListener(bind, sni) !== listener) {
        obs?.routeSelected(ctx, NO_LISTENER);
        this.#fail(ctx, new GwError('GW_ERR_MISDIRECTED'));
        return;
      }
    }
    const unverified = unverifiedClient(listener, req);
    if (unverified) {
      this.#fail(ctx, unverified);
      return;
    }
    let done: Promise<void>;
    try {
      if (listener.gatewayPhase) {
        // the gateway phase runs first, and what it changed (a header, the path) picks the route
        ctx.ext.routing = (c) => {
          const route = this.#selectRoute(c, listener, upgrade);
          if (c.body !== null && route.requestBodyIdleTimeoutMs > 0)
            unwatchBody = watchRequestBody(c, route.requestBodyIdleTimeoutMs);
          return route.handler(c);
        };
        if (obs && listener.ir.gatewayPhase) obs.gatewayPhase(ctx, listener.ir.gatewayPhase);
        done = listener.gatewayPhase(ctx);
      } else {
        const route = this.#selectRoute(ctx, listener, upgrade);
        if (ctx.body !== null && route.requestBodyIdleTimeoutMs > 0)
          unwatchBody = watchRequestBody(ctx, route.requestBodyIdleTimeoutMs);
        done = route.handler(ctx);
      }
    } catch (err) {
      // A layer that is not async may throw before returning its promise.
      this.#fail(ctx, err, listener);
      return;
    }
    done.then(
      () => this.#respond(ctx),
      (err) => this.#fail(ctx, err, listener),
    );
  }

  /**
   * The listener's route for the request, set on it (and shown to its observers); a GwError when no
   * route matches or the route takes no upgrade the request asks for.
   */
  #selectRoute(
    ctx: RequestContext,
    listener: CompiledListener,
    upgrade: UpgradeState | undefined,
  ): CompiledRoute {
    const m = listener.router.select(ctx.host, ctx);
    const obs = ctx.obs;
    if (obs) obs.routeSelected(ctx, routeSelection(ctx, listener.router.candidates(ctx.host), m?.route));
    if (!m) throw new GwError('GW_ERR_NO_ROUTE');
    ctx.route = m.route.info;
    ctx.matchedPrefix = m.prefix;
    if (upgrade !== undefined && !m.route.upgrades)
      throw upgrade.connect
        ? new GwError(
            'GW_ERR_UPGRADE_UNSUPPORTED',
            "this route's backend takes no CONNECT tunnel (host, unix, service and dynamic backends do)",
          )
        : new GwError('GW_ERR_UPGRADE_UNSUPPORTED');
    return m.route;
  }

  /**
   * The span exporter for a config's tracing: the current one while the collector settings are the
   * same, else a new one, with the SDK loaded before the config is served.
   */
  async #spansFor(t: TracingIR | undefined, customFunctions = ''): Promise<Spans | undefined> {
    if (!t) return undefined;
    const { endpoint, protocol, headers, resources, tls, credential } = t;
    const connection = { ...(tls ? { tls } : {}), ...(credential ? { credential } : {}) };
    // the resources are CEL, which may call the config's functions
    const key = JSON.stringify([
      endpoint,
      protocol,
      headers,
      resources,
      collectorKey(connection),
      customFunctions,
    ]);
    if (this.#spans?.key === key) return this.#spans;
    const resource = resourceAttributes(t.resources, this.#opts.log);
    const onError = exportWarning(this.#opts.log, t.endpoint, 'spans');
    const spans: Spans = {
      key,
      export: otel.derive(
        (m) =>
          new m.SpanExport({
            endpoint: t.endpoint,
            protocol: t.protocol,
            headers: t.headers,
            connection,
            resource,
            onError,
          }),
      ),
    };
    await loaded(spans.export, 'tracing');
    return spans;
  }

  /**
   * networkExtAuthz as the bind servers' connection check: the current one while its settings are the
   * same, else a new one, with grpc-js and the ext_authz messages loaded before the config is served.
   * A denied connection is logged at debug; a check without a decision at warn, once a minute.
   */
  async #connectionCheckFor(
    n: ProxyIR['frontend']['networkExtAuthz'],
  ): Promise<{ key: string; check: ConnectionCheck } | undefined> {
    if (!n) return undefined;
    const tls = n.policies?.backendTLS;
    const serviceHeaders = serviceHeadersOf(n.policies) ?? {};
    const key = JSON.stringify([n, tls?.key?.reveal() ?? null, serviceHeaders]);
    if (this.#connectionCheck?.key === key) return this.#connectionCheck;
    const m = await import('../policies/ext-authz/grpc-check.ts');
    const ask = m.connectionCheck(n.grpc, tls, serviceHeaders);
    const failOpen = n.failureMode?.toLowerCase() === 'failopen';
    const log = this.#opts.log;
    let warned = 0;
    const check: ConnectionCheck = async (client, local) => {
      const d = await ask(client, local);
      if (d.kind === 'allow') return true;
      if (d.kind === 'deny') {
        log.debug({ address: client.address, port: client.port }, 'connection denied by networkExtAuthz');
        return false;
      }
      if (Date.now() - warned >= 60_000) {
        warned = Date.now();
        log.warn(
          { service: n.grpc.host, reason: d.reason, failureMode: failOpen ? 'failOpen' : 'failClosed' },
          `networkExtAuthz gave no decision: connections are ${failOpen ? 'let on' : 'closed'}`,
        );
      }
      return failOpen;
    };
    return { key, check };
  }

  /** The access log exporter for accessLog.otlp, as #spansFor: kept while the collector is the same. */
  async #logsFor(t: AccessLogOtlpIR | undefined): Promise<Logs | undefined> {
    if (!t) return undefined;
    const { endpoint, protocol, tls, credential, headers } = t;
    const connection = {
      ...(tls ? { tls } : {}),
      ...(credential ? { credential } : {}),
      ...(headers ? { headers } : {}),
    };
    const key = JSON.stringify([endpoint, protocol, collectorKey(connection)]);
    if (this.#logs?.key === key) return this.#logs;
    const onError = exportWarning(this.#opts.log, t.endpoint, 'access log records');
    const logs: Logs = {
      key,
      export: otelLogs.derive((m) => new m.LogExport({ endpoint, protocol, connection, onError })),
    };
    await loaded(logs.export, 'the OTLP access log');
    return logs;
  }

  /** Lets the observer sources (a waiting trace) claim this request. */
  #attach(ctx: RequestContext): void {
    for (const source of this.#sources) {
      const o = source.attach(ctx);
      if (o) ctx.observe(o);
    }
  }

  /** A new bind's socket; an internal bind has none (it takes CONNECT tunnels only). */
  async #open(server: BindServer | TcpBindServer, ir: BindIR, port: number | undefined): Promise<void> {
    if (ir.internal) {
      server.internal(ir.port);
      return;
    }
    try {
      await server.listen(ir.address, port ?? ir.port, this.#opts.reusePort ?? false);
    } catch (err) {
      // which of the config's binds: its listeners' names (bind/<port>/<listener>, <gateway>/<listener>)
      const names = ir.listeners.map((l) => `${l.gateway}/${l.name}`).join(', ');
      throw new Error(`${hostPort(ir.address, port ?? ir.port)} (${names}): ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /**
   * frontendPolicies.connect mode tunnel (or a tunnelProtocol connect bind): the CONNECT gets a 200
   * and its bytes go on as a new connection to the bind on the port it names (connect-tunnel.ts),
   * from the same client. No route runs for the CONNECT itself; the request is over once the tunnel
   * is handed over.
   */
  #tunnel(ctx: RequestContext, upgrade: UpgradeState, peer: Peer): void {
    const { req } = ctx;
    const authority = 'stream' in req ? (req.headers[':authority'] ?? '') : (req.url ?? '');
    const found = tunnelTarget(authority, this.#servers.values());
    if (found instanceof GwError) {
      this.#fail(ctx, found);
      return;
    }
    const { target } = found;
    ctx.obs?.event(ctx, 'tunnel', {
      message: `CONNECT tunnel into bind ${target.key} (port ${target.port})`,
      bind: target.key,
    });
    const stream = upgrade.stream;
    if (stream) {
      (ctx.res as Http2ServerResponse).writeHead(200);
      upgrade.joined?.();
      target.adopt(new TunnelSocket(stream, upgrade.head, peer, found));
      return;
    }
    const socket = upgrade.socket as Socket;
    upgrade.handover = () => {
      // a reload took the bind away while the 200 was being written
      if (target.retired) socket.destroy();
      else target.adopt(new TunnelSocket(socket, upgrade.head, peer, found));
    };
    const res = ctx.res as ServerResponse;
    // RFC 9110 §9.3.6: a 2xx to CONNECT carries neither length nor chunks
    res.removeHeader('content-length');
    res.writeHead(200);
    res.end();
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
    const upgrade = ctx.ext.upgrade;
    if (upgrade?.connect && joinsTunnel(r.status) && !upgrade.upstream) {
      // a policy's own 2xx (a direct response) would read as a tunnel that is not there
      discard(r.body);
      this.#fail(
        ctx,
        new GwError(
          'GW_ERR_UPSTREAM_PROTOCOL',
          `the CONNECT was answered ${r.status} without a tunnel to a backend`,
        ),
      );
      return;
    }
    if (
      upgrade?.stream &&
      upgrade.upstream &&
      (r.status === 101 || (upgrade.connect && joinsTunnel(r.status)))
    ) {
      joinExtendedConnect(ctx, upgrade, res as Http2ServerResponse);
      return;
    }
    // A body held whole (a direct response, a redirect, a buffered or rewritten answer) goes with its
    // length rather than chunked: an HTTP/1.0 client or a cache needs it, and it saves the chunk framing
    // (not a CONNECT's answer: a 2xx to it is a tunnel, and may carry no length)
    const held = r.body;
    if (
      (held === null || Buffer.isBuffer(held)) &&
      ctx.method !== 'CONNECT' &&
      r.status >= 200 &&
      r.status !== 204 &&
      r.status !== 304 &&
      r.headers['content-length'] === undefined &&
      r.headers['transfer-encoding'] === undefined
    )
      r.headers['content-length'] = String(held === null ? 0 : held.length);
    // gRPC's trailers-only answer (its status in the head, no body) goes to an HTTP/2 client as one
    // HEADERS frame that ends the stream, as it came: a head, then an empty end, reads to a gRPC client
    // as a call without a status
    if ('stream' in res && r.headers['grpc-status'] !== undefined && ctx.method !== 'HEAD') {
      discard(r.body);
      try {
        res.stream.respond({ ':status': r.status, ...r.headers }, { endStream: true });
      } catch {
        res.destroy();
      }
      return;
    }
    // http1HeaderCase preserve: the names as the upstream spelled them (HTTP/1 to the client only)
    const spelled = ctx.ext.responseHeaderCase;
    const headers = spelled && !('stream' in res) ? inClientCase(r.headers, spelled) : r.headers;
    try {
      (res as ServerResponse).writeHead(r.status, headers as Record<string, string | string[]>);
    } catch (err) {
      discard(r.body);
      this.#fail(
        ctx,
        new GwError('GW_ERR_UPSTREAM_PROTOCOL', `invalid response header: ${(err as Error).message}`),
      );
      return;
    }
    let body = r.body;
    const obs = ctx.obs;
    if (obs) {
      obs.responseHead(ctx, 'final');
      if (body && ctx.method !== 'HEAD' && obs.wantsResponseBody) {
        body = observeBody(
          body,
          (c) => obs.responseBody(ctx, c),
          () => obs.responseBodyEnd(ctx),
        );
      }
    }
    if (body === null || ctx.method === 'HEAD') {
      if (body && !Buffer.isBuffer(body)) body.resume();
      res.end();
    } else if (Buffer.isBuffer(body)) {
      res.end(body);
    } else {
      // an event stream's head goes without waiting for a body: its first event may be long in
      // coming (an MCP GET stream, a slow model), and a client or load balancer waits for the head
      // meanwhile. Not at once, though: an event that came with the head (the usual case: one read
      // of the upstream holds both) is written by then, the head with it in one write.
      const type = r.headers['content-type'];
      if (typeof type === 'string' && type.startsWith('text/event-stream')) setImmediate(flushHead, res);
      const upstream = r.body as { trailers?: Record<string, string> };
      pump(
        body,
        res as unknown as Writable,
        (err) => {
          if (!ctx.error) {
            ctx.error =
              err instanceof GwError
                ? err
                : new GwError('GW_ERR_UPSTREAM_RESET', `response stream failed: ${err.message}`);
          }
        },
        () => upstream.trailers,
      );
    }
  }

  /**
   * Answers the request with `err`, in its route's error format. Refused before a route was chosen
   * (the gateway phase), the route `listener` would have chosen gives the format: an LLM client is
   * told in its API's shape.
   */
  #fail(ctx: RequestContext, err: unknown, listener?: CompiledListener): void {
    let e: GwError;
    if (err instanceof GwError) e = err;
    else if (ctx.abortReason !== undefined) e = ctx.abortReason;
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
    closeIfBodyOwed(ctx);
    const route =
      ctx.route ?? (listener?.gatewayPhase ? listener.router.select(ctx.host, ctx)?.route.info : undefined);
    const routeFormat = route?.errorFormatOf ? route.errorFormatOf(ctx.originalUrl) : route?.errorFormat;
    // An A2A JSON-RPC call read before the route's policies: its error carries the call's id.
    const answer = errorResponse(
      e,
      errorFormatFor(ctx.headers['content-type'], routeFormat),
      ctx.ext.a2a?.id,
    );
    const obs = ctx.obs;
    if (obs) {
      obs.error(ctx, e);
      ctx.response = answer;
      obs.responseHead(ctx, 'final');
      if (obs.wantsResponseBody) {
        obs.responseBody(ctx, answer.body);
        obs.responseBodyEnd(ctx);
      }
    }
    if (answer.body.length === 0 && 'stream' in res) {
      // No body on HTTP/2: one HEADERS frame that ends the stream (gRPC's trailers-only answer), which
      // the compatibility API cannot send.
      res.stream.respond({ ':status': answer.status, ...answer.headers }, { endStream: true });
      return;
    }
    try {
      (res as ServerResponse).writeHead(answer.status, answer.headers);
    } catch (err) {
      // a header a policy put on the error that no message can carry (a CEL-made value with a line
      // break): the error goes without the headers that cannot be sent, rather than not at all
      this.#opts.log.warn({ err, route: ctx.route?.key }, 'error response header dropped');
      (res as ServerResponse).writeHead(answer.status, sendableHeaders(answer.headers));
    }
    res.end(answer.body);
  }

  #finish(ctx: RequestContext, listed: RosterEntry<RequestContext>): void {
    this.#inflight.delete(listed);
    const { res } = ctx;
    // An HTTP/2 stream the client resets reads as finished (node ends its writable side on close);
    // `aborted` tells that the response was still open.
    if ('stream' in res ? res.stream.aborted : !res.writableFinished) {
      // The client went away (or the response was cut): stop the upstream side too.
      ctx.abort(new GwError('GW_ERR_CLIENT_CLOSED'));
      if (!ctx.error) ctx.error = new GwError('GW_ERR_CLIENT_CLOSED');
    }
    const summary = {
      status: res.headersSent ? res.statusCode : (ctx.error?.status ?? 499),
      seconds: (performance.now() - ctx.startTime) / 1000,
    };
    ctx.obs?.end(ctx, summary);
    for (const o of this.#observers.endOnly) o.end?.(ctx, summary);
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
    this.#trace.arm(id, flag, expression);
  }

  disarmTrace(id: number): void {
    this.#trace.disarm(id);
  }

  /** The passive health of each endpoint with a `health` policy: what /config_dump shows. */
  endpointHealth(): HealthSnapshot[] {
    const now = Date.now();
    return endpointHealthOf(this.#pools).map((h) => h.snapshot(now));
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
    // proxied TCP connections (tcpRoutes) are waited for like requests
    const open = () =>
      this.#inflight.size +
      [...this.#servers.values()].reduce((n, s) => n + (s instanceof TcpBindServer ? s.connections : 0), 0);
    while (open() > 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 25));
      for (const s of this.#servers.values()) s.closeIdle();
    }
    const cut = open();
    for (const s of this.#servers.values()) s.destroyAll();
    await this.#pools.closeAll();
    // the spans of the last requests go out before the worker stops
    await this.#spans?.export.value?.shutdown().catch(() => {});
    await this.#logs?.export.value?.shutdown().catch(() => {});
    return { cut };
  }
}

/**
 * An exporter's failed batch, logged one line a minute at most: a collector that is down fails every
 * batch.
 */
function exportWarning(log: Logger, endpoint: string, what: string): (err: Error) => void {
  let last = 0;
  return (err) => {
    if (Date.now() - last < 60_000) return;
    last = Date.now();
    log.warn({ endpoint, err: err.message }, `cannot export ${what} to the OTLP collector`);
  };
}

/** An exporter's SDK loaded before the config is served; one that cannot load names what cannot start. */
async function loaded(exporter: Lazy<unknown>, what: string): Promise<void> {
  try {
    await exporter.ready;
  } catch (err) {
    throw new Error(`cannot start ${what}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * tracing.resources: CEL evaluated once, without a request; service.name is "gw" unless set. A value
 * that cannot be worked out so (it names the request) is left out, with a warning.
 */
function resourceAttributes(resources: Record<string, string>, log: Logger): Record<string, string> {
  const out: Record<string, string> = { 'service.name': 'gw' };
  for (const [k, expr] of Object.entries(resources)) {
    const v = compileCel(expr).eval({} as never);
    if (v === undefined || v === null) {
      log.warn(
        { resource: k, expression: expr },
        'tracing resource attribute left out: it has no value without a request',
      );
      continue;
    }
    out[k] = typeof v === 'string' ? v : String(v);
  }
  return out;
}

const NO_LISTENER: RouteSelection = {
  selected: null,
  policies: { gateway: {}, route: {} },
  evaluated: () => [],
  reason: 'no listener for host',
};

function routeSelection(
  ctx: RequestContext,
  candidates: CompiledMatch<CompiledRoute>[],
  selected: CompiledRoute | undefined,
): RouteSelection {
  const policies: RouteSelection['policies'] = { gateway: {}, route: {} };
  if (selected) {
    for (const [name, config] of Object.entries(selected.ir.policies)) {
      policies[selected.ir.policySources[name] ?? 'route'][name] = config;
    }
  }
  const info = selected?.info;
  return {
    selected: info
      ? {
          key: info.key,
          name: info.name,
          gateway: info.gateway,
          listener: info.listener,
          definedAt: selected.ir.path,
          ...(selected.delegatedFrom ? { delegatedFrom: selected.delegatedFrom } : {}),
        }
      : null,
    policies,
    evaluated: () =>
      candidates.map((c) => ({
        route: c.route.info.key,
        matched: c.test(ctx),
        // a route that delegated to the selected one's group counts as selected too
        selected: c.route === selected || (selected?.delegatedFrom?.includes(c.route.info.key) ?? false),
      })),
  };
}

/**
 * A request ended early (its deadline, a stalled body) with its body still owed: the HTTP/1
 * connection is not kept for a client that stopped sending.
 */
function closeIfBodyOwed(ctx: RequestContext): void {
  const { req, res } = ctx;
  if ('stream' in req || req.complete || ctx.ext.upgrade !== undefined || ctx.abortReason === undefined)
    return;
  if ('shouldKeepAlive' in res) res.shouldKeepAlive = false;
}

/** The most of a body nobody read that is read and dropped after the answer (Go's server: 256 KiB). */
const DRAIN_LIMIT = 1024 * 1024;

/**
 * An HTTP/1 request whose answer is complete before its body was. When the upstream answered early
 * (an error, or an upstream that does not read bodies), undici destroys the body stream it was
 * sending; node's parser then pushes the rest of the body into a destroyed stream, pauses the
 * connection for good, and the client's next request waits forever. Node's own remedy for a body
 * nobody reads (the one it applies when a handler never touched the body) marks the request dumped,
 * so the parser discards what is left, and reading resumes. The rest is taken only while it keeps
 * coming: a client that sends nothing for `graceMs` (the body idle timeout), owes more than
 * DRAIN_LIMIT, or is still sending after ten times `graceMs` loses the connection instead.
 */
function discardUnreadBody(req: IncomingMessage, graceMs: number): void {
  if (req.complete) return;
  (req as IncomingMessage & { _dump?: () => void })._dump?.();
  const socket = req.socket;
  if (!socket) return;
  socket.resume();
  const from = socket.bytesRead;
  const until = performance.now() + 10 * graceMs;
  let seen = from;
  let timer: NodeJS.Timeout;
  const check = () => {
    if (req.complete) return;
    const read = socket.bytesRead;
    if (read === seen || read - from > DRAIN_LIMIT || performance.now() > until) {
      socket.destroy();
      return;
    }
    seen = read;
    timer = setTimeout(check, graceMs);
    timer.unref();
  };
  timer = setTimeout(check, graceMs);
  timer.unref();
  const done = () => {
    clearTimeout(timer);
    req.off('end', done);
    socket.off('close', done);
  };
  req.once('end', done);
  socket.once('close', done);
}

/**
 * The HTTP/2 case: undici destroys the request it was sending when the upstream answered early, but
 * destroying node's Http2ServerRequest leaves its stream open and no longer read. The client, still
 * sending, waits for flow-control credit that never comes: the answer's END_STREAM has gone out, the
 * stream never closes, and the client (curl, node's) hangs. The rest of the body is read and dropped,
 * as node does for an HTTP/1 body nobody reads, so the upload completes and the stream closes.
 */
function drainUnreadStream(req: Http2ServerRequest): void {
  const stream = req.stream;
  if (req.readableEnded || stream.destroyed || stream.readableEnded) return;
  // Node's compat layer still pushes each chunk into the destroyed request and pauses the stream
  // when that push fails (every time): its listener goes, a discarding one takes its place.
  stream.removeAllListeners('data');
  stream.on('data', ignoreChunk);
  stream.resume();
}

function ignoreChunk(): void {}

/**
 * A WebSocket (or other protocol) over HTTP/2 (extended CONNECT, RFC 8441): the stream carries the
 * new protocol. Upstream it becomes an HTTP/1.1 Upgrade, so the handshake is GET and, for WebSocket,
 * takes the Sec-WebSocket-Key HTTP/2 clients do not send (nor expect an Accept for).
 */
function extendedConnect(ctx: RequestContext, req: Http2ServerRequest, idleMs: number): UpgradeState {
  const protocol = req.headers[':protocol'];
  // Without :protocol, a CONNECT asks for a tunnel (frontendPolicies.connect).
  if (typeof protocol !== 'string' || protocol === '')
    return { protocol: '', stream: req.stream, head: Buffer.alloc(0), idleMs, connect: true };
  ctx.method = 'GET';
  if (protocol.toLowerCase() === 'websocket' && ctx.headers['sec-websocket-key'] === undefined)
    ctx.headers['sec-websocket-key'] = randomBytes(16).toString('base64');
  return { protocol, stream: req.stream, head: Buffer.alloc(0), idleMs };
}

/** A CONNECT answered with a 2xx is a tunnel: the two connections are joined. */
function joinsTunnel(status: number): boolean {
  return status >= 200 && status < 300;
}

/** What an HTTP/1.1 101 carries that HTTP/2 forbids (connection-specific) or has no use for. */
const NOT_FOR_H2 = new Set([
  'connection',
  'upgrade',
  'keep-alive',
  'transfer-encoding',
  'sec-websocket-accept',
]);

/** The backend switched protocols: the client's stream gets a 200 and is joined to its connection. */
function joinExtendedConnect(ctx: RequestContext, state: UpgradeState, res: Http2ServerResponse): void {
  const up = state.upstream;
  const stream = state.stream;
  if (!up || !stream) return;
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(ctx.response?.headers ?? {}))
    if (v !== undefined && !NOT_FOR_H2.has(k)) headers[k] = v as string | string[];
  res.writeHead(200, headers);
  state.spliced = { read: 0, written: 0 };
  state.joined?.();
  if (up.head.length > 0) stream.write(up.head);
  splice(stream, up.socket, state.idleMs ?? 0, undefined, state.relay);
  readUpstream(state);
}

/**
 * What tells two collector connections apart: their TLS and credential with the secrets revealed (a
 * new key or certificate makes a new exporter). Kept in memory only, never printed.
 */
function collectorKey(c: CollectorConnectionIR): string {
  const { tls, credential, headers } = c;
  return JSON.stringify([
    tls ? { ...tls, key: tls.key?.reveal() } : null,
    credential ? [credential.header, credential.value.reveal()] : null,
    headers ?? null,
  ]);
}

/** An event stream's head, when no event has taken it out yet (setImmediate's callback in #respond). */
function flushHead(res: ServerResponse | Http2ServerResponse): void {
  // node:http's headersSent is true from writeHead on, its _headerSent once the head is written
  const sent = (res as { _headerSent?: boolean })._headerSent ?? res.headersSent;
  if (!sent && !res.destroyed && !res.writableEnded) (res as { flushHeaders?: () => void }).flushHeaders?.();
}

/** The headers of `h` that node can send (a name and value it validates). */
function sendableHeaders(h: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    try {
      validateHeaderName(k);
      if (v !== undefined) for (const one of Array.isArray(v) ? v : [v]) validateHeaderValue(k, String(one));
      out[k] = v;
    } catch {}
  }
  return out;
}
