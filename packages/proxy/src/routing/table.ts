// Compiles a ProxyIR into an immutable routing table: matchers, policy chains, backend pools. A new
// config is compiled completely before it replaces the old table, and a request keeps the table it
// started with.
import { createSecureContext, type SecureContext } from 'node:tls';
import { parseGoDuration } from '@gw/api';
import type { Pool } from 'undici';
import type { BindIR, GlobalIR, ListenerIR, ProxyIR, RouteBackendIR, RouteIR } from '../config/ir.ts';
import { GwError } from '../errors.ts';
import type { RequestContext, RouteInfo } from '../pipeline/context.ts';
import { compose, type Handler, type Layer } from '../pipeline/layer.ts';
import { headerModifier } from '../policies/header-modifier/index.ts';
import { buildLayers } from '../policies/registry.ts';
import { requestRedirect } from '../policies/request-redirect/index.ts';
import {
  type BackendDescription,
  backendResponseReady,
  marker,
  tracedBackendEntry,
  tracedCall,
  tracedLayer,
} from '../trace/instrument.ts';
import { callUpstream } from '../upstream/call.ts';
import { DynamicTargets } from '../upstream/dynamic.ts';
import type { PoolRegistry, PoolSpec } from '../upstream/pools.ts';
import { compileMatch, HostRouter, hostMatches } from './match.ts';

export interface CompiledRoute {
  info: RouteInfo;
  ir: RouteIR;
  policyNames: string[];
  handler: Handler;
  /** The same chain with trace events; taken only by a traced request. */
  tracedHandler: Handler;
}

export interface CompiledListener {
  ir: ListenerIR;
  router: HostRouter<CompiledRoute>;
  secureContext: SecureContext | undefined;
}

export interface CompiledBind {
  ir: BindIR;
  listeners: CompiledListener[];
}

export interface RoutingTable {
  version: string;
  ir: ProxyIR;
  binds: Map<string, CompiledBind>;
  pools: Set<Pool>;
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
  const used = new Set<Pool>();
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
  used: Set<Pool>,
  shared: SharedMemory,
): CompiledListener {
  const router = new HostRouter<CompiledRoute>();
  l.routes.forEach((r, order) => {
    const route = compileRoute(r, l, global, pools, used, shared);
    const matches = r.matches.map((m, i) => compileMatch(route, m, order * 1000 + i));
    router.add(r.hostnames, matches);
  });
  router.freeze();
  const secureContext = l.tls
    ? createSecureContext({
        cert: l.tls.cert,
        key: l.tls.key.reveal(),
        ...(l.tls.root ? { ca: l.tls.root } : {}),
        ...(l.tls.minVersion ? { minVersion: l.tls.minVersion } : {}),
        ...(l.tls.maxVersion ? { maxVersion: l.tls.maxVersion } : {}),
      })
    : undefined;
  return { ir: l, router, secureContext };
}

function compileRoute(
  r: RouteIR,
  l: ListenerIR,
  global: GlobalIR,
  pools: PoolRegistry | null,
  used: Set<Pool>,
  shared: SharedMemory,
): CompiledRoute {
  const layers = buildLayers(r.policies, global, r.key, shared);
  const attemptTimeout = r.policies.timeout?.backendRequestTimeout;
  const backends = r.backends
    .filter((b) => b.weight > 0)
    .map((b) =>
      compileBackend(b, global, pools, used, attemptTimeout ? (parseGoDuration(attemptTimeout) ?? 0) : 0),
    );

  // The traced chain: each layer reports its outcome, and the request is snapshotted after the last
  // policy set on the gateway/listener and after the last policy overall. Markers change nothing.
  const phaseOf = (name: string) => r.policySources[name] ?? 'route';
  const lastGateway = layers.findLastIndex((x) => phaseOf(x.name) === 'gateway');
  const traced: Layer[] = [];
  layers.forEach((x, i) => {
    traced.push(tracedLayer(x.name, phaseOf(x.name), x.layer));
    if (i === lastGateway) traced.push(marker((ctx) => ctx.trace?.requestSnapshot('gateway policies', ctx)));
  });
  if (lastGateway === -1)
    traced.unshift(marker((ctx) => ctx.trace?.requestSnapshot('gateway policies', ctx)));
  traced.push(marker((ctx) => ctx.trace?.requestSnapshot('route policies', ctx)));

  return {
    info: { key: r.key, name: r.name, gateway: l.gateway, listener: l.name },
    ir: r,
    policyNames: layers.map((x) => x.name),
    handler: compose(
      layers.map((x) => x.layer),
      pickBackend(backends, false),
    ),
    tracedHandler: compose(traced, pickBackend(backends, true)),
  };
}

interface CompiledBackend {
  name: string;
  weight: number;
  handler: Handler;
  tracedHandler: Handler;
}

