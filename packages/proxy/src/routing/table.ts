// Compiles a ProxyIR into an immutable routing table: matchers, policy chains, backend pools. A new
// config is compiled completely before it replaces the old table, and a request keeps the table it
// started with.
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import { caCertificatesProblem, parseGoDuration } from '@gw/api/runtime';
import type { BindIR, GlobalIR, ListenerIR, ProxyIR, RouteIR, TlsServerIR } from '../config/ir.ts';
import { GwError } from '../errors.ts';
import type { RouteInfo } from '../pipeline/context.ts';
import { compose, type Handler, observed } from '../pipeline/layer.ts';
import { POLICY_ORDER } from '../policies/order.ts';
import { buildLayers } from '../policies/registry.ts';
import { GATEWAY_PHASE_KEY } from '../policies/types.ts';
import { compileBackend } from '../upstream/backends/compile.ts';
import { weighted } from '../upstream/backends/select.ts';
import type { PoolRegistry, Retained } from '../upstream/pools.ts';
import { compileMatch, HostRouter, hostMatches } from './match.ts';
import { TcpRouter } from './tcp-routes.ts';

export interface CompiledRoute {
  info: RouteInfo;
  ir: RouteIR;
  policyNames: string[];
  /** The route's policies, then its backend; the one compiled chain, observed or not. */
  handler: Handler;
  /** How long the request body may stall; 0 when the route's request timeout bounds it instead. */
  requestBodyIdleTimeoutMs: number;
  /** False when none of its backends takes protocol upgrades (ai, mcp, a2a): WebSockets are refused. */
  upgrades: boolean;
  /** A route of a routeGroup: the keys of the routes that delegated to it, outermost first. */
  delegatedFrom?: string[];
}

declare module '../pipeline/context.ts' {
  interface RequestExtensions {
    /** What follows a listener's gateway-phase policies: choosing the route and running its chain. */
    routing?: Handler;
  }
}

export interface CompiledListener {
  ir: ListenerIR;
  router: HostRouter<CompiledRoute>;
  /**
   * The gateway-phase policies (ListenerIR.gatewayPhase), run before a route is chosen; they end in
   * the request's `ext.routing`, which the data plane sets.
   */
  gatewayPhase?: Handler;
  secureContext: SecureContext | undefined;
  /** TCP and TLS listeners: their tcpRoutes. */
  tcp?: TcpRouter;
}

export interface CompiledBind {
  ir: BindIR;
  listeners: CompiledListener[];
}

export interface RoutingTable {
  version: string;
  ir: ProxyIR;
  binds: Map<string, CompiledBind>;
  pools: Set<Retained>;
}

/** The listener for a host: most specific hostname first, a listener without hostname last. */
export function selectListener(bind: CompiledBind, host: string): CompiledListener | undefined {
  if (bind.listeners.length === 1) {
    const only = bind.listeners[0] as CompiledListener;
    return hostMatches(only.ir.hostname, host) ? only : undefined;
  }
  let best: CompiledListener | undefined;
  let bestScore = -1;
  for (const l of bind.listeners) {
    const h = l.ir.hostname;
    if (!hostMatches(h, host)) continue;
    const score = h === undefined ? 0 : h.startsWith('*.') ? h.length : 10_000;
    if (score > bestScore) {
      best = l;
      bestScore = score;
    }
  }
  return best;
}

/**
 * `pools` is null for a dry run (validation in the main thread): everything is compiled except
 * upstream connections.
 */
export type SharedMemory = (key: string, bytes: number) => SharedArrayBuffer;

/** Memory for a dry run or a single thread: plain per-compile buffers. */
export const localMemory: SharedMemory = (_key, bytes) => new SharedArrayBuffer(bytes);

export function compileTable(
  ir: ProxyIR,
  pools: PoolRegistry | null,
  shared: SharedMemory = localMemory,
): RoutingTable {
  const used = new Set<Retained>();
  const binds = new Map<string, CompiledBind>();
  for (const b of ir.binds) {
    const listeners = b.listeners.map((l) => compileListener(l, ir.global, pools, used, shared));
    binds.set(b.key, { ir: b, listeners });
  }
  return { version: ir.version, ir, binds, pools: used };
}

