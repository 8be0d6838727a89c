// The admin `/config_dump` document: the running config as the proxy understands it, secrets shown as
// "[redacted]". The proxy writes it; `gwctl proxy config` (and later the UI) validate it on read.
// Policy bodies stay open records: their shapes are the config schema's, and a reader only shows them.
import { z } from 'zod';

const Open = z.record(z.string(), z.unknown());
const Protocol = z.enum(['HTTP', 'HTTPS']);

export const ConfigDumpListener = z.object({
  gateway: z.string(),
  name: z.string(),
  hostname: z.string().optional(),
  protocol: Protocol,
  /** Certificate and options; the key is "[redacted]". */
  tls: Open.optional(),
  /** Keys of the listener's routes, in match order. */
  routes: z.array(z.string()),
});
export type ConfigDumpListener = z.infer<typeof ConfigDumpListener>;

export const ConfigDumpBind = z.object({
  /** `address:port` as configured. */
  key: z.string(),
  address: z.string(),
  /** The bound port (the one the OS chose when the config says 0). */
  port: z.number().int(),
  protocol: Protocol,
  listeners: z.array(ConfigDumpListener),
});
export type ConfigDumpBind = z.infer<typeof ConfigDumpBind>;

export const ConfigDumpRoute = z.object({
  key: z.string(),
  name: z.string(),
  /** Where the route was defined, e.g. `binds[0].listeners[0].routes[2]`. */
  definedAt: z.string(),
  hostnames: z.array(z.string()),
  /** Route matches as the config schema's `RouteMatch`. */
  matches: z.array(Open),
  backends: z.array(z.object({ name: z.string(), weight: z.number() })),
});
export type ConfigDumpRoute = z.infer<typeof ConfigDumpRoute>;

export const ConfigDumpBackend = z.object({
  name: z.string(),
  /** What the backend points at; `kind` names the backend kind (host, unix, dynamic, ...). */
  target: z.looseObject({ kind: z.string() }),
  policies: Open,
});
export type ConfigDumpBackend = z.infer<typeof ConfigDumpBackend>;

export const ConfigDumpPolicy = z.union([
  z.object({
    target: z.object({ route: z.string() }),
    /** The route's effective policy (gateway → listener → route merged), sensitive values redacted. */
    policy: Open,
  }),
  z.object({
    /** `<gateway>/<listener>` */
    target: z.object({ listener: z.string() }),
    /** The listener's gateway-phase policies (run before a route is chosen), merged and redacted. */
    phase: z.literal('gateway'),
    policy: Open,
  }),
]);
export type ConfigDumpPolicy = z.infer<typeof ConfigDumpPolicy>;

/** health.active's probes of one endpoint: one prober per proxy, so every worker shows the same. */
export const ConfigDumpActiveHealth = z.object({
  /** unknown: not probed or not failed enough yet (in the balancing set); unhealthy: out of it. */
  state: z.enum(['unknown', 'healthy', 'unhealthy']),
  consecutivePasses: z.number().int().nonnegative(),
  consecutiveFailures: z.number().int().nonnegative(),
  probes: z.number().int().nonnegative(),
  failedProbes: z.number().int().nonnegative(),
  /** The last probe's status (`status 503`) or why it had none (`timeout`, …). */
  lastResult: z.string().nullable(),
  lastProbe: z.string().nullable(),
  /** When the state last changed. */
  since: z.string().nullable(),
});
export type ConfigDumpActiveHealth = z.infer<typeof ConfigDumpActiveHealth>;

/** The health of one endpoint of a backend with a `health` policy, as one worker sees it. */
export const ConfigDumpEndpointHealth = z.object({
  backend: z.string(),
  endpoint: z.string(),
  /** false while ejected or failing active checks: the endpoint is out of the balancing set. */
  healthy: z.boolean(),
  consecutiveFailures: z.number().int().nonnegative(),
  /** An average of the recent answers, 1 healthy and 0 unhealthy (eviction.healthThreshold reads it). */
  healthScore: z.number().min(0).max(1),
  ejectedUntil: z.string().nullable(),
  ejections: z.number().int().nonnegative(),
  /** What caused the last ejection (a status, a Retry-After, a connection failure). */
  lastEjection: z.string().nullable(),
  /** With health.active: what the probes found. */
  active: ConfigDumpActiveHealth.optional(),
});
export type ConfigDumpEndpointHealth = z.infer<typeof ConfigDumpEndpointHealth>;

export const ConfigDumpWorker = z.object({
  index: z.number().int().nonnegative(),
  /** The config version this worker runs; absent before its first config. */
  version: z.string().optional(),
  /** Each worker balances on its own, so each keeps its own endpoint health. */
  endpointHealth: z.array(ConfigDumpEndpointHealth).optional(),
});
export type ConfigDumpWorker = z.infer<typeof ConfigDumpWorker>;

/** The process settings the proxy started with, and the global settings of the running config. */
export const ConfigDumpSettings = z.looseObject({
  adminAddr: z.string(),
  statsAddr: z.string(),
  readinessAddr: z.string(),
  workerThreads: z.union([z.number().int(), z.literal('auto')]),
  logLevel: z.string(),
  logFormat: z.enum(['text', 'json']),
  global: Open.optional(),
});
export type ConfigDumpSettings = z.infer<typeof ConfigDumpSettings>;

export const ConfigDump = z.object({
  /** Content hash of the running config; absent until the first config is applied. */
  version: z.string().optional(),
  /** Where the running config came from: a file path or the xDS server. */
  source: z.string().optional(),
  /** Why the last reload was refused, until a good config replaces the running one. */
  lastReloadError: z.string().optional(),
  config: ConfigDumpSettings,
  frontendPolicies: Open.optional(),
  binds: z.array(ConfigDumpBind),
  routes: z.array(ConfigDumpRoute),
  backends: z.array(ConfigDumpBackend),
  policies: z.array(ConfigDumpPolicy),
  workloads: z.array(z.unknown()),
  services: z.array(z.unknown()),
  workers: z.array(ConfigDumpWorker),
});
export type ConfigDump = z.infer<typeof ConfigDump>;
