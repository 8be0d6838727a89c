// What a backend kind provides: `compile` turns one backend of the IR into its `call`, the innermost
// handler of a route, which sends the request and leaves the response in ctx.response.
import type { BackendTarget, GlobalIR } from '../../config/ir.ts';
import type { ErrorFormat } from '../../errors.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { Handler, Layer } from '../../pipeline/layer.ts';
import type { ProbeTarget } from '../active-prober.ts';
import type { PoolRegistry, PoolSpec, Retained } from '../pools.ts';

export type BackendKindName = BackendTarget['kind'];
export type TargetOf<K extends BackendKindName> = Extract<BackendTarget, { kind: K }>;

export interface BackendEnv {
  global: GlobalIR;
  /** null for a dry run (validation): everything is compiled except upstream connections. */
  pools: PoolRegistry | null;
  /** Pools and resources this table holds; a kind adds every one it acquires. */
  used: Set<Retained>;
  /** Connection settings from the backend's policies, for kinds that open HTTP pools. */
  connection: Omit<PoolSpec, 'origin'>;
  /** Per-attempt deadline (0: none), covering the response body too. */
  attemptTimeoutMs: number;
  /** State shared across workers, by key (the endpoints' active health); absent in a dry run. */
  shared?: (key: string, bytes: number) => SharedArrayBuffer;
  /** The backend's name in its route (an ai backend keys its models' active health by it). */
  backend?: string;
}

export interface CompiledCall {
  call: Handler;
  /** The kind as the trace and logs name it. */
  type: string;
  protocol: 'http' | 'https';
  /** Where a request goes (host:port; a dynamic backend's is the request's authority). */
  target(ctx: RequestContext): string;
  /** The one endpoint every request goes to (host:port), when the kind has one: what `health` tracks. */
  endpoint?: string;
  /** How a client of this backend expects errors (an LLM client, a JSON-RPC client); default http. */
  errorFormat?: ErrorFormat;
  /** When the format depends on the API a request calls (an LLM backend serving several): by path. */
  errorFormatOf?: (path: string) => ErrorFormat;
  /**
   * Runs before the route's policies, so they can see what the kind reads of a request (the ai kind
   * parses the LLM request: `llm.*` in CEL). Only routes whose backends have one pay for it.
   */
  prepare?: Handler;
  /**
   * Runs around the backend's own policies, before them on the way in (the service kind's endpoint
   * picker, which sees the request as the route's policies left it, as agentgateway runs it).
   */
  outer?: Layer;
  /**
   * Sends a request that asks to switch protocols (ctx.ext.upgrade, e.g. WebSocket) and leaves the
   * 101 or the refusal in ctx.response. Kinds without one refuse upgrades (GW_ERR_UPGRADE_UNSUPPORTED).
   */
  upgrade?: Handler;
  /** Where an active health check (health.active) probes: the pool every request goes through. */
  probe?: ProbeTarget;
}

export interface BackendKind<K extends BackendKindName> {
  kind: K;
  compile(target: TargetOf<K>, env: BackendEnv): CompiledCall;
}
