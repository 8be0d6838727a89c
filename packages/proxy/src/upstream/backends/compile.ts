// One backend of a route, compiled: connection settings from its policies, the kind's call, and the
// backend's own policies in BACKEND_ORDER around it. Observed requests report the chosen backend,
// the final request, the upstream call and the response it produced; others go straight through.
import { parseGoDuration } from '@gw/api/runtime';
import type { RouteBackendIR } from '../../config/ir.ts';
import { type ErrorFormat, GwError } from '../../errors.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { compose, type Handler, observed } from '../../pipeline/layer.ts';
import { type Observation, observeBody, type UpstreamInfo } from '../../pipeline/observer.ts';
import { buildBackendLayers } from '../../policies/registry.ts';
import { activeHealthKey, probeEndpointOf } from '../active-health.ts';
import { attachActiveHealth } from '../active-prober.ts';
import { connectionSpec } from '../connection.ts';
import { type EndpointHealth, trackHealth } from '../health.ts';
import { tunnelsByConnect } from '../tunnel.ts';
import { BACKEND_KINDS } from './registry.ts';
import type { BackendEnv, BackendKind, BackendKindName, CompiledCall } from './types.ts';

export interface CompiledBackend {
  name: string;
  weight: number;
  /** Sends the request through the backend's policies to the backend. */
  handler: Handler;
  info: UpstreamInfo;
  errorFormat: ErrorFormat | undefined;
  errorFormatOf: ((path: string) => ErrorFormat) | undefined;
  prepare: Handler | undefined;
  /** Whether the kind takes protocol upgrades (WebSocket); the others refuse them. */
  upgrades: boolean;
  /** With a `health` policy: the endpoint's state, which takes it out of the balancing set. */
  health?: EndpointHealth;
}

export function compileBackend(
  b: RouteBackendIR,
  env: Omit<BackendEnv, 'connection' | 'attemptTimeoutMs'>,
  routeAttemptTimeoutMs: number,
): CompiledBackend {
  const p = b.policies;
  const attemptTimeoutMs = p.http?.requestTimeout
    ? (parseGoDuration(p.http.requestTimeout) ?? 0)
    : routeAttemptTimeoutMs;
  const kind = BACKEND_KINDS[b.target.kind] as BackendKind<BackendKindName>;
  const connection = connectionSpec(b.policies, env.global);
  let compiled: CompiledCall = kind.compile(b.target as never, {
    ...env,
    connection,
    attemptTimeoutMs,
    backend: b.name,
  });
  // A kind without a fixed endpoint (dynamic, ai, mcp) is tracked as a whole.
  const tracked = p.health
    ? trackHealth(p.health, b.name, compiled.endpoint ?? b.name, env.pools, env.used, compiled.call)
    : undefined;
  if (tracked) compiled = { ...compiled, call: tracked.call };
  if (tracked && p.health?.active) activeHealth(tracked.health, b, compiled, env);
  const info: UpstreamInfo = {
    name: b.name,
    type: compiled.type,
    protocol: compiled.protocol,
    policies: Object.keys(p),
  };
  const layers = buildBackendLayers(p, env.global, b.name).map((x) => observed(x.name, 'backend', x.layer));
  if (compiled.outer) layers.unshift(observed('inferenceRouting', 'backend', compiled.outer));
  const chain = compose(layers, observedCall(info, compiled, tunnelOf(connection)));
  const name = b.name;
  return {
    name,
    weight: b.weight,
    info,
    errorFormat: compiled.errorFormat,
    errorFormatOf: compiled.errorFormatOf,
    prepare: compiled.prepare,
    upgrades: compiled.upgrade !== undefined,
    ...(tracked ? { health: tracked.health } : {}),
    handler: (ctx) => {
      ctx.backendName = name;
      const obs = ctx.obs;
      if (obs === undefined) return chain(ctx);
      obs.upstreamChosen(ctx, info);
      return chain(ctx).then(() => obs.responseHead(ctx, 'backend'));
    },
  };
}

/** health.active of a backend with one endpoint (host, a2a, unix): probed through its pool. */
function activeHealth(
  health: EndpointHealth,
  b: RouteBackendIR,
  compiled: CompiledCall,
  env: Pick<BackendEnv, 'pools' | 'used' | 'shared'>,
): void {
  const active = b.policies.health?.active;
  const endpoint = probeEndpointOf(b.target);
  if (!active || !endpoint) return;
  attachActiveHealth(health, activeHealthKey(b.name, endpoint, active), active, compiled.probe, env);
}

/** The kind's call, or its upgrade for a request that asks to switch protocols. */
function callOrUpgrade(compiled: CompiledCall): Handler {
  const { call, upgrade } = compiled;
  if (upgrade) return (ctx) => (ctx.ext.upgrade === undefined ? call(ctx) : upgrade(ctx));
  return (ctx) => {
    if (ctx.ext.upgrade === undefined) return call(ctx);
    throw new GwError(
      'GW_ERR_UPGRADE_UNSUPPORTED',
      `backend kind ${compiled.type} does not accept protocol upgrades`,
    );
  };
}

/** The trace's account of a backendTunnel: the proxy and how requests go through it. */
interface TunnelTrace {
  proxy: string;
  mode: 'CONNECT' | 'absolute-form';
}

function tunnelOf(c: BackendEnv['connection']): TunnelTrace | undefined {
  const t = c.tunnel;
  if (!t) return undefined;
  const connect = tunnelsByConnect({ origin: c.tls ? 'https:' : 'http:', tunnel: t, h2c: c.h2c === true });
  return { proxy: t.proxy, mode: connect ? 'CONNECT' : 'absolute-form' };
}

function observedCall(info: UpstreamInfo, compiled: CompiledCall, tunnel: TunnelTrace | undefined): Handler {
  const call = callOrUpgrade(compiled);
  return (ctx) => {
    const obs = ctx.obs;
    if (obs === undefined) return call(ctx);
    if (tunnel) obs.event(ctx, 'tunnel', { ...tunnel, endpoint: compiled.target(ctx) });
    return callObserved(ctx, obs, info, compiled, call);
  };
}

async function callObserved(
  ctx: RequestContext,
  obs: Observation,
  info: UpstreamInfo,
  compiled: CompiledCall,
  call: Handler,
): Promise<void> {
  obs.upstreamStart(ctx, info, compiled.target(ctx));
  if (ctx.body && obs.wantsRequestBody) {
    ctx.body = observeBody(
      ctx.body,
      (c) => obs.requestBody(ctx, c),
      () => obs.requestBodyEnd(ctx),
    );
  }
  const start = performance.now();
  try {
    await call(ctx);
  } catch (err) {
    const error = err instanceof GwError ? err.detail : String(err);
    obs.upstreamEnd(ctx, info, { start, status: null, error });
    throw err;
  }
  obs.upstreamEnd(ctx, info, { start, status: ctx.response?.status ?? null, error: null });
}