function pickBackend(backends: CompiledBackend[], traced: boolean): Handler {
  if (backends.length === 0) {
    return async () => {
      throw new GwError('GW_ERR_NO_BACKEND');
    };
  }
  const handlerOf = (b: CompiledBackend) => (traced ? b.tracedHandler : b.handler);
  if (backends.length === 1) {
    const only = backends[0] as CompiledBackend;
    const h = handlerOf(only);
    return (ctx) => {
      ctx.backendName = only.name;
      return h(ctx);
    };
  }
  const total = backends.reduce((s, b) => s + b.weight, 0);
  return (ctx) => {
    let n = Math.random() * total;
    let chosen = backends[backends.length - 1] as CompiledBackend;
    for (const b of backends) {
      n -= b.weight;
      if (n < 0) {
        chosen = b;
        break;
      }
    }
    ctx.backendName = chosen.name;
    return handlerOf(chosen)(ctx);
  };
}

function compileBackend(
  b: RouteBackendIR,
  global: GlobalIR,
  pools: PoolRegistry | null,
  used: Set<Pool>,
  routeAttemptTimeoutMs: number,
): CompiledBackend {
  const p = b.policies;
  const tls = p.backendTLS;
  const attemptMs = p.http?.requestTimeout
    ? (parseGoDuration(p.http.requestTimeout) ?? 0)
    : routeAttemptTimeoutMs;
  const baseSpec = {
    connectTimeoutMs: p.tcp?.connectTimeout
      ? (parseGoDuration(p.tcp.connectTimeout) ?? global.connectTimeoutMs)
      : global.connectTimeoutMs,
    idleTimeoutMs: global.poolIdleTimeoutMs,
    maxConnections: global.poolMaxSize,
    keepalive: p.tcp?.keepalives
      ? {
          enabled: p.tcp.keepalives.enabled ?? true,
          timeMs: parseGoDuration(p.tcp.keepalives.time ?? '') ?? global.keepalive.timeMs,
          intervalMs: parseGoDuration(p.tcp.keepalives.interval ?? '') ?? global.keepalive.intervalMs,
          retries: p.tcp.keepalives.retries ?? global.keepalive.retries,
        }
      : global.keepalive,
    allowH2: p.http?.version === 'HTTP2' || (tls?.alpn?.includes('h2') ?? false),
    ...(tls ? { tls } : {}),
  } satisfies Omit<PoolSpec, 'origin'>;

  let call: Handler;
  let endpointOf: (ctx: RequestContext) => string;
  const t = b.target;
  if (t.kind === 'dynamic') {
    const targets = pools ? new DynamicTargets(pools, baseSpec, used) : null;
    call = async (ctx: RequestContext) => {
      if (!targets) throw new GwError('GW_ERR_INTERNAL');
      await callUpstream(ctx, targets.forRequest(ctx), attemptMs);
    };
    endpointOf = (ctx) => (typeof ctx.headers.host === 'string' ? ctx.headers.host : ctx.authority);
  } else {
    const host = t.kind === 'host' && t.host.includes(':') ? `[${t.host}]` : t.kind === 'host' ? t.host : '';
    const spec: PoolSpec =
      t.kind === 'unix'
        ? { ...baseSpec, origin: 'http://localhost', socketPath: t.path }
        : { ...baseSpec, origin: `${tls ? 'https' : 'http'}://${host}:${t.port}` };
    const endpoint = t.kind === 'unix' ? `unix:${t.path}` : `${host}:${t.port}`;
    const dispatcher = pools?.acquire(spec);
    if (dispatcher) used.add(dispatcher);
    call = (ctx) => {
      if (!dispatcher) throw new GwError('GW_ERR_INTERNAL');
      return callUpstream(ctx, { dispatcher, endpoint }, attemptMs);
    };
    endpointOf = () => endpoint;
  }

  const layers: { name: string; layer: Layer }[] = [];
  if (p.requestRedirect) {
    layers.push({
      name: 'requestRedirect',
      layer: requestRedirect.build(p.requestRedirect, {
        global,
        policies: {},
        route: b.name,
        shared: localMemory,
      }),
    });
  }
  if (p.requestHeaderModifier) {
    const apply = headerModifier(p.requestHeaderModifier);
    layers.push({
      name: 'requestHeaderModifier',
      layer: (ctx, next) => {
        apply(ctx.headers);
        return next(ctx);
      },
    });
  }
  if (p.responseHeaderModifier) {
    const apply = headerModifier(p.responseHeaderModifier);
    layers.push({
      name: 'responseHeaderModifier',
      layer: async (ctx, next) => {
        await next(ctx);
        if (ctx.response) apply(ctx.response.headers);
      },
    });
  }
  const description: BackendDescription = {
    name: b.name,
    type: t.kind === 'dynamic' ? 'dynamic' : t.kind === 'unix' ? 'unix' : 'static',
    protocol: tls ? 'https' : 'http',
    policies: Object.keys(p),
    endpoint: endpointOf,
  };
  return {
    name: b.name,
    weight: b.weight,
    handler: compose(
      layers.map((x) => x.layer),
      call,
    ),
    tracedHandler: compose(
      [
        tracedBackendEntry(description),
        backendResponseReady(),
        ...layers.map((x) => tracedLayer(x.name, 'backend', x.layer)),
      ],
      tracedCall(description, call),
    ),
  };
}