function compileListener(
  l: ListenerIR,
  global: GlobalIR,
  pools: PoolRegistry | null,
  used: Set<Retained>,
  shared: SharedMemory,
): CompiledListener {
  const router = new HostRouter<CompiledRoute>();
  // A delegating route's group: its own router, which the route's matches hand the request to. The
  // group's routes come after the route in the list (config/load.ts), so the router exists by then.
  const groups = new Map<string, { router: HostRouter<CompiledRoute>; chain: string[] }>();
  l.routes.forEach((r, order) => {
    const parent = r.delegatedFrom === undefined ? undefined : groups.get(r.delegatedFrom);
    const route =
      r.routeGroup === undefined ? compileRoute(r, l, global, pools, used, shared) : delegatingRoute(r, l);
    if (parent) route.delegatedFrom = parent.chain;
    const matches = r.matches.map((m, i) => compileMatch(route, m, order * 1000 + i));
    if (r.routeGroup !== undefined) {
      const group = { router: new HostRouter<CompiledRoute>(), chain: [...(parent?.chain ?? []), r.key] };
      groups.set(r.key, group);
      for (const m of matches) m.delegate = group.router;
    }
    (parent?.router ?? router).add(r.hostnames, matches);
  });
  router.freeze();
  for (const g of groups.values()) g.router.freeze();
  // A client CA file with no certificate in it would be taken by Node and then refuse every client:
  // the config is refused instead (at validate, load and reload, which all compile the table first).
  const rootProblem = l.tls?.root === undefined ? undefined : caCertificatesProblem(l.tls.root);
  if (rootProblem) throw new Error(`listener ${l.gateway}/${l.name}: tls.root: ${rootProblem}`);
  const secureContext = l.tls
    ? createSecureContext({
        cert: l.tls.cert,
        key: l.tls.key.reveal(),
        ...(l.tls.root ? { ca: l.tls.root } : {}),
        ...handshakeOptions(l.tls),
      })
    : undefined;
  return {
    ir: l,
    router,
    ...(l.gatewayPhase ? { gatewayPhase: compileGatewayPhase(l, l.gatewayPhase, global, shared) } : {}),
    secureContext,
    ...(l.tcpRoutes ? { tcp: new TcpRouter(l.tcpRoutes, global, pools, used) } : {}),
  };
}

/**
 * A listener's gateway-phase policies as one chain, in the route policies' order, observed as
 * `pre-routing`; the request is snapshotted once they have passed it on.
 */
function compileGatewayPhase(
  l: ListenerIR,
  policies: NonNullable<ListenerIR['gatewayPhase']>,
  global: GlobalIR,
  shared: SharedMemory,
): Handler {
  const layers = buildLayers(policies, global, `${l.gateway}/${l.name}${GATEWAY_PHASE_KEY}`, shared);
  const last = layers.length - 1;
  return compose(
    layers.map((x, i) =>
      observed(x.name, 'pre-routing', x.layer, i === last ? 'pre-routing policies' : undefined),
    ),
    (ctx) => (ctx.ext.routing as Handler)(ctx),
  );
}

/**
 * A listener's TLS as its server's default context (what a client without SNI gets): its certificate,
 * its client CA (tls.root) and the handshake's options; `withKey: false` leaves the private key out,
 * for telling whether two differ.
 */
export function defaultContext(t: TlsServerIR, withKey = true): SecureContextOptions {
  return {
    cert: t.cert,
    ...(withKey ? { key: t.key.reveal() } : {}),
    ...(t.root ? { ca: t.root } : {}),
    ...handshakeOptions(t),
  };
}

/**
 * The options of a TLS handshake (versions, cipher suites, key exchange groups). They apply to the
 * whole port: the bind's server is created with those of its listeners (which agree, config/load.ts).
 */
export function handshakeOptions(
  t: TlsServerIR,
): Pick<SecureContextOptions, 'minVersion' | 'maxVersion' | 'ciphers' | 'ecdhCurve'> {
  return {
    ...(t.minVersion ? { minVersion: t.minVersion } : {}),
    ...(t.maxVersion ? { maxVersion: t.maxVersion } : {}),
    ...(t.ciphers ? { ciphers: t.ciphers } : {}),
    ...(t.ecdhCurve ? { ecdhCurve: t.ecdhCurve } : {}),
  };
}

/** A route that delegates to a routeGroup: only matched, never run (its group's routes are). */
function delegatingRoute(r: RouteIR, l: ListenerIR): CompiledRoute {
  return {
    info: {
      key: r.key,
      name: r.name,
      gateway: l.gateway,
      listener: l.name,
      errorFormat: 'http',
      errorFormatOf: undefined,
    },
    ir: r,
    policyNames: [],
    handler: () => Promise.reject(new GwError('GW_ERR_NO_ROUTE')),
    requestBodyIdleTimeoutMs: 0,
    upgrades: true,
  };
}

/**
 * The policies that may run before a backend kind reads the request body: those above extAuthz in
 * POLICY_ORDER (the deadline, admission by address, CORS and authentication), none of which reads the
 * body or llm.*; a client refused by them never has its body read.
 */
const BEFORE_THE_BODY = new Set<string>(POLICY_ORDER.slice(0, POLICY_ORDER.indexOf('extAuthz')));

/** Whether `v` holds a credential location given by a CEL expression (`location: {expression}`). */
function hasExpressionLocation(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  if (Array.isArray(v)) return v.some(hasExpressionLocation);
  for (const [k, x] of Object.entries(v)) {
    if (
      (k === 'location' || k === 'authorizationLocation') &&
      typeof x === 'object' &&
      x !== null &&
      'expression' in x
    )
      return true;
    if (hasExpressionLocation(x)) return true;
  }
  return false;
}

/**
 * Whether the policy `name` (configured as `config`) runs before the body is read: one of
 * BEFORE_THE_BODY whose credential is not found by a CEL expression (which could read the body).
 */
export function beforeTheBody(name: string, config: unknown): boolean {
  return BEFORE_THE_BODY.has(name) && !hasExpressionLocation(config);
}

function compileRoute(
  r: RouteIR,
  l: ListenerIR,
  global: GlobalIR,
  pools: PoolRegistry | null,
  used: Set<Retained>,
  shared: SharedMemory,
): CompiledRoute {
  const layers = buildLayers(r.policies, global, r.key, shared);
  const attemptTimeout = r.policies.timeout?.backendRequestTimeout;
  const attemptMs = attemptTimeout ? (parseGoDuration(attemptTimeout) ?? 0) : 0;
  const requestTimeout = r.policies.timeout?.requestTimeout;
  const requestMs = requestTimeout ? (parseGoDuration(requestTimeout) ?? 0) : 0;
  const backends = r.backends
    .filter((b) => b.weight > 0)
    .map((b) => compileBackend(b, { global, pools, used, shared }, attemptMs));

  // An observed request is snapshotted after the last policy set on the gateway/listener (before the
  // first policy when there is none) and after the last policy overall.
  const phaseOf = (name: string) => r.policySources[name] ?? 'route';
  const lastGateway = layers.findLastIndex((x) => phaseOf(x.name) === 'gateway');
  const select = weighted(backends);
  const terminal: Handler = (ctx) => {
    ctx.obs?.stage(ctx, 'route policies');
    return select(ctx);
  };
  const observedLayers = layers.map((x, i) =>
    observed(x.name, phaseOf(x.name), x.layer, i === lastGateway ? 'gateway policies' : undefined),
  );
  // A backend kind that reads the request before the policies (the ai kind: llm.* for CEL). The
  // policies that never read it (beforeTheBody) come first, so the body of a client they refuse is
  // never read, and the deadline covers the read.
  const prepare = backends.find((b) => b.prepare)?.prepare;
  let chain: Handler;
  if (prepare) {
    const first = layers.findIndex(
      (x) => !beforeTheBody(x.name, (r.policies as Record<string, unknown>)[x.name]),
    );
    const n = first === -1 ? layers.length : first;
    const inner = compose(observedLayers.slice(n), terminal);
    chain = compose(observedLayers.slice(0, n), (ctx) => prepare(ctx).then(() => inner(ctx)));
  } else chain = compose(observedLayers, terminal);
  const handler: Handler =
    lastGateway === -1
      ? (ctx) => {
          ctx.obs?.stage(ctx, 'gateway policies');
          return chain(ctx);
        }
      : chain;

  return {
    info: {
      key: r.key,
      name: r.name,
      gateway: l.gateway,
      listener: l.name,
      errorFormat: backends.find((b) => b.errorFormat)?.errorFormat ?? 'http',
      errorFormatOf: backends.find((b) => b.errorFormatOf)?.errorFormatOf,
    },
    ir: r,
    policyNames: layers.map((x) => x.name),
    handler,
    requestBodyIdleTimeoutMs: requestMs > 0 ? 0 : global.downstream.requestBodyIdleTimeoutMs,
    // A route without backends answers from its policies (direct response, redirect), upgrade or not.
    upgrades: backends.length === 0 || backends.some((b) => b.upgrades),
  };
}
