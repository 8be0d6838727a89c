// Standalone config loader: YAML file → validated ProxyIR. Every problem is reported with the file,
// line, column and field path, and all problems are reported at once.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP, isIPv6 } from 'node:net';
import { dirname, isAbsolute, resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import {
  type AiBackend,
  type AiNamedProvider,
  type AiPolicy,
  type AiRouteType,
  type AwsBackend,
  awsDnsSuffix,
  type BackendAuth,
  type BackendPolicies,
  BackendPolicies as BackendPoliciesSchema,
  type BackendTLS,
  type CatalogRates,
  type CollectorPolicies,
  ConfigError,
  type ConfigFile,
  ConfigFileSchema,
  type ConfigIssue,
  checkAgentCore,
  checkAgentCoreAuth,
  checkAiPolicy,
  checkAuthorization,
  checkBackendPolicies,
  checkCel,
  checkCelMap,
  checkExtAuthz,
  checkFrontendPolicies,
  checkIpAccessControl,
  checkListenerRouteKind,
  checkLlm,
  checkMcpAuthentication,
  checkMcpBackend,
  checkObservability,
  checkOidc,
  checkRouteMatch,
  checkTcpRouteHostnames,
  checkTrafficPolicies,
  checkTransformations,
  DEFAULT_SENSITIVE_HEADERS,
  defined,
  type EnvLookup,
  ecdhCurveOf,
  type FieldPath,
  formatPath,
  GATEWAY_PHASE_POLICY_NAMES,
  GATEWAY_PHASE_UNKNOWN,
  GATEWAY_PHASE_WHY,
  GATEWAY_POLICY_NAMES,
  type GlobalConfig,
  type GuardWebhook,
  gatewayPhaseReadsRequest,
  HEADER_NAME_PATTERN,
  type InferenceRouting,
  type ListenerTLS,
  type LLM_PROVIDER_FORMATS,
  type LlmConfig,
  type LlmModel,
  type LlmModelsBackend,
  type LlmParams,
  type LlmPreset,
  llmPreset,
  MCP_TARGET_POLICIES,
  type McpAuthentication,
  type McpBackend,
  type McpConfig,
  type McpGuardrails,
  type McpRemoteProcessor,
  ModelCatalog,
  type ModelCatalogSource,
  matchModelName,
  NOT_BUILT_BACKEND_POLICIES,
  type Problem,
  type PromptEnrichment,
  type PromptGuard,
  parseAgentRuntimeArn,
  parseByteSize,
  parseGoDuration,
  parseSource,
  type RouteBackend,
  type RouteMatch,
  resolveLlmProvider,
  SERVICE_CALL_TOKEN_FORMS,
  type SourceDocument,
  serverHandshake,
  type TcpRoute,
  type TrafficPolicies,
  validateSource,
  withCelFunctions,
  withSourceIssues,
  withUnavailable,
} from '@gw/api';
import { LLM_API_PATH_PREFIXES } from '@gw/api/llm/api-paths';
import { DEFAULT_TIMEOUT_MS, MCP_DEFAULT_TIMEOUT_MS } from '@gw/guardrail-sdk/wire';
import { parse as parseYaml } from 'yaml';
import { CLIENT_APIS, MODELS_PATH } from '../llm/formats/clients.ts';
import { DEFAULT_MODERATION_MODEL, OPENAI_MODERATION_HOST } from '../llm/guardrails/openai-moderation.ts';
import { serviceOrigin } from '../llm/guardrails/service-call.ts';
import { type OpenApiTools, openApiTools } from '../mcp/openapi.ts';
import { METRIC_NAMES } from '../observability/metric-names.ts';
import { Secret } from '../secret.ts';
import { assumeRoleIR, resolveBackendAuth } from './backend-auth.ts';
import { AUTHORIZATION, type InTurnEndpoint, scaledWeights, sealedHeader } from './connection-ir.ts';

/** The backendAuth forms a call to a policy's own service obtains per call (serviceToken). */
const SERVICE_TOKEN_FORMS = SERVICE_CALL_TOKEN_FORMS;
type ServiceTokenForm = (typeof SERVICE_TOKEN_FORMS)[number];
/** Why a unix socket backend (HTTP or tcp route) takes no backendTunnel. */
const UNIX_NO_TUNNEL = 'a unix socket backend is reached on this host: a backendTunnel cannot carry it';

/** What a tcp route backend keeps of its resolved policies: how its connection is made. */
function tcpPolicies(r: ResolvedBackendPolicies): TcpBackendIR['policies'] {
  return {
    ...(r.backendTLS ? { backendTLS: r.backendTLS } : {}),
    ...(r.backendTunnel ? { backendTunnel: r.backendTunnel } : {}),
    ...(r.tcp ? { tcp: r.tcp } : {}),
  };
}

/** Where a backendTunnel proxy's key goes when its location says nothing. */
const PROXY_AUTHORIZATION: AuthLocationIR = { header: { name: 'proxy-authorization', prefix: 'Bearer ' } };

import type {
  AiTarget,
  AuthLocationIR,
  AwsTarget,
  BackendAuthIR,
  BackendTarget,
  BackendTlsIR,
  BindIR,
  CollectorConnectionIR,
  CostCatalogIR,
  CostRatesIR,
  DnsIR,
  GlobalIR,
  InferenceIR,
  ListenerIR,
  ListenerProtocol,
  LlmFormat,
  LlmGuardIR,
  LlmGuardServiceIR,
  LlmGuardSettings,
  LlmGuardsIR,
  LlmModelIR,
  LlmPromptCachingIR,
  LlmPromptEnrichmentIR,
  LlmProviderIR,
  LlmRoutingIR,
  LlmTargetIR,
  LlmVirtualModelIR,
  McpGuardrailIR,
  McpProcessorIR,
  McpProcessorPhase,
  McpTarget,
  McpTargetIR,
  OpenAIModerationIR,
  ProxyIR,
  ResolvedBackendPolicies,
  RouteBackendIR,
  RouteIR,
  ServiceTarget,
  TcpBackendIR,
  TcpRouteIR,
  TlsServerIR,
  TunnelIR,
} from './ir.ts';
import { accessLogOf, accessLogOtlpOf, type Collector, metricsOf, tracingOf } from './observability.ts';

/** An extAuthz check's service policies, as the schema gives them. */
type ExtAuthzPolicies = Exclude<
  NonNullable<TrafficPolicies['extAuthz']>,
  { conditional: unknown }
>['policies'];

/** The collector fields of a tracing or accessLog.otlp block. */
type CollectorSpec = {
  host?: string | undefined;
  /** A Service: its hostname (the part after `namespace/`) and port, resolved by DNS. */
  service?: { name: string; port: number } | undefined;
  backend?: string | undefined;
  policies?: CollectorPolicies | null | undefined;
};

import { caCertificatesProblem, hostPort, splitHostPort } from '@gw/api/runtime';
import {
  SERVICE_AUTH,
  sealExtAuthzPolicy,
  sealMcpAuthentication,
  sealMcpRemoteRateLimit,
  sealPolicies,
} from './seal.ts';
import { resolveAzure } from './token-auth.ts';

/** Settings read once at start-up (the spec: adminAddr and sensitiveHeaders are not hot-reloaded). */
export interface StartupConfig {
  adminAddr: string;
  statsAddr: string;
  readinessAddr: string;
  workerThreads: number | 'auto';
  logLevel: string;
  logFormat: 'text' | 'json';
}

export interface LoadedConfig {
  ir: ProxyIR;
  startup: StartupConfig;
  /** Not wrong, but worth a line at load (an unset bare `$NAME` kept as written). */
  warnings: ConfigIssue[];
  /**
   * The other files the config read, absolute (certificates, keys, JWKS, htpasswd, model catalogs):
   * what they hold is part of the config, so a change to any of them is a change to the config.
   */
  files: string[];
}

/**
 * A config that does not load, with the files it read or tried to read (LoadedConfig.files): one of
 * them may be what is wrong, a certificate not written yet, and the config may load once it changes.
 */
export class ConfigFilesError extends ConfigError {
  readonly files: string[];
  constructor(issues: ConfigIssue[], files: string[]) {
    super(issues);
    this.files = files;
  }
}

export const DEFAULT_MAX_BUFFER = 2 * 1024 * 1024;
export const DEFAULT_POOL_MAX_SIZE = 1024;

export async function loadConfigFile(path: string, env?: EnvLookup): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError([
      { file: path, line: 0, column: 0, path: '', message: `cannot read file: ${(err as Error).message}` },
    ]);
  }
  return loadConfigText(path, text, dirname(resolve(path)), env);
}

/** The policies agentgateway writes on a gateway or a gateway's listener itself (jwtAuth, cors, …). */
function gatewayInlinePolicies(o: object): TrafficPolicies | undefined {
  const set = GATEWAY_POLICY_NAMES.filter((k) => (o as Record<string, unknown>)[k] != null);
  if (set.length === 0) return undefined;
  return Object.fromEntries(set.map((k) => [k, (o as Record<string, unknown>)[k]])) as TrafficPolicies;
}

/** The settings of a listener's TLS handshake, which apply to its whole port (server/bind-server.ts). */
const handshakeKey = (t: TlsServerIR | undefined) =>
  JSON.stringify([t?.minVersion, t?.maxVersion, t?.ciphers, t?.ecdhCurve, t?.alpn]);

export function loadConfigText(file: string, text: string, baseDir: string, env?: EnvLookup): LoadedConfig {
  const src = parseSource(file, text, env);
  return new Builder(src, validateSource(src, ConfigFileSchema), baseDir, env ? { env } : {}).build();
}

/** Names where a config path came from, for data that has no file positions (xDS resources). */
export type Origin = (path: FieldPath) => { file: string; path: FieldPath };

/**
 * Loads config data that did not come from YAML (the xDS client assembles it from resources) through
 * the same schema and builder as a file. Issues carry no line; `origin` may name the resource a path
 * came from instead of the source.
 */
export function loadConfigObject(
  source: string,
  data: unknown,
  baseDir: string,
  origin?: Origin,
  opts: BuildOptions = {},
): LoadedConfig {
  const src = objectSource(source, data, origin);
  return new Builder(src, validateSource(src, ConfigFileSchema), baseDir, opts).build();
}

export interface BuildOptions {
  /**
   * A config without listeners is valid (xDS: a Gateway whose listeners are all invalid is a state
   * its status reports, not a config to refuse). A file without listeners is a mistake.
   */
  allowNoListeners?: boolean;
  /** Where GUARDRAIL_WEBHOOK_* are read (default process.env). */
  env?: EnvLookup;
  /**
   * A host backend named by DNS name sends that name as Host, as agentgateway does with a file
   * (default). xDS turns it off: a Service's in-cluster name is not what its clients address.
   */
  hostRewriteByName?: boolean;
}

function objectSource(file: string, data: unknown, origin: Origin | undefined): SourceDocument {
  return {
    file,
    data,
    issueAt(path, message) {
      const o = origin?.(path) ?? { file, path };
      return { file: o.file, line: 0, column: 0, path: formatPath(o.path), message };
    },
    issues: [],
    warnings: [],
  };
}

const ms = (d: string | undefined, fallback: number) =>
  d === undefined ? fallback : (parseGoDuration(d) ?? fallback);

function defaultAddr(a: string | undefined, port: number): string {
  return a ?? `127.0.0.1:${port}`;
}

class Builder {
  readonly issues: ConfigIssue[] = [];
  readonly src: SourceDocument;
  readonly cfg: ConfigFile;
  readonly baseDir: string;
  readonly opts: BuildOptions;
  /** The files read so far (LoadedConfig.files), and those a catalog source named but were not there. */
  readonly #files = new Set<string>();
  constructor(src: SourceDocument, cfg: ConfigFile, baseDir: string, opts: BuildOptions = {}) {
    this.src = src;
    this.cfg = cfg;
    this.baseDir = baseDir;
    this.opts = opts;
  }

  fail(path: FieldPath, message: string): void {
    const issue = this.src.issueAt(path, message);
    // a routeGroup's routes are built once per route delegating to them: say each problem once
    if (this.issues.some((i) => i.path === issue.path && i.message === issue.message)) return;
    this.issues.push(issue);
  }

  /** The routeGroups being delegated to, innermost last, with the sources of the policies they inherit. */
  readonly #delegating: { group: string; sources: RouteIR['policySources'] }[] = [];
  /** The routes built for a delegating route (listed after it once every listener is built). */
  readonly #groupRoutes = new Map<RouteIR, RouteIR[]>();
  /** Where backendAuth writes credentials on upstream requests (kept out of traces and logs). */
  readonly #upstreamCredentials: AuthLocationIR[] = [];
  /**
   * Where each of the policies a route inherits (from its listener, its gateway, policies targeting
   * them) is written, by the inherited object: backend policies among them are reported there.
   */
  readonly #inheritedAt = new WeakMap<object, (policy: string) => FieldPath | undefined>();
  /** The fields `inheritance: override` policies fixed for what inherits a merged object (see mergeLocked). */
  readonly #fixed = new WeakMap<object, Fixed>();
  /**
   * Policies on one part of a backend (`{backend: {name, section}}`), by sectionKey: an mcp target's
   * or an ai provider's, under its own; `at` the policies' indexes, for the warning when none is found.
   */
  readonly #sections = new Map<string, { policy: TrafficPolicies; at: number[]; used?: boolean }>();
  /** By `<kind>\n<name>`, the route-phase policies targeting a gateway, listener, route or backend. */
  readonly #targetIndexes = new Map<string, number[]>();
  /** The `phase: gateway` policies, by their target (attachGatewayPhase gives them to listeners). */
  readonly #gatewayPhase: {
    index: number;
    kind: 'gateway' | 'port' | 'listener';
    name: string;
    /** A port target: the listeners on it. */
    keys: string[] | undefined;
    policy: TrafficPolicies;
  }[] = [];
  /** By target kind and name, the fields its override policies set. */
  #overrides: Record<'gateway' | 'listener' | 'route', Map<string, TrafficPolicies>> = {
    gateway: new Map(),
    listener: new Map(),
    route: new Map(),
  };

  /** Merges layers under their locks and keeps what they fix with the result. */
  mergeInherited(
    carried: TrafficPolicies | undefined,
    layers: readonly Layer[],
  ): TrafficPolicies | undefined {
    const { merged, fixed } = mergeLocked(carried && this.#fixed.get(carried), [
      { policies: carried },
      ...layers,
    ]);
    if (merged && fixed) this.#fixed.set(merged, fixed);
    return merged;
  }

  /** ResolveIO: a place backendAuth writes a credential to. */
  credentialLocation(loc: AuthLocationIR): void {
    this.#upstreamCredentials.push(loc);
  }

  build(): LoadedConfig {
    const g = this.cfg.config ?? {};
    // every expression below is checked with the config's custom functions callable
    return withCelFunctions(g.customFunctions, ['config', 'customFunctions'], (problems) => {
      this.report(problems);
      return this.#build(g);
    });
  }

  #build(g: NonNullable<ConfigFile['config']>): LoadedConfig {
    const startup = this.startup(g);
    const global = this.global(g);
    this.checkRouteGroups();
    const binds = this.binds();
    for (const b of binds) for (const l of b.listeners) l.routes = l.routes.flatMap((r) => this.withGroup(r));
    markInternalBackends(binds);
    const frontend = this.frontend();
    addCredentialLocations(global, binds, this.#upstreamCredentials);
    // With the problems found while reading (unset environment variables), so a file shows all at once.
    const issues = withSourceIssues(this.src, this.issues);
    if (issues.length > 0) throw new ConfigFilesError(issues, [...this.#files]);
    const body = { source: this.src.file, global, binds, frontend };
    const version = createHash('sha256')
      .update(JSON.stringify(body, secretHashReplacer))
      .digest('hex')
      .slice(0, 16);
    return { ir: { version, ...body }, startup, warnings: this.src.warnings, files: [...this.#files] };
  }

  startup(g: GlobalConfig): StartupConfig {
    const level = g.logging?.level;
    let workerThreads: number | 'auto' = 'auto';
    if (typeof g.workerThreads === 'number') workerThreads = g.workerThreads;
    else if (typeof g.workerThreads === 'string' && g.workerThreads !== 'auto')
      workerThreads = Number(g.workerThreads);
    return {
      adminAddr: defaultAddr(g.adminAddr, 15000),
      statsAddr: g.statsAddr ?? '0.0.0.0:15020',
      readinessAddr: g.readinessAddr ?? '0.0.0.0:15021',
      workerThreads,
      logLevel: Array.isArray(level) ? level.join(',') : (level ?? 'info'),
      logFormat: g.logging?.format ?? 'text',
    };
  }

  /**
   * config.enableIpv6 and config.dns.lookupFamily as the family backend names resolve to: Auto is
   * both unless enableIpv6 is false; without IPv6, V6Only is a contradiction.
   */
  dns(g: GlobalConfig): DnsIR | undefined {
    const v6 = g.enableIpv6 ?? true;
    // agentgateway's environment variable for it, when the file does not say
    const fromEnv = (this.opts.env ?? ((n: string) => process.env[n]))('DNS_LOOKUP_FAMILY') || undefined;
    const families = ['All', 'Auto', 'V4Preferred', 'V4Only', 'V6Only'] as const;
    if (
      g.dns?.lookupFamily == null &&
      fromEnv !== undefined &&
      !(families as readonly string[]).includes(fromEnv)
    )
      this.fail(
        ['config', 'dns', 'lookupFamily'],
        `DNS_LOOKUP_FAMILY=${fromEnv} is not one of ${families.join(', ')}`,
      );
    const f = g.dns?.lookupFamily ?? (fromEnv as (typeof families)[number] | undefined) ?? 'Auto';
    if (f === 'V6Only') {
      if (!v6)
        this.fail(
          ['config', 'dns', 'lookupFamily'],
          'V6Only resolves IPv6 addresses only, and enableIpv6 is false',
        );
      return { family: 6 };
    }
    if (f === 'V4Only' || !v6) return { family: 4 };
    if (f === 'V4Preferred') return { order: 'ipv4first' };
    return undefined;
  }

  global(g: GlobalConfig): GlobalIR {
    const sensitive: string[] = [];
    (g.sensitiveHeaders ?? []).forEach((h, i) => {
      if (!HEADER_NAME_PATTERN.test(h) || h.startsWith(':')) {
        this.fail(['config', 'sensitiveHeaders', i], `invalid HTTP header name ${JSON.stringify(h)}`);
      } else sensitive.push(h.toLowerCase());
    });
    const fh = this.cfg.frontendPolicies?.http;
    const ka = g.backend?.keepalives;
    const metrics = metricsOf(this.cfg);
    const modelCatalog = g.modelCatalog ? this.modelCatalog(g.modelCatalog) : undefined;
    const dns = this.dns(g);
    return {
      ...(dns ? { dns } : {}),
      maxBufferSize:
        fh?.maxBufferSize === undefined ? DEFAULT_MAX_BUFFER : (parseByteSize(fh.maxBufferSize) ?? 0),
      connectTimeoutMs: ms(g.backend?.connectTimeout, 10_000),
      poolIdleTimeoutMs: ms(g.backend?.poolIdleTimeout, 90_000),
      // Unset: a bound (Envoy's default circuit breaker allows 1024 connections); null: none.
      poolMaxSize: g.backend?.poolMaxSize === undefined ? DEFAULT_POOL_MAX_SIZE : g.backend.poolMaxSize,
      keepalive: {
        enabled: ka?.enabled ?? true,
        timeMs: ms(ka?.time, 180_000),
        intervalMs: ms(ka?.interval, 180_000),
        retries: ka?.retries ?? 9,
      },
      http1IdleTimeoutMs: ms(fh?.http1IdleTimeout, 600_000),
      downstream: {
        requestHeadersTimeoutMs: ms(fh?.requestHeadersTimeout, 10_000),
        firstRequestTimeoutMs: ms(fh?.firstRequestTimeout, 60_000),
        ...(this.cfg.frontendPolicies?.tls?.handshakeTimeout
          ? { tlsHandshakeTimeoutMs: ms(this.cfg.frontendPolicies.tls.handshakeTimeout, 0) }
          : {}),
        requestBodyIdleTimeoutMs: ms(fh?.requestBodyIdleTimeout, 60_000),
        maxConnections: this.cfg.frontendPolicies?.tcp?.maxConnections ?? 10_000,
        http2MaxConcurrentStreams: fh?.http2MaxConcurrentStreams ?? 100,
        ...(fh?.maxConcurrentRequests != null ? { maxConcurrentRequests: fh.maxConcurrentRequests } : {}),
        maxConnectionDurationMs: ms(fh?.maxConnectionDuration ?? undefined, 0),
        ...this.http2Settings(fh),
        ...(fh?.http1MaxHeaders != null ? { http1MaxHeaders: fh.http1MaxHeaders } : {}),
        ...(fh?.http1HeaderCase === 'preserve' ? { preserveHeaderCase: true as const } : {}),
        ...downstreamKeepalive(this.cfg.frontendPolicies?.tcp?.keepalives),
      },
      terminationDeadlineMs: ms(g.connectionTerminationDeadline, 30_000),
      terminationMinMs: ms(g.connectionMinTerminationDeadline, 0),
      sensitiveHeaders: [...new Set([...DEFAULT_SENSITIVE_HEADERS, ...sensitive])],
      credentialQueryParams: [],
      guardrailWebhook: this.guardrailWebhook(),
      ...(metrics ? { metrics } : {}),
      ...(modelCatalog ? { modelCatalog } : {}),
      ...(g.session?.key ? { sessionKey: new Secret(g.session.key) } : {}),
      ...(g.mcp?.sessionTtl ? { mcpSessionTtlMs: ms(g.mcp.sessionTtl, 0) } : {}),
      ...(g.customFunctions?.trim() ? { customFunctions: g.customFunctions } : {}),
    };
  }

  /**
   * config.modelCatalog: each source read (a file relative to the config, JSON text, or the catalog
   * itself), checked, and merged in order, a later model entry replacing an earlier one. A file that
   * is not there is skipped with a warning, as agentgateway does (with none read, nothing is priced).
   */
  modelCatalog(sources: ModelCatalogSource[]): CostCatalogIR | undefined {
    const path = ['config', 'modelCatalog'];
    const out: CostCatalogIR = {};
    let read = 0;
    sources.forEach((s, i) => {
      let catalog: ModelCatalog | undefined;
      if ('file' in s || typeof s.inline === 'string') {
        const at = [...path, i, 'file' in s ? 'file' : 'inline'];
        let text: string;
        if ('file' in s) {
          const full = isAbsolute(s.file) ? s.file : resolve(this.baseDir, s.file);
          // watched even when it is not there yet: its prices apply once it is
          this.#files.add(full);
          try {
            text = readFileSync(full, 'utf8');
          } catch (err) {
            const code = (err as NodeJS.ErrnoException).code;
            if (code === 'ENOENT') {
              this.src.warnings.push(this.src.issueAt(at, `${full} does not exist: its prices are not used`));
              return;
            }
            this.fail(at, `cannot read ${full}: ${code ?? (err as Error).message}`);
            return;
          }
        } else text = s.inline as string;
        const where = 'file' in s ? `${s.file}: ` : '';
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch (err) {
          this.fail(at, `${where}the catalog is not JSON: ${(err as Error).message}`);
          return;
        }
        const parsed = ModelCatalog.safeParse(json);
        if (!parsed.success) {
          for (const issue of parsed.error.issues)
            this.fail(
              at,
              `${where}${issue.path.length ? `${formatPath(issue.path as FieldPath)}: ` : ''}${issue.message}`,
            );
          return;
        }
        catalog = parsed.data;
      } else catalog = s.inline as ModelCatalog;
      read++;
      for (const [provider, p] of Object.entries(catalog.providers ?? {})) {
        const models = out[provider] ?? {};
        out[provider] = models;
        for (const [id, m] of Object.entries(p.models ?? {}))
          models[id] = {
            rates: costRates(m.rates),
            tiers: (m.tiers ?? []).map((t) => ({ contextOver: t.contextOver, rates: costRates(t.rates) })),
          };
      }
    });
    return read > 0 ? out : undefined;
  }

  /** agentgateway's HTTP/2 server settings (frontendPolicies.http) as Node's; unset ones are left out. */
  http2Settings(fh: NonNullable<NonNullable<ConfigFile['frontendPolicies']>['http']> | undefined) {
    const settings = {
      ...(fh?.http2WindowSize != null ? { initialWindowSize: fh.http2WindowSize } : {}),
      ...(fh?.http2FrameSize != null ? { maxFrameSize: fh.http2FrameSize } : {}),
      ...(fh?.http2MaxHeaderSize != null ? { maxHeaderListSize: fh.http2MaxHeaderSize } : {}),
    };
    const interval = ms(fh?.http2KeepaliveInterval, 0);
    return {
      ...(Object.keys(settings).length > 0 ? { http2: settings } : {}),
      // hyper's default wait for the answer: 20 s
      ...(interval > 0
        ? { http2Keepalive: { intervalMs: interval, timeoutMs: ms(fh?.http2KeepaliveTimeout, 20_000) } }
        : {}),
      ...(fh?.http2ConnectionWindowSize != null
        ? { http2ConnectionWindowSize: fh.http2ConnectionWindowSize }
        : {}),
    };
  }

  /** The webhook pools' limits from the environment, as agentgateway reads them (0 connections: no limit). */
  guardrailWebhook(): GlobalIR['guardrailWebhook'] {
    const env = this.opts.env ?? ((n: string) => process.env[n]);
    const read = (name: string, fallback: number): number => {
      const v = env(name);
      if (v === undefined || v === '') return fallback;
      const n = Number(v);
      if (Number.isInteger(n) && n >= 0) return n;
      this.fail(['config'], `${name} must be a whole number >= 0, got ${JSON.stringify(v)}`);
      return fallback;
    };
    const max = read('GUARDRAIL_WEBHOOK_MAX_CONNECTIONS', 100);
    return {
      maxConnections: max === 0 ? null : max,
      keepAliveMs: read('GUARDRAIL_WEBHOOK_KEEPALIVE_SECONDS', 300) * 1000,
    };
  }

  frontend(): ProxyIR['frontend'] {
    const out: ProxyIR['frontend'] = {};
    this.report(checkObservability(this.cfg, METRIC_NAMES));
    const accessLog = accessLogOf(this.cfg);
    if (accessLog) out.accessLog = accessLog;
    const fpc = this.cfg.frontendPolicies;
    const logName = fpc?.accessLog !== undefined ? 'accessLog' : 'logging';
    const otlpSpec = fpc?.[logName]?.otlp;
    const otlpLog = accessLogOtlpOf(
      this.cfg,
      otlpSpec &&
        this.otlpCollector(['frontendPolicies', logName, 'otlp'], otlpSpec, 'an accessLog otlp collector'),
    );
    if (otlpLog) out.accessLogOtlp = otlpLog;
    const { tracing, problem } = tracingOf(
      this.cfg,
      this.opts.env ?? ((n: string) => process.env[n]),
      fpc?.tracing &&
        this.otlpCollector(
          ['frontendPolicies', 'tracing'],
          fpc.tracing as CollectorSpec,
          'a tracing collector',
        ),
    );
    if (problem) this.fail(problem.path, problem.message);
    if (tracing) out.tracing = tracing;
    const fp = this.cfg.frontendPolicies;
    if (!fp) return out;
    this.report(checkFrontendPolicies(fp, ['frontendPolicies']));
    if (fp.networkAuthorization) out.networkAuthorization = fp.networkAuthorization;
    if (fp.networkExtAuthz) {
      const n = this.networkExtAuthz(['frontendPolicies', 'networkExtAuthz'], fp.networkExtAuthz);
      if (n) out.networkExtAuthz = n;
    }
    const fh = fp.http;
    if (fh?.mergeSlashes !== undefined || fh?.pathWithEscapedSlashes !== undefined) {
      out.paths = {
        mergeSlashes: fh.mergeSlashes ?? true,
        escapedSlashes: fh.pathWithEscapedSlashes ?? 'KeepUnchanged',
      };
    }
    if (fh?.trustedProxies?.length) out.trustedProxies = [...fh.trustedProxies];
    // agentgateway has two names for it; the schema takes one of them
    const pp = fp.proxyProtocol ?? fp.proxy;
    if (pp) out.proxyProtocol = { version: pp.version ?? 'v2', mode: pp.mode ?? 'strict' };
    if (fp.connect?.mode === 'route' || fp.connect?.mode === 'tunnel') out.connect = fp.connect.mode;
    return out;
  }

  /**
   * frontendPolicies.networkExtAuthz: a gRPC check of each connection. What needs a request (the HTTP
   * protocol, a body, metadata by CEL, a cache keyed by CEL) is refused by name.
   */
  networkExtAuthz(
    path: FieldPath,
    e: NonNullable<NonNullable<ConfigFile['frontendPolicies']>['networkExtAuthz']>,
  ): ProxyIR['frontend']['networkExtAuthz'] {
    const needsRequest = (at: FieldPath, what: string) =>
      this.fail(
        [...path, ...at],
        `${what} needs an HTTP request, and networkExtAuthz checks a connection before it has any`,
      );
    if ('http' in e) {
      needsRequest(['protocol'], 'the http protocol');
      return undefined;
    }
    const refused: [FieldPath, string][] = [];
    if (e.includeRequestBody) refused.push([['includeRequestBody'], 'includeRequestBody']);
    if (e.cache) refused.push([['cache'], 'cache (keyed by CEL over the request)']);
    if (e.grpc.requestMetadata && Object.keys(e.grpc.requestMetadata).length > 0)
      refused.push([['protocol', 'grpc', 'metadata'], 'metadata (CEL over the request)']);
    const auth = e.policies?.backendAuth as object | undefined;
    const form = auth && SERVICE_TOKEN_FORMS.find((f) => f in auth);
    if (form) refused.push([['policies', 'backendAuth', form], `backendAuth ${form} (obtained per request)`]);
    for (const [at, what] of refused) needsRequest(at, what);
    if (refused.length > 0) return undefined;
    this.extAuthzFiles(path, e);
    return sealExtAuthzPolicy(e) as ProxyIR['frontend']['networkExtAuthz'];
  }

  /** The problems @gw/api's checks found, as config issues. */
  report(problems: readonly Problem[]): void {
    for (const p of problems) this.fail(p.path, p.message);
  }

  readMaterial(path: FieldPath, v: string | { file: string }): string | undefined {
    if (typeof v === 'string' && v.includes('-----BEGIN')) return v;
    const file = typeof v === 'string' ? v : v.file;
    const full = isAbsolute(file) ? file : resolve(this.baseDir, file);
    this.#files.add(full);
    try {
      return readFileSync(full, 'utf8');
    } catch (err) {
      this.fail(
        path,
        `cannot read ${full}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
      return undefined;
    }
  }

  // ---------- listeners and binds ----------

  /**
   * An address to listen on: an IP address, or a host name that resolves to one (localhost). A name
   * whose last label is all digits (999.1.1.1) is neither: the start would fail, not the check.
   */
  listenAddress(path: FieldPath, address: string): void {
    if (isIP(address) !== 0) return;
    const labels = address.split('.');
    const name = labels.every((l) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(l));
    if (!name || /^\d+$/.test(labels[labels.length - 1] ?? ''))
      this.fail(path, `${JSON.stringify(address)} is not an IP address or a host name to listen on`);
  }

  binds(): BindIR[] {
    const byKey = new Map<string, BindIR>();
    /** Where each listener added is in the config, to name the first of two that clash. */
    const placed = new Map<ListenerIR, FieldPath>();
    let zeroPorts = 0;
    const add = (
      path: FieldPath,
      address: string,
      port: number,
      l: ListenerIR,
      internal = false,
      /** The config named the listener (else its name is its index, which another bind's may share). */
      explicitName = false,
    ): BindIR | undefined => {
      // Port 0 asks the OS for a free port, separately for every listener that says so; an internal
      // bind has no socket, and without a port takes tunnels to any port.
      const key = internal
        ? `internal:${port || '*'}`
        : port === 0
          ? `${address}:0#${zeroPorts++}`
          : `${address}:${port}`;
      let b = byKey.get(key);
      if (!b) {
        b = {
          key,
          address,
          port,
          protocol: l.protocol,
          listeners: [],
          ...(internal ? { internal: true as const } : {}),
        };
        byKey.set(key, b);
      } else if (b.protocol !== l.protocol) {
        const http = [b.protocol, l.protocol].every((p) => p === 'HTTP' || p === 'HTTPS');
        this.fail(
          path,
          `port ${port} already serves ${b.protocol}; ${http ? 'one port cannot mix HTTP and HTTPS' : `one port serves one protocol (this listener's is ${l.protocol})`}`,
        );
        return;
      } else if (l.protocol === 'TCP' && port !== 0) {
        this.fail(
          path,
          `port ${port} already has a TCP listener; a TCP connection carries no name to choose a listener by, so a TCP port has one`,
        );
        return;
      } else if (l.protocol === 'TLS' && (b.listeners[0]?.tls === undefined) !== (l.tls === undefined)) {
        this.fail(
          path,
          `TLS listeners on port ${port} that terminate TLS (tls set) beside ones that pass it through (no tls) is not supported by this build of gw yet`,
        );
        return;
      }
      const differs = b.listeners.find((o) => handshakeKey(o.tls) !== handshakeKey(l.tls));
      if (differs) {
        this.fail(
          [...path, 'tls'],
          `listener ${l.gateway}/${l.name} sets other TLS versions, cipherSuites, keyExchangeGroups or ALPN protocols than ${differs.gateway}/${differs.name} on port ${port}; this build applies them to the whole port, so listeners sharing it must agree`,
        );
        return;
      }
      const dup = b.listeners.find((o) => (o.hostname ?? '') === (l.hostname ?? ''));
      if (dup && port !== 0) {
        const at = placed.get(dup);
        const which = dup.gateway === l.gateway && dup.name === l.name ? '' : ` ${dup.gateway}/${dup.name}`;
        this.fail(
          path,
          `listener ${l.gateway}/${l.name} has the same hostname (${l.hostname ?? 'any'}) on port ${port} as${which}${at ? ` ${formatPath(at)}` : ''}`,
        );
        return;
      }
      const named = b.listeners.find((o) => o.gateway === l.gateway && o.name === l.name);
      if (named && explicitName) {
        const at = placed.get(named);
        this.fail(
          [...path, 'name'],
          `listener name ${l.name} is used twice on ${l.gateway}${at ? ` (also ${formatPath(at)})` : ''}: names tell listeners, and their routes, apart in logs, metrics and /config_dump`,
        );
        return;
      }
      placed.set(l, path);
      b.listeners.push(l);
      return b;
    };

    const gwPolicies = new Map<string, TrafficPolicies>();
    const targeted = this.targetedPolicies();

    (this.cfg.binds ?? []).forEach((bind, bi) => {
      if (bind.mode === 'internal' && bind.address !== undefined)
        this.fail(['binds', bi, 'address'], 'an internal bind listens on no address');
      else if (bind.address !== undefined) this.listenAddress(['binds', bi, 'address'], bind.address);
      bind.listeners.forEach((l, li) => {
        const path = ['binds', bi, 'listeners', li];
        const { gateway, name } = bindListenerName(bind.port, l, li);
        const protocol = l.protocol ?? (l.tls ? 'HTTPS' : 'HTTP');
        const tls = this.serverTls([...path, 'tls'], protocol, l.tls);
        this.report(checkListenerRouteKind(protocol, l, path));
        this.transformationChecks([...path, 'policies'], l.policies);
        const inherited = this.mergeInherited(undefined, [
          { policies: targeted.gateway.get(gateway), override: this.#overrides.gateway.get(gateway) },
          { policies: gwPolicies.get(gateway) },
          {
            policies: targeted.listener.get(`${gateway}/${name}`),
            override: this.#overrides.listener.get(`${gateway}/${name}`),
          },
          { policies: l.policies },
        ]);
        if (inherited)
          this.#inheritedAt.set(
            inherited,
            (k) =>
              written([...path, 'policies'], l.policies, k) ??
              this.targetedAt('listener', `${gateway}/${name}`, k) ??
              this.targetedAt('gateway', gateway, k),
          );
        const routes = (l.routes ?? []).map((r, ri) =>
          this.route([...path, 'routes', ri], `${gateway}/${name}`, r, inherited, targeted),
        );
        const ir: ListenerIR = { gateway, name, protocol, routes, ...(tls ? { tls } : {}) };
        if (protocol === 'TCP' || protocol === 'TLS')
          ir.tcpRoutes = (l.tcpRoutes ?? []).map((r, ri) =>
            this.tcpRoute([...path, 'tcpRoutes', ri], `${gateway}/${name}`, protocol, r),
          );
        if (l.hostname) ir.hostname = l.hostname.toLowerCase();
        const internal = bind.mode === 'internal';
        const b = add(
          path,
          internal ? '::' : (bind.address ?? '::'),
          bind.port ?? 0,
          ir,
          internal,
          l.name != null,
        );
        if (b && bind.tunnelProtocol === 'connect') {
          if (protocol === 'TCP' || protocol === 'TLS')
            this.fail(
              [...path, 'protocol'],
              `tunnelProtocol connect takes HTTP or HTTPS listeners (a CONNECT is an HTTP request), not ${protocol}`,
            );
          else b.tunnel = true;
        }
      });
    });

    // The simple form: gateways.<name> plus top-level routes attached by name.
    const gws = this.cfg.gateways ?? {};
    const listenersOf = new Map<string, ListenerIR[]>();
    for (const [gname, gw] of Object.entries(gws)) {
      const path = ['gateways', gname];
      if (gw.port === undefined) {
        this.fail(path, 'port is required');
        continue;
      }
      const specs = gw.listeners ?? [{ protocol: gw.protocol, tls: gw.tls }];
      if (gw.listeners && (gw.protocol || gw.tls)) {
        this.fail(path, 'protocol and tls belong on each listener when listeners are set');
      }
      // agentgateway's gateway-level policy field, like protocol and tls, is each listener's then.
      if (gw.listeners && gw.transformations)
        this.fail(
          [...path, 'transformations'],
          'transformations belongs on each listener when listeners are set',
        );
      this.transformationChecks([...path, 'policies'], gw.policies);
      if (gw.address !== undefined && gw.bindAddress != null)
        this.fail([...path, 'bindAddress'], 'set address or bindAddress (its agentgateway name), not both');
      else if (gw.address !== undefined) this.listenAddress([...path, 'address'], gw.address);
      const gwInline = gatewayInlinePolicies(gw);
      if (gw.listeners && gwInline)
        for (const k of Object.keys(gwInline))
          this.fail([...path, k], `${k} belongs on each listener when listeners are set`);
      const out: ListenerIR[] = [];
      specs.forEach((l, li) => {
        const lpath = gw.listeners ? [...path, 'listeners', li] : path;
        const name = gatewayListenerName(gw, l, li);
        const protocol = l.protocol ?? (l.tls ? 'HTTPS' : 'HTTP');
        const tls = this.serverTls([...lpath, 'tls'], protocol, l.tls);
        const ir: ListenerIR = { gateway: gname, name, protocol, routes: [], ...(tls ? { tls } : {}) };
        if (protocol === 'TCP' || protocol === 'TLS') ir.tcpRoutes = [];
        if ('hostname' in l && l.hostname) ir.hostname = l.hostname.toLowerCase();
        out.push(ir);
        add(lpath, gw.address ?? gw.bindAddress ?? '::', gw.port as number, ir, false, true);
        const lp = 'policies' in l ? l.policies : undefined;
        if (gw.listeners) this.transformationChecks([...lpath, 'policies'], lp);
        const own =
          'transformations' in l ? l.transformations : gw.listeners ? undefined : gw.transformations;
        if (own) this.report(checkTransformations(own, [...lpath, 'transformations']));
        const lt = own ? { transformations: own } : undefined;
        // agentgateway's policies written on the gateway (without listeners) or on the listener itself
        const inline = gw.listeners ? gatewayInlinePolicies(l) : gwInline;
        if (inline) this.trafficChecks(lpath, inline);
        const policies = mergePolicies(gw.policies, lp, lt, inline) ?? {};
        gwPolicies.set(`${gname}/${name}`, policies);
        // the most specific first, as they merge
        this.#inheritedAt.set(
          policies,
          (k) =>
            written(lpath, inline, k) ??
            written(lpath, lt, k) ??
            written([...lpath, 'policies'], lp, k) ??
            written([...path, 'policies'], gw.policies, k),
        );
      });
      listenersOf.set(gname, out);
    }
    (this.cfg.routes ?? []).forEach((r, ri) => {
      const path = ['routes', ri];
      const refs =
        r.gateways === undefined ? ['default'] : Array.isArray(r.gateways) ? r.gateways : [r.gateways];
      const { gateways: _g, ...route } = r;
      for (const { l, key, inherited } of this.attachTargets(path, refs, listenersOf, gwPolicies, targeted)) {
        if (l.tcpRoutes) {
          this.fail(
            [...path, 'gateways'],
            `listener ${key} is ${l.protocol}: it takes tcpRoutes, not routes`,
          );
          continue;
        }
        l.routes.push(this.route(path, key, route, inherited, targeted));
      }
    });
    (this.cfg.tcpRoutes ?? []).forEach((r, ri) => {
      const path = ['tcpRoutes', ri];
      const refs =
        r.gateways === undefined ? ['default'] : Array.isArray(r.gateways) ? r.gateways : [r.gateways];
      const { gateways: _g, ...route } = r;
      for (const { l, key } of this.attachTargets(path, refs, listenersOf, gwPolicies, targeted)) {
        if (!l.tcpRoutes) {
          this.fail([...path, 'gateways'], `tcpRoutes need a TCP or TLS listener; ${key} is ${l.protocol}`);
          continue;
        }
        l.tcpRoutes.push(this.tcpRoute(path, key, l.protocol, route));
      }
    });
    if (this.cfg.llm) this.llmRoutes(this.cfg.llm, add, listenersOf, gwPolicies, targeted);
    if (this.cfg.mcp) this.mcpRoutes(this.cfg.mcp, add, listenersOf, gwPolicies, targeted);
    if (byKey.size === 0 && !this.opts.allowNoListeners && !this.cfg.llm && !this.cfg.mcp)
      this.fail([], 'no listeners: define binds: or gateways:');
    const binds = [...byKey.values()];
    this.attachGatewayPhase(binds);
    this.warnUntargeted(targeted);
    for (const [key, sec] of this.#sections)
      if (!sec.used)
        for (const i of sec.at)
          this.src.warnings.push(
            this.src.issueAt(
              ['policies', i, 'target', 'backend', 'backend', 'section'],
              `no route uses an mcp target or ai provider ${JSON.stringify(key.split('\n')[1])} of backend ${JSON.stringify(key.split('\n')[0])}: the policy applies to nothing`,
            ),
          );
    return binds;
  }

  /**
   * A policy whose gateway, listener, route or backend no listener, route or backend of the config
   * reads applies to nothing: a warning at its target (agentgateway loads it too), naming how that
   * kind is named, so that a misspelt target is not a silently missing authorization.
   */
  warnUntargeted(targeted: ReturnType<Builder['targetedPolicies']>): void {
    const how: Record<string, string> = {
      gateway: 'gateways are named by gatewayName, a bind listener without one by bind/<port>',
      listener: 'listeners are named <gateway>/<listener name>',
      route:
        'routes are named by name or by <namespace>/<name>, and a route without a namespace is in "default"',
      backend: 'backends are named by name, Services by <namespace>/<hostname>[:<port>]',
    };
    for (const [at, indexes] of this.#targetIndexes) {
      const [kind = '', name = ''] = at.split('\n');
      if (targeted[kind as keyof typeof targeted]?.wasRead(name)) continue;
      for (const i of indexes)
        this.src.warnings.push(
          this.src.issueAt(
            ['policies', i, 'target', kind],
            `no ${kind} ${JSON.stringify(name)} in this config: the policy applies to nothing; ${how[kind]}`,
          ),
        );
    }
  }

  /**
   * The policies targeting one part of backend `name` (an mcp target, an ai provider), marked used;
   * `takes`: the policies that part takes, the others refused where the policy targeting it is.
   */
  sectionPolicies(
    name: string | undefined,
    section: string,
    takes?: { has(k: string): boolean; what: string },
  ): TrafficPolicies | undefined {
    if (name === undefined) return undefined;
    const sec = this.#sections.get(sectionKey(name, section));
    if (!sec) return undefined;
    sec.used = true;
    if (!takes) return sec.policy;
    const kept: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(sec.policy)) {
      if (v === undefined) continue;
      if (takes.has(k)) {
        kept[k] = v;
        continue;
      }
      const i = sec.at.findLast(
        (j) => (this.cfg.policies?.[j]?.policy as Record<string, unknown>)?.[k] !== undefined,
      );
      this.fail(['policies', i ?? sec.at[0] ?? 0, 'policy', k], `${k} is not taken by ${takes.what}`);
    }
    return kept as TrafficPolicies;
  }

  /**
   * A `phase: gateway` policy: kept apart from the route-phase ones (it is never merged into a
   * route's), by the listeners it targets. It targets a gateway, a listener or a gateway's port, and
   * holds only the policies that run before a route is chosen.
   */
  gatewayPhasePolicy(
    i: number,
    kind: 'gateway' | 'listener' | 'route' | 'backend' | 'gatewayPort',
    name: string,
    policy: TrafficPolicies,
    inheritance: 'default' | 'override' | undefined,
  ): void {
    if (kind === 'route' || kind === 'backend') {
      this.fail(
        ['policies', i, 'phase'],
        `the gateway phase runs before a route is chosen: a gateway-phase policy targets a gateway, a listener or a gateway's port, not a ${kind} (set phase: route)`,
      );
      return;
    }
    if (inheritance !== undefined)
      this.fail(
        ['policies', i, 'inheritance'],
        'inheritance is how route-phase policies merge down to routes: a gateway-phase policy runs on its own',
      );
    const allowed: readonly string[] = GATEWAY_PHASE_POLICY_NAMES;
    for (const [k, v] of Object.entries(policy)) {
      if (v === undefined || allowed.includes(k)) continue;
      this.fail(
        ['policies', i, 'policy', k],
        `${k} does not run in the gateway phase (before a route is chosen; it takes ${GATEWAY_PHASE_POLICY_NAMES.join(', ')}): set phase: route`,
      );
    }
    const keys = kind === 'gatewayPort' ? this.portTargets(i, name) : undefined;
    this.#gatewayPhase.push({ index: i, kind: kind === 'gatewayPort' ? 'port' : kind, name, keys, policy });
  }

  /**
   * Each listener's gateway-phase policies, merged field by field: its gateway's, then those on its
   * port, then its own (the most specific wins a field). A policy whose target names no listener is
   * a warning, as it applies to nothing.
   */
  attachGatewayPhase(binds: BindIR[]): void {
    if (this.#gatewayPhase.length === 0) return;
    const used = new Set<number>();
    const tunnelled = new Set<number>();
    const rank = { gateway: 0, port: 1, listener: 2 } as const;
    const ordered = [...this.#gatewayPhase].sort((a, b) => rank[a.kind] - rank[b.kind] || a.index - b.index);
    for (const b of binds)
      for (const l of b.listeners) {
        if (l.protocol === 'TCP' || l.protocol === 'TLS') continue;
        const key = `${l.gateway}/${l.name}`;
        const mine = ordered.filter((p) =>
          p.kind === 'gateway'
            ? p.name === l.gateway
            : p.kind === 'listener'
              ? p.name === key
              : p.keys?.includes(key),
        );
        if (mine.length === 0) continue;
        for (const p of mine) used.add(p.index);
        // a tunnel's CONNECT is not routed (as in agentgateway): say so once per policy it skips
        if (b.tunnel || this.cfg.frontendPolicies?.connect?.mode === 'tunnel')
          for (const p of mine)
            if (!tunnelled.has(p.index)) {
              tunnelled.add(p.index);
              this.src.warnings.push(
                this.src.issueAt(
                  ['policies', p.index, 'phase'],
                  `a CONNECT tunnel into listener ${key} is not routed: the gateway phase does not run on it (requests inside the tunnel meet the policies of the bind it reaches)`,
                ),
              );
            }
        const merged = mergePolicies(...mine.map((p) => p.policy));
        if (merged && Object.keys(merged).length > 0) l.gatewayPhase = sealPolicies(merged);
      }
    for (const p of this.#gatewayPhase)
      if (!used.has(p.index) && p.kind !== 'port')
        this.src.warnings.push(
          this.src.issueAt(
            ['policies', p.index, 'target'],
            `no HTTP listener is ${p.kind === 'gateway' ? `on gateway ${JSON.stringify(p.name)}` : `named ${JSON.stringify(p.name)}`}: the gateway-phase policy applies to nothing`,
          ),
        );
  }

  // ---------- the llm block ----------

  /**
   * The LLM API (chat completions, the model list, …) as one route whose backend is an `ai` backend:
   * on a listener of its own (`llm.port`), or on the gateways it names (`default` when there is one).
   */
  llmRoutes(
    llm: LlmConfig,
    add: (path: FieldPath, address: string, port: number, l: ListenerIR) => void,
    listenersOf: Map<string, ListenerIR[]>,
    gwPolicies: Map<string, TrafficPolicies>,
    targeted: ReturnType<Builder['targetedPolicies']>,
  ): void {
    const path: FieldPath = ['llm'];
    this.report(checkLlm(llm, path));
    const { guardrails: _g, ...policies } = llm.policies ?? {};
    if (llm.policies) this.trafficChecks([...path, 'policies'], policies);
    const target = this.aiTarget(llm, path);
    if (!target) return;
    const route = {
      name: 'llm',
      matches: [
        ...[...LLM_PATHS, ...oidcPaths(policies.oidc)].map((p) => ({ path: { exact: p } })),
        ...LLM_API_PATH_PREFIXES.map((p) => ({ path: { pathPrefix: p } })),
        ...LLM_PATH_REGEXES.map((r) => ({ path: { regex: r } })),
      ],
      ...(llm.policies ? { policies } : {}),
    };
    const backend: RouteBackendIR = { name: 'llm', weight: 1, target, policies: {} };
    this.attachBlock(['llm'], llm, route, backend, { add, listenersOf, gwPolicies, targeted });
  }

  /**
   * The route of the llm or mcp block (path `[name]`): on a listener of its own when it sets `port`
   * (with `tls`), else on the gateways it names or the gateway named `default`, else on a listener of
   * its own at agentgateway's default port for it (llm 4000, mcp 3000).
   */
  attachBlock(
    path: ['llm' | 'mcp'],
    block: {
      port?: number | undefined;
      gateways?: string | string[] | undefined;
      tls?: ListenerTLS | undefined;
    },
    route: Parameters<Builder['route']>[2],
    backend: RouteBackendIR,
    at: {
      add: (path: FieldPath, address: string, port: number, l: ListenerIR) => void;
      listenersOf: Map<string, ListenerIR[]>;
      gwPolicies: Map<string, TrafficPolicies>;
      targeted: ReturnType<Builder['targetedPolicies']>;
    },
  ): void {
    const [name] = path;
    const { targeted } = at;
    const { port, gateways } = block;
    const refs =
      port !== undefined
        ? undefined
        : gateways !== undefined
          ? [gateways].flat()
          : at.listenersOf.has('default')
            ? ['default']
            : undefined;
    if (refs === undefined) {
      // A port of its own: the block's, else agentgateway's default for it (llm 4000, mcp 3000).
      if (port === undefined)
        this.src.warnings.push(
          this.src.issueAt(
            path,
            `${name} serves on port ${BLOCK_DEFAULT_PORT[name]} of every address (agentgateway's default): set ${name}.port or ${name}.gateways to choose`,
          ),
        );
      const protocol = block.tls ? 'HTTPS' : 'HTTP';
      const tls = this.serverTls([...path, 'tls'], protocol, block.tls);
      const l: ListenerIR = { gateway: name, name, protocol, routes: [], ...(tls ? { tls } : {}) };
      l.routes.push(
        this.route(path, `${name}/${name}`, route, targeted.gateway.get(name), targeted, [backend]),
      );
      at.add(path, '::', port ?? BLOCK_DEFAULT_PORT[name], l);
      return;
    }
    // with no gateways named, on the gateway named default (checkLlm refuses tls with gateways)
    if (block.tls && gateways === undefined)
      this.fail(
        [...path, 'tls'],
        "tls applies to the block's own port: on the gateway named default, its listeners' tls applies (set port for a port of its own)",
      );
    for (const { l, key, inherited } of this.attachTargets(
      path,
      refs,
      at.listenersOf,
      at.gwPolicies,
      targeted,
    ))
      l.routes.push(this.route(path, key, route, inherited, targeted, [backend]));
  }

  // ---------- the mcp block ----------

  /**
   * agentgateway's top-level `mcp`: its targets as one mcp backend, served at /mcp (streamable HTTP)
   * and /sse with /message (the older SSE transport) by one route with the block's policies.
   */
  mcpRoutes(
    mcp: McpConfig,
    add: (path: FieldPath, address: string, port: number, l: ListenerIR) => void,
    listenersOf: Map<string, ListenerIR[]>,
    gwPolicies: Map<string, TrafficPolicies>,
    targeted: ReturnType<Builder['targetedPolicies']>,
  ): void {
    const path: ['mcp'] = ['mcp'];
    const { gateways, port, policies, ...backendSpec } = mcp;
    const { mcpAuthorization, mcpGuardrails, ...routePolicies } = policies ?? {};
    if (policies) this.trafficChecks([...path, 'policies'], routePolicies);
    // the targets make their own calls: the block's connection policies go with each of them (under
    // the target's own); a Host rewrite or the A2A policy has nothing to apply to
    for (const k of ['hostRewrite', 'a2a'] as const)
      if (routePolicies[k] !== undefined)
        this.fail([...path, 'policies', k], `${k} in the mcp block reaches no target`);
    const target = this.mcpTarget(
      path,
      backendSpec,
      mcpOuter(
        { route: [...path, 'policies'], own: [...path, 'policies'] },
        routePolicies,
        undefined,
        undefined,
        undefined,
      ),
    );
    if (!target) return;
    // the route's MCP rules and processors are the backend's (as a route's reach its mcp backends)
    if (mcpAuthorization) {
      this.report(checkAuthorization(mcpAuthorization, [...path, 'policies', 'mcpAuthorization']));
      target.authorization = [mcpAuthorization];
    }
    if (mcpGuardrails)
      target.guardrails = this.mcpProcessors([...path, 'policies', 'mcpGuardrails'], mcpGuardrails);
    if (routePolicies.mcpRemoteRateLimit)
      target.remoteRateLimit = sealMcpRemoteRateLimit(routePolicies.mcpRemoteRateLimit);
    const route = {
      name: 'mcp',
      matches: MCP_PATHS.map((p) => ({ path: { exact: p } })),
      ...(policies ? { policies: routePolicies } : {}),
    };
    const backend: RouteBackendIR = { name: 'mcp', weight: 1, target, policies: {} };
    this.attachBlock(path, { gateways, port }, route, backend, { add, listenersOf, gwPolicies, targeted });
  }

  /**
   * The listeners that `gateways` references (`<gateway>` or `<gateway>/<listener>`) name, each with
   * the policies a route attached there inherits; an unknown name is an error at `path.gateways`.
   */
  attachTargets(
    path: FieldPath,
    refs: readonly string[],
    listenersOf: Map<string, ListenerIR[]>,
    gwPolicies: Map<string, TrafficPolicies>,
    targeted: ReturnType<Builder['targetedPolicies']>,
  ): { l: ListenerIR; key: string; inherited: TrafficPolicies | undefined }[] {
    const out: { l: ListenerIR; key: string; inherited: TrafficPolicies | undefined }[] = [];
    for (const ref of refs) {
      const [gname, lname] = ref.split('/', 2) as [string, string | undefined];
      const ls = listenersOf.get(gname);
      if (!ls) {
        const known = [...listenersOf.keys()];
        this.fail(
          [...path, 'gateways'],
          `no gateway named ${JSON.stringify(gname)}${known.length ? ` (gateways: ${known.join(', ')})` : ' (define it under gateways:)'}`,
        );
        continue;
      }
      const targets = lname ? ls.filter((l) => l.name === lname) : ls;
      if (targets.length === 0) this.fail([...path, 'gateways'], `gateway ${gname} has no listener ${lname}`);
      for (const l of targets) {
        const key = `${gname}/${l.name}`;
        const own = gwPolicies.get(key);
        const inherited = this.mergeInherited(undefined, [
          { policies: targeted.gateway.get(gname), override: this.#overrides.gateway.get(gname) },
          { policies: own },
          { policies: targeted.listener.get(key), override: this.#overrides.listener.get(key) },
        ]);
        const ownAt = own && this.#inheritedAt.get(own);
        if (inherited)
          this.#inheritedAt.set(
            inherited,
            (k) => this.targetedAt('listener', key, k) ?? ownAt?.(k) ?? this.targetedAt('gateway', gname, k),
          );
        out.push({ l, key, inherited });
      }
    }
    return out;
  }

  /** The ai backend of the llm block: its models (providers resolved, keys sealed) and virtual models. */
  aiTarget(llm: LlmConfig, path: FieldPath): AiTarget | undefined {
    const models: LlmModelIR[] = [];
    let ok = true;
    llm.models.forEach((m, i) => {
      const ir = this.llmModel(llm, m, [...path, 'models', i]);
      if (ir) models.push(ir);
      else ok = false;
    });
    const patterns = llm.models.map((m) => m.name);
    const virtualModels: LlmVirtualModelIR[] = [];
    for (const v of llm.virtualModels ?? []) {
      const to = (t: { model: string }) => ({ model: matchModelName(patterns, t.model) ?? -1, as: t.model });
      const r = v.routing;
      const routing: LlmRoutingIR =
        'weighted' in r
          ? { weighted: r.weighted.targets.map((t) => ({ ...to(t), weight: t.weight ?? 1 })) }
          : 'failover' in r
            ? { failover: r.failover.targets.map((t) => ({ ...to(t), priority: t.priority })) }
            : {
                conditional: r.conditional.targets.map((t) => ({
                  ...to(t),
                  ...(t.when !== undefined ? { when: t.when } : {}),
                })),
              };
      virtualModels.push({ name: v.name, routing });
    }
    // A target naming no model is reported by checkLlm.
    return ok ? { kind: 'ai', models, virtualModels } : undefined;
  }

  /**
   * A route's `ai` backend (agentgateway's form): one provider, or priority groups of them. Each
   * provider is a model `*` built by llmModel; groups are a virtual model `*` failing over between
   * them in group order.
   */
  routeAiTarget(
    path: FieldPath,
    ai: AiBackend,
    outer?: AiPolicy,
    backendName?: string,
  ): AiTarget | undefined {
    const grouped = 'groups' in ai;
    const groups = grouped ? ai.groups.map((g) => g.providers) : [[ai]];
    const models: LlmModelIR[] = [];
    const failover: (LlmTargetIR & { priority: number })[] = [];
    const names = new Set<string>();
    const routes = this.routeTable();
    let ok = true;
    groups.forEach((providers, gi) => {
      providers.forEach((p, pi) => {
        const pp = grouped ? [...path, 'groups', gi, 'providers', pi] : path;
        if (names.has(p.name)) this.fail([...pp, 'name'], `provider names must be unique: ${p.name}`);
        names.add(p.name);
        const ir = this.aiProviderModel(p, pp, grouped ? 'internal' : 'public', outer, backendName);
        if (!ir) {
          ok = false;
          return;
        }
        routes.add([...pp, 'policies', 'ai', 'routes'], mergeAi(outer, p.policies?.ai)?.routes);
        failover.push({ model: models.length, priority: gi });
        ir.entry = p.name;
        models.push(ir);
      });
    });
    if (!ok) return undefined;
    const virtualModels: LlmVirtualModelIR[] = grouped ? [{ name: '*', routing: { failover } }] : [];
    // the route's list, else the first provider's own
    const first = grouped ? ai.groups[0]?.providers[0] : ai;
    const modelList = outer?.models ?? first?.policies?.ai?.models;
    return { kind: 'ai', models, virtualModels, ...routes.ir(), ...(modelList ? { modelList } : {}) };
  }

  /**
   * A backend's model list (what the controller sends for GwModels): each entry is an ai backend
   * provider serving the names its `match` covers; virtual model targets name an entry.
   */
  llmModelsTarget(path: FieldPath, spec: LlmModelsBackend, outer?: AiPolicy): AiTarget | undefined {
    const models: LlmModelIR[] = [];
    const index = new Map<string, number>();
    const routes = this.routeTable();
    let ok = true;
    spec.models.forEach((m, i) => {
      const mp = [...path, 'models', i];
      if (index.has(m.name)) this.fail([...mp, 'name'], `model names must be unique: ${m.name}`);
      const { match, visibility, authorization, requestHeaders, responseHeaders, ...provider } = m;
      const ir = this.aiProviderModel(provider, mp, visibility ?? 'public', outer);
      if (!ir) {
        ok = false;
        return;
      }
      routes.add([...mp, 'policies', 'ai', 'routes'], mergeAi(outer, provider.policies?.ai)?.routes);
      ir.name = match;
      ir.entry = m.name;
      if (authorization) {
        this.report(checkAuthorization(authorization, [...mp, 'authorization']));
        ir.authorization = authorization;
      }
      if (requestHeaders) ir.requestHeaders = requestHeaders;
      if (responseHeaders) ir.responseHeaders = responseHeaders;
      index.set(m.name, models.length);
      models.push(ir);
    });
    const virtualModels: LlmVirtualModelIR[] = [];
    (spec.virtualModels ?? []).forEach((v, vi) => {
      const vp = [...path, 'virtualModels', vi, 'routing'];
      const r = v.routing;
      const kind = 'weighted' in r ? 'weighted' : 'failover' in r ? 'failover' : 'conditional';
      const to = (t: { model: string; as?: string | undefined }, ti: number): LlmTargetIR => {
        const model = index.get(t.model);
        if (model === undefined) {
          this.fail([...vp, kind, ti, 'model'], `no model named ${JSON.stringify(t.model)} in models`);
          ok = false;
        }
        return { model: model ?? -1, ...(t.as !== undefined ? { as: t.as } : {}) };
      };
      const routing: LlmRoutingIR =
        'weighted' in r
          ? { weighted: r.weighted.map((t, ti) => ({ ...to(t, ti), weight: t.weight })) }
          : 'failover' in r
            ? { failover: r.failover.map((t, ti) => ({ ...to(t, ti), priority: ti })) }
            : {
                conditional: r.conditional.map((t, ti) => ({
                  ...to(t, ti),
                  ...(t.when !== undefined ? { when: t.when } : {}),
                })),
              };
      virtualModels.push({ name: v.match, routing });
    });
    return ok ? { kind: 'ai', models, virtualModels, ...routes.ir() } : undefined;
  }

  /**
   * The `routes` of an ai backend's providers, which must agree: which API a request is must be
   * known before a provider is chosen (its policies read llm.* first). Unset everywhere: none.
   */
  routeTable() {
    let first: { text: string; routes: Record<string, AiRouteType> | undefined } | undefined;
    return {
      add: (at: FieldPath, routes: Record<string, AiRouteType> | undefined) => {
        const text = JSON.stringify(Object.entries(routes ?? {}).sort());
        if (!first) first = { text, routes };
        else if (first.text !== text)
          this.fail(
            at,
            "every provider of an ai backend has the same routes (a request's API is read before a provider is chosen)",
          );
      },
      ir: (): Pick<AiTarget, 'routes'> => {
        const r = first?.routes;
        if (!r || Object.keys(r).length === 0) return {};
        const entries = Object.entries(r).sort(
          ([a], [b]) =>
            Number(a === '*') - Number(b === '*') || b.length - a.length || (a < b ? -1 : a > b ? 1 : 0),
        );
        return { routes: entries };
      },
    };
  }

  /** One provider of a route's ai backend, as the llm block's model `*` of that provider. */
  aiProviderModel(
    p: AiNamedProvider,
    pp: FieldPath,
    visibility: 'public' | 'internal',
    outer?: AiPolicy,
    /** A named backend's name: policies targeting this provider (`section`) apply under its own. */
    backendName?: string,
  ): LlmModelIR | undefined {
    const k = p.provider;
    const params: LlmParams = {};
    let provider: LlmModel['provider'];
    if ('openAI' in k) provider = 'openai';
    else if ('anthropic' in k) provider = 'anthropic';
    else if ('gemini' in k) provider = 'gemini';
    else if ('mistral' in k) provider = 'mistral';
    else if ('vertex' in k) {
      provider = 'vertex';
      params.vertexProject = k.vertex.projectId;
      if (k.vertex.region !== undefined) params.vertexRegion = k.vertex.region;
    } else if ('bedrock' in k) {
      provider = 'bedrock';
      params.awsRegion = k.bedrock.region;
    } else if ('azure' in k) {
      provider = 'azure';
      params.azureResourceName = k.azure.resourceName;
      params.azureResourceType = k.azure.resourceType;
      if (k.azure.apiVersion !== undefined) params.azureApiVersion = k.azure.apiVersion;
      if (k.azure.projectName !== undefined) params.azureProjectName = k.azure.projectName;
    } else if ('copilot' in k) provider = 'copilot';
    else provider = { custom: k.custom };
    const settings = Object.values(k)[0] as { model?: string };
    if (settings.model !== undefined && !('custom' in k)) params.model = settings.model;
    if (p.hostOverride !== undefined) params.hostOverride = p.hostOverride;
    if (p.pathOverride !== undefined) params.pathOverride = p.pathOverride;
    if (p.pathPrefix !== undefined) params.pathPrefix = p.pathPrefix;
    // a policy targeting this provider (section) under the provider's own
    const providerPolicies = mergePolicies(
      this.sectionPolicies(backendName, p.name) as NonNullable<AiNamedProvider['policies']> | undefined,
      p.policies ?? undefined,
    );
    const {
      backendAuth,
      ai: own,
      transformations,
      sessionAffinity,
      inferenceRouting,
      ...policies
    } = providerPolicies ?? {};
    if (own) this.report(checkAiPolicy(own, [...pp, 'policies', 'ai']));
    if (inferenceRouting)
      this.fail(
        [...pp, 'policies', 'inferenceRouting'],
        'inferenceRouting picks one of the endpoints of a service backend; an ai provider has none to pick from',
      );
    if (sessionAffinity)
      this.fail(
        [...pp, 'policies', 'sessionAffinity'],
        "sessionAffinity chooses among an ai backend's providers: set it on the backend's policies, not on one provider",
      );
    const ai = mergeAi(outer, own);
    if (transformations)
      this.fail(
        [...pp, 'policies', 'transformations'],
        'transformations on an ai provider is not supported by this build of gw yet (set it on the route or the backend)',
      );
    const m: LlmModel = { name: '*', visibility, provider, params };
    if (
      backendAuth &&
      typeof backendAuth === 'object' &&
      'key' in backendAuth &&
      (typeof backendAuth.key === 'string' || 'file' in backendAuth.key)
    ) {
      const k = backendAuth.key;
      if (typeof k === 'string') params.apiKey = k;
      else {
        // read here, so a file that cannot be read is named at this shape's path
        const text = this.readMaterial([...pp, 'policies', 'backendAuth', 'key', 'file'], k);
        if (text === undefined) return undefined;
        params.apiKey = text.trim();
      }
      // the extra credentials beside the provider's key are the gateway's to write
      if (backendAuth.credentials) m.auth = { credentials: backendAuth.credentials };
    } else if (backendAuth) m.auth = backendAuth;
    if (policies.backendTLS) m.backendTLS = policies.backendTLS;
    if (ai?.defaults) m.defaults = ai.defaults;
    if (ai?.overrides) m.overrides = ai.overrides;
    if (ai?.promptGuard) m.guardrails = ai.promptGuard;
    if (ai?.promptCaching) m.promptCaching = ai.promptCaching;
    if (ai?.transformations) m.transformation = ai.transformations;
    if (ai?.finalTransformations) m.finalTransformation = ai.finalTransformations;
    const ir = this.llmModel({ models: [m] }, m, pp);
    if (!ir) return undefined;
    const prompts = ai?.prompts ? promptEnrichmentIR(ai.prompts) : undefined;
    if (prompts) ir.prompts = prompts;
    if (ai?.modelAliases && Object.keys(ai.modelAliases).length > 0) ir.modelAliases = { ...ai.modelAliases };
    if ('openAI' in k && k.openAI.moderation && ir.provider.kind === 'openai') {
      const { model, policy } = k.openAI.moderation;
      const rules: NonNullable<OpenAIModerationIR['policy']> = {};
      if (policy?.input) rules.input = { mode: policy.input.mode };
      if (policy?.output) rules.output = { mode: policy.output.mode };
      ir.provider.settings.moderation = {
        model: model ?? DEFAULT_MODERATION_MODEL,
        ...(policy ? { policy: rules } : {}),
      };
      // a request sent as it came is not moderated: say so where the setting is
      const unmoderated = Object.entries(ai?.routes ?? {})
        .filter(([, t]) => t === 'passthrough' || t === 'detect')
        .map(([path, t]) => `${path} (${t})`);
      if (unmoderated.length > 0)
        this.src.warnings.push(
          this.src.issueAt(
            [...pp, 'provider', 'openAI', 'moderation'],
            `moderation is written into the chat completions and responses requests gw reads, not into those it sends as they came: ${unmoderated.join(', ')} go unmoderated`,
          ),
        );
    }
    if ('bedrock' in k && ir.provider.kind === 'bedrock') {
      const { guardrailIdentifier: identifier, guardrailVersion: version } = k.bedrock;
      if (identifier !== undefined)
        ir.provider.settings.guardrail = { identifier, version: version ?? 'DRAFT' };
      const meta = k.bedrock.requestMetadata;
      if (meta) {
        meta.forEach((m, i) => {
          if (m.expression !== undefined)
            this.report(
              checkCel(m.expression, [...pp, 'provider', 'bedrock', 'requestMetadata', i, 'expression']),
            );
        });
        ir.requestMetadata = meta.map((m) =>
          m.expression !== undefined
            ? { key: m.key, expression: m.expression }
            : { key: m.key, value: m.value ?? '' },
        );
      }
    }
    ir.policies = this.resolveBackendPolicies([...pp, 'policies'], policies);
    // the provider's call takes its header changes and passive health as an llm.models entry does
    const rp = ir.policies;
    if (rp.requestHeaderModifier) ir.requestHeaders = rp.requestHeaderModifier;
    if (rp.responseHeaderModifier) ir.responseHeaders = rp.responseHeaderModifier;
    if (rp.health) ir.health = rp.health;
    if (rp.requestRedirect)
      this.fail(
        [...pp, 'policies', 'requestRedirect'],
        'requestRedirect does not apply to an ai provider (set it on the route)',
      );
    for (const k of ['authorization', 'extAuthz'] as const)
      if (rp[k])
        this.fail(
          [...pp, 'policies', k],
          `${k} on an ai provider is not supported by this build of gw yet (set it on the ai backend's policies or the route)`,
        );
    if (p.tokenize) this.fail([...pp, 'tokenize'], 'tokenize is not supported by this build of gw yet');
    return ir;
  }

  llmModel(llm: LlmConfig, m: LlmModel, mp: FieldPath): LlmModelIR | undefined {
    const r = resolveLlmProvider(llm, m);
    if (!r) return undefined;
    const { params } = r;
    const d = r.named?.defaults;
    const kind = r.provider;
    const pp = m.params?.apiKey !== undefined ? [...mp, 'params', 'apiKey'] : [...mp, 'provider'];
    let apiKey: Secret | undefined;
    if (typeof params.apiKey === 'string') apiKey = new Secret(params.apiKey);
    else if (params.apiKey) {
      const text = this.readMaterial([...pp, 'file'], params.apiKey);
      if (text === undefined) return undefined;
      apiKey = new Secret(text.trim());
    }
    const common: {
      name: string;
      model?: string;
      apiKey?: Secret;
      endpoint?: { host: string; port: number; tls: boolean };
      path?: string;
      pathPrefix?: string;
    } = { name: '' };
    const tls = m.backendTLS ?? m.tls ?? d?.backendTLS ?? d?.tls;
    const tunnel = m.backendTunnel ?? d?.backendTunnel;
    if (params.baseUrl !== undefined) {
      let u: URL;
      try {
        u = new URL(params.baseUrl);
      } catch {
        this.fail(
          m.params?.baseUrl !== undefined ? [...mp, 'params', 'baseUrl'] : [...mp, 'provider'],
          `invalid URL ${JSON.stringify(params.baseUrl)}`,
        );
        return undefined;
      }
      const https = u.protocol === 'https:';
      const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
      common.endpoint = { host, port: u.port ? Number(u.port) : https ? 443 : 80, tls: https };
      // no path (or `/`): the provider's own prefix (`/v1` …) stays, as agentgateway reads it
      const prefix = u.pathname.replace(/\/+$/, '');
      if (prefix !== '') common.pathPrefix = prefix;
    } else if (params.hostOverride !== undefined) {
      const h = params.hostOverride;
      const i = h.lastIndexOf(':');
      const hasPort = i > h.lastIndexOf(']');
      let host = hasPort ? h.slice(0, i) : h;
      if (host.startsWith('[')) host = host.slice(1, -1);
      const secure = tls !== undefined;
      common.endpoint = { host, port: hasPort ? Number(h.slice(i + 1)) : secure ? 443 : 80, tls: secure };
    }
    if (params.pathOverride !== undefined) common.path = params.pathOverride;
    if (params.pathPrefix !== undefined) common.pathPrefix = params.pathPrefix.replace(/\/+$/, '');
    if (apiKey) common.apiKey = apiKey;
    const auth = m.auth ?? d?.auth;
    let gatewayAuth: BackendAuthIR | undefined;
    if (auth !== undefined) {
      const ap = m.auth !== undefined ? [...mp, 'auth'] : [...mp, 'provider'];
      const resolved = resolveBackendAuth(this, ap, auth);
      if (!resolved) return undefined;
      const credentialsOnly = Object.keys(resolved).every((k) => k === 'credentials');
      if (apiKey && !credentialsOnly) {
        this.fail(ap, 'set params.apiKey or auth, not both (auth.credentials alone may stand beside it)');
        return undefined;
      }
      // a key alone is the provider's key, sent its way (x-api-key, api-key, a bearer …); the extra
      // credentials beside it are written by the gateway
      if ('key' in resolved && resolved.key.location === undefined) {
        common.apiKey = resolved.key.value;
        if (resolved.credentials) gatewayAuth = { credentials: resolved.credentials };
      } else gatewayAuth = resolved;
    }
    let provider: LlmProviderIR;
    if (kind === 'openai' || kind === 'openAI') {
      provider = { ...common, kind: 'openai', name: 'openai', settings: {} };
    } else if (kind === 'mistral') {
      provider = { ...common, kind: 'mistral', name: 'mistral', settings: {} };
    } else if (kind === 'bedrock') {
      const settings = { region: params.awsRegion ?? 'us-east-1' };
      provider = { ...common, kind: 'bedrock', name: 'bedrock', settings };
    } else if (kind === 'gemini') {
      provider = { ...common, kind: 'gemini', name: 'gemini', settings: {} };
    } else if (kind === 'vertex') {
      // checkLlm refuses a vertex model without vertexProject.
      const settings = { project: params.vertexProject ?? '', region: params.vertexRegion ?? 'global' };
      provider = { ...common, kind: 'vertexAI', name: 'vertexAI', settings };
    } else if (kind === 'anthropic') {
      provider = { ...common, kind: 'anthropic', name: 'anthropic', settings: {} };
    } else if (kind === 'copilot') {
      provider = { ...common, kind: 'copilot', name: 'copilot', settings: {} };
    } else if (kind === 'azure') {
      const settings: LlmProviderIR<'azureOpenAI'>['settings'] = {};
      if (params.azureResourceName !== undefined) settings.resourceName = params.azureResourceName;
      if (params.azureResourceType !== undefined) settings.resourceType = params.azureResourceType;
      if (params.azureApiVersion !== undefined) settings.apiVersion = params.azureApiVersion;
      if (params.azureProjectName !== undefined) settings.projectName = params.azureProjectName;
      provider = { ...common, kind: 'azureOpenAI', name: 'azureOpenAI', settings };
    } else if (llmPreset(kind)) {
      // a named OpenAI-compatible provider: a custom one at its documented address, unless moved
      const preset = llmPreset(kind) as LlmPreset;
      common.endpoint ??= { host: preset.host, port: preset.port, tls: preset.tls };
      common.pathPrefix ??= preset.pathPrefix;
      const formats = preset.formats.map((f) => ({
        format: CUSTOM_FORMATS[f.type] as LlmFormat,
        ...(f.path !== undefined ? { path: f.path } : {}),
      }));
      provider = { ...common, kind: 'custom', name: kind as string, settings: { formats } };
    } else if (typeof kind === 'object' && 'custom' in kind) {
      const c = kind.custom;
      const formats: LlmProviderIR<'custom'>['settings']['formats'] = [];
      let good = true;
      c.formats.forEach((f, fi) => {
        const format = CUSTOM_FORMATS[f.type];
        if (!format) {
          this.fail(
            [...mp, 'provider', 'custom', 'formats', fi, 'type'],
            `format ${f.type} is not supported by this build of gw yet`,
          );
          good = false;
          return;
        }
        formats.push({ format, ...(f.path !== undefined ? { path: f.path } : {}) });
      });
      if (!good) return undefined;
      if (c.model !== undefined && params.model === undefined) common.model = c.model;
      provider = { ...common, kind: 'custom', name: c.providerOverride ?? 'custom', settings: { formats } };
    } else {
      // refused by the schema
      return undefined;
    }
    if (params.model !== undefined) provider.model = params.model;
    if (gatewayAuth) provider.auth = providerAuthDefaults(gatewayAuth, provider);
    const out: LlmModelIR = {
      name: m.name,
      visibility: m.visibility ?? 'public',
      provider,
      policies:
        tls || tunnel
          ? this.resolveBackendPolicies(m.backendTLS || m.tls || m.backendTunnel ? mp : [...mp, 'provider'], {
              ...(tls ? { backendTLS: tls } : {}),
              ...(tunnel ? { backendTunnel: tunnel } : {}),
            })
          : {},
    };
    const defaults = { ...d?.defaults, ...m.defaults };
    const overrides = { ...d?.overrides, ...m.overrides };
    const transformation = { ...d?.transformation, ...m.transformation };
    if (Object.keys(defaults).length > 0) out.defaults = defaults;
    if (Object.keys(overrides).length > 0) out.overrides = overrides;
    if (Object.keys(transformation).length > 0) out.transformation = transformation;
    if (m.finalTransformation && Object.keys(m.finalTransformation).length > 0)
      out.finalTransformation = m.finalTransformation;
    const reqH = m.requestHeaders ?? d?.requestHeaders;
    const resH = m.responseHeaders ?? d?.responseHeaders;
    if (reqH) out.requestHeaders = reqH;
    if (resH) out.responseHeaders = resH;
    // a name is a set of llm.guardrails (checkLlm reported one that is not there)
    const named = typeof m.guardrails === 'string' ? m.guardrails : undefined;
    const own =
      named === undefined
        ? (m.guardrails as Exclude<typeof m.guardrails, string>)
        : llm.guardrails && Object.hasOwn(llm.guardrails, named)
          ? llm.guardrails[named]
          : undefined;
    const guards = own ?? (m.guardrails === undefined ? llm.policies?.guardrails : undefined);
    const at = typeof m.guardrails === 'string' ? ['llm', 'guardrails', m.guardrails] : [...mp, 'guardrails'];
    if (guards) out.guards = promptGuardIR(guards, this.guardContext(at));
    // an empty list is no condition, as agentgateway reads it
    if (m.matches?.length) out.matches = m.matches;
    if (m.passthrough) out.passthrough = m.passthrough;
    const caching = m.promptCaching ?? d?.promptCaching;
    if (caching) out.promptCaching = promptCachingIR(caching);
    const health = m.health ?? d?.health;
    if (health) out.health = health;
    if (m.authorization) out.authorization = m.authorization;
    return out;
  }

  #alpnWarned = false;

  serverTls(
    path: FieldPath,
    protocol: ListenerProtocol,
    tls: ListenerTLS | undefined,
  ): TlsServerIR | undefined {
    if (protocol === 'HTTP' || protocol === 'TCP') {
      if (tls)
        this.fail(
          [...path],
          `tls is set but protocol is ${protocol} (use ${protocol === 'HTTP' ? 'HTTPS' : 'TLS'})`,
        );
      return undefined;
    }
    if (!tls) {
      // protocol TLS without tls: the TLS passes through to the backend, routed by its SNI
      if (protocol === 'TLS') return undefined;
      this.fail(path, 'protocol HTTPS needs tls with cert and key');
      return undefined;
    }
    const cert = this.readMaterial([...path, 'cert'], tls.cert);
    const key = this.readMaterial([...path, 'key'], tls.key);
    const root = tls.root ? this.readMaterial([...path, 'root'], tls.root) : undefined;
    const rootProblem = root === undefined ? undefined : caCertificatesProblem(root);
    if (rootProblem) this.fail([...path, 'root'], rootProblem);
    if (cert === undefined || key === undefined || rootProblem) return undefined;
    try {
      createSecureContext({ cert, key, ...(root ? { ca: root } : {}) });
    } catch (err) {
      this.fail(path, `certificate and key do not load: ${(err as Error).message}`);
      return undefined;
    }
    // frontendPolicies.tls gives each setting a listener leaves out
    const f = this.cfg.frontendPolicies?.tls;
    const handshake = serverHandshake({
      minVersion: tls.minTLSVersion ?? f?.minVersion,
      maxVersion: tls.maxTLSVersion ?? f?.maxVersion,
      cipherSuites: tls.cipherSuites ?? f?.cipherSuites,
      keyExchangeGroups: tls.keyExchangeGroups ?? f?.keyExchangeGroups,
    });
    if ('error' in handshake) {
      this.fail(
        [...path, handshake.field === 'maxVersion' ? 'maxTLSVersion' : handshake.field],
        handshake.error,
      );
      return undefined;
    }
    const out: TlsServerIR = { cert, key: new Secret(key), ...handshake.ok };
    if (root) out.root = root;
    if (f?.alpn) {
      out.alpn = [...f.alpn];
      if (protocol === 'HTTPS' && !this.#alpnWarned && !f.alpn.some((p) => p === 'h2' || p === 'http/1.1')) {
        this.#alpnWarned = true;
        this.src.warnings.push(
          this.src.issueAt(
            ['frontendPolicies', 'tls', 'alpn'],
            'lists neither h2 nor http/1.1: an HTTPS listener then serves only clients that offer no ALPN (as HTTP/1.1)',
          ),
        );
      }
    }
    return out;
  }

  targetedPolicies() {
    const out = {
      gateway: new ReadMap<TrafficPolicies>(),
      listener: new ReadMap<TrafficPolicies>(),
      route: new ReadMap<TrafficPolicies>(),
      backend: new ReadMap<TrafficPolicies>(),
    };
    /** By listener, the policies that target its gateway's listeners on its port. */
    const onPort = new Map<string, TrafficPolicies>();
    /**
     * By target, its `inheritance: override` policies merged (apart from its others): their fields
     * are fixed for everything more specific, with their values.
     */
    const overrides: Record<'gateway' | 'listener' | 'route', Map<string, TrafficPolicies>> = {
      gateway: new Map(),
      listener: new Map(),
      route: new Map(),
    };
    const onPortOverrides = new Map<string, TrafficPolicies>();
    this.#overrides = overrides;
    (this.cfg.policies ?? []).forEach((p, i) => {
      const [kind, name] = Object.entries(p.target)[0] as unknown as [
        keyof typeof out | 'gatewayPort',
        string,
      ];
      if (p.phase === 'gateway') {
        // its expressions run before there is a route to read
        withUnavailable(GATEWAY_PHASE_UNKNOWN, GATEWAY_PHASE_WHY, gatewayPhaseReadsRequest, () =>
          this.trafficChecks(['policies', i, 'policy'], p.policy),
        );
        this.gatewayPhasePolicy(i, kind, name, p.policy, p.inheritance);
        return;
      }
      this.trafficChecks(['policies', i, 'policy'], p.policy);
      const override = p.inheritance === 'override';
      if (override && kind === 'backend')
        this.fail(
          ['policies', i, 'inheritance'],
          'inheritance applies to policies on a gateway, listener or route: backend policies merge without it',
        );
      if (kind === 'gatewayPort') {
        const keys = this.portTargets(i, name);
        for (const key of keys) {
          onPort.set(key, mergePolicies(onPort.get(key), p.policy) ?? {});
          if (override) onPortOverrides.set(key, mergePolicies(onPortOverrides.get(key), p.policy) ?? {});
        }
        return;
      }
      // a backend runs backend policies only: a route's (jwtAuth, cors, retry …) would never run there
      if (kind === 'backend')
        for (const [k, v] of Object.entries(p.policy)) {
          if (v === undefined || (BACKEND_POLICY_NAMES.has(k) && !NOT_BUILT_BACKEND_POLICIES.includes(k)))
            continue;
          this.fail(
            ['policies', i, 'policy', k],
            NOT_BUILT_BACKEND_POLICIES.includes(k)
              ? `${k} as a backend policy is not supported by this build of gw yet (target the route)`
              : `${k} is a route policy: a policy that targets a backend takes backend policies (target the route, gateway or listener)`,
          );
        }
      // one part of a backend (an mcp target, an ai provider): its own policies, kept apart
      const section = (p.target as { section?: string }).section;
      if (kind === 'backend' && section !== undefined) {
        const key = sectionKey(name, section);
        const had = this.#sections.get(key);
        this.#sections.set(key, {
          policy: mergePolicies(had?.policy, p.policy) ?? {},
          at: [...(had?.at ?? []), i],
        });
        return;
      }
      out[kind].set(name, mergePolicies(out[kind].peek(name), p.policy) ?? {});
      const at = `${kind}\n${name}`;
      this.#targetIndexes.set(at, [...(this.#targetIndexes.get(at) ?? []), i]);
      if (override && kind !== 'backend')
        overrides[kind].set(name, mergePolicies(overrides[kind].get(name), p.policy) ?? {});
    });
    // a policy on the port is less specific than one on the listener: the listener's wins a field
    for (const [key, policies] of onPort)
      out.listener.set(key, mergePolicies(policies, out.listener.get(key)) ?? {});
    // an override on the port is less specific than one on the listener: the port's wins a field
    for (const [key, policies] of onPortOverrides)
      overrides.listener.set(key, mergePolicies(overrides.listener.get(key), policies) ?? {});
    // what a gateway's own policies fix, for routes that inherit them alone (the llm and mcp blocks
    // on a port of their own)
    for (const [key, override] of overrides.gateway) {
      const policies = out.gateway.get(key);
      const { fixed } = mergeLocked(undefined, [{ policies, override }]);
      if (policies && fixed) this.#fixed.set(policies, fixed);
    }
    return out;
  }

  /** The listeners policies[i] targets on a gateway's port; none is a warning (it applies to nothing). */
  portTargets(i: number, target: string): string[] {
    const keys = this.listenersOnPort(target);
    if (keys.length === 0) {
      const [gateway, port] = splitGatewayPort(target);
      this.src.warnings.push(
        this.src.issueAt(
          ['policies', i, 'target', 'gateway', 'port'],
          `gateway ${JSON.stringify(gateway)} has no listener on port ${port}: the policy applies to nothing`,
        ),
      );
    }
    return keys;
  }

  /**
   * The listeners (`<gateway>/<listener>`, as routes are keyed) of the gateway on the port a
   * `<gateway>:<port>` target names: in `binds` (a listener's gateway is its gatewayName, else
   * bind/<port>) and in `gateways` (one port each).
   */
  listenersOnPort(target: string): string[] {
    const [gateway, port] = splitGatewayPort(target);
    const keys: string[] = [];
    for (const bind of this.cfg.binds ?? [])
      bind.listeners.forEach((l, li) => {
        const n = bindListenerName(bind.port, l, li);
        if (bind.port === port && n.gateway === gateway) keys.push(`${gateway}/${n.name}`);
      });
    const gw = this.cfg.gateways?.[gateway];
    if (gw && gw.port === port)
      (gw.listeners ?? [{}]).forEach((l, li) => {
        keys.push(`${gateway}/${gatewayListenerName(gw, l, li)}`);
      });
    return keys;
  }

  // ---------- tcp routes ----------

  /** A TCP or TLS listener's route: its hostnames (the SNI it takes) and weighted backends. */
  tcpRoute(path: FieldPath, parent: string, protocol: ListenerProtocol, r: TcpRoute): TcpRouteIR {
    const name = r.name ?? `tcproute${path[path.length - 1]}`;
    this.report(checkTcpRouteHostnames(protocol, r.hostnames, path));
    const qualified = r.namespace ? `${r.namespace}/${name}` : name;
    const backends: TcpBackendIR[] = [];
    (r.backends ?? []).forEach((b, bi) => {
      if ('service' in b) {
        backends.push(...this.tcpServiceBackends([...path, 'backends', bi], b, r.policies?.backendTLS));
        return;
      }
      if ('dynamic' in b) {
        const ir = this.tcpDynamicBackend([...path, 'backends', bi], b, protocol, r.policies?.backendTLS);
        if (ir) backends.push(ir);
        return;
      }
      const ir = this.tcpBackend([...path, 'backends', bi], b, r.policies?.backendTLS);
      if (ir) backends.push(ir);
    });
    return {
      key: `${parent}/${qualified}${r.ruleName ? `/${r.ruleName}` : ''}`,
      name,
      path: formatPath(path),
      hostnames: (r.hostnames ?? []).map((h) => h.toLowerCase()),
      backends,
    };
  }

  /**
   * A tcp route backend that is a Service: one backend per endpoint (workload), sharing the entry's
   * weight by their capacity, so each connection picks one of them; backendTLS and backendTunnel as
   * for a host.
   */
  tcpServiceBackends(
    path: FieldPath,
    b: Extract<NonNullable<TcpRoute['backends']>[number], { service: unknown }>,
    routeTls: BackendPolicies['backendTLS'],
  ): TcpBackendIR[] {
    const svc = this.serviceTarget([...path, 'service'], b.service);
    if (!svc) return [];
    this.warnNoEndpoint([...path, 'service'], svc);
    const policies = this.tcpEntryPolicies(path, b.policies, routeTls);
    const total = svc.endpoints.reduce((n, e) => n + e.weight, 0);
    return svc.endpoints.map((e) => ({
      name: `${b.service.name}:${b.service.port} (${e.host}:${e.port})`,
      weight: ((b.weight ?? 1) * e.weight) / total,
      target: { kind: 'host' as const, host: e.host, port: e.port },
      policies,
    }));
  }

  /**
   * A tcp route's dynamic backend: each connection dialled at its TLS server name (same port), or
   * where `target` says; a TCP listener's connections name no server, so it needs a target there.
   */
  tcpDynamicBackend(
    path: FieldPath,
    b: Extract<NonNullable<TcpRoute['backends']>[number], { dynamic: unknown }>,
    protocol: ListenerProtocol,
    routeTls: BackendPolicies['backendTLS'],
  ): TcpBackendIR | undefined {
    const target = b.dynamic.target ?? undefined;
    if (target !== undefined) this.report(checkCel(target, [...path, 'dynamic', 'target']));
    else if (protocol === 'TCP') {
      this.fail(
        [...path, 'dynamic'],
        'a TCP listener’s connections name no server to dial: set dynamic.target (CEL giving host:port)',
      );
      return undefined;
    }
    return {
      name: 'dynamic',
      weight: b.weight ?? 1,
      target: { kind: 'dynamic', ...(target !== undefined ? { target } : {}) },
      policies: this.tcpEntryPolicies(path, b.policies, routeTls),
    };
  }

  /**
   * A tcp route backend entry's own backendTLS (else the route's) and backendTunnel, resolved (their
   * problems at the entry's policies when it sets them).
   */
  tcpEntryPolicies(
    path: FieldPath,
    own:
      | { backendTLS?: BackendPolicies['backendTLS']; backendTunnel?: BackendPolicies['backendTunnel'] }
      | null
      | undefined,
    routeTls: BackendPolicies['backendTLS'],
  ): TcpBackendIR['policies'] {
    const tls = own?.backendTLS ?? routeTls;
    const at = own?.backendTLS || own?.backendTunnel ? [...path, 'policies'] : path;
    return tcpPolicies(
      this.resolveBackendPolicies(at, {
        ...(tls ? { backendTLS: tls } : {}),
        ...(own?.backendTunnel ? { backendTunnel: own.backendTunnel } : {}),
      }),
    );
  }

  /**
   * A tcp route backend: host:port (or unix:/path), or a named host backend, whose backendTLS and tcp
   * settings apply; the route's backendTLS is the default, the backend's own policies win.
   */
  tcpBackend(
    path: FieldPath,
    b: Exclude<NonNullable<TcpRoute['backends']>[number], { service: unknown } | { dynamic: unknown }>,
    routeTls: BackendPolicies['backendTLS'],
  ): TcpBackendIR | undefined {
    let host: string;
    let named: BackendPolicies | undefined;
    if ('host' in b) host = b.host;
    else {
      const def = (this.cfg.backends ?? []).find((d) => d.name === b.backend);
      if (!def) {
        const known = (this.cfg.backends ?? []).map((d) => d.name);
        this.fail(
          [...path, 'backend'],
          `no backend named ${JSON.stringify(b.backend)}${known.length ? ` (backends: ${known.join(', ')})` : ''}`,
        );
        return undefined;
      }
      if (!('host' in def)) {
        const kind = Object.keys(def).find((k) => k !== 'name' && k !== 'policies') ?? 'other';
        this.fail(
          [...path, 'backend'],
          `a tcp route backend is a host backend; ${JSON.stringify(b.backend)} is a ${kind} backend`,
        );
        return undefined;
      }
      host = def.host;
      named = def.policies;
    }
    const target = parseHost(host) as TcpBackendIR['target'];
    const merged: BackendPolicies = {};
    const tls = b.policies?.backendTLS ?? named?.backendTLS ?? routeTls;
    if (tls) merged.backendTLS = tls;
    if (named?.tcp) merged.tcp = named.tcp;
    const tunnel = b.policies?.backendTunnel ?? named?.backendTunnel;
    if (tunnel && host.startsWith('unix:'))
      this.fail(
        b.policies?.backendTunnel ? [...path, 'policies', 'backendTunnel'] : [...path, 'backend'],
        UNIX_NO_TUNNEL,
      );
    else if (tunnel) merged.backendTunnel = tunnel;
    const tlsPath = b.policies?.backendTLS || b.policies?.backendTunnel ? [...path, 'policies'] : path;
    const policies = tcpPolicies(this.resolveBackendPolicies(tlsPath, merged));
    // the named backend's passive health: a connection that cannot be made is an unhealthy answer
    const health = named?.health;
    if (health) {
      const at = [...path, 'backend'];
      const name = JSON.stringify('backend' in b ? b.backend : '');
      if (health.active)
        this.fail(
          at,
          `backend ${name} sets health.active, whose HTTP probes a tcp route backend does not take`,
        );
      else if (health.unhealthyExpression)
        this.fail(
          at,
          `backend ${name} sets health.unhealthyExpression, which reads an HTTP response: a tcp route counts connections that fail`,
        );
      else policies.health = health;
    }
    return { name: 'host' in b ? b.host : b.backend, weight: b.weight ?? 1, target, policies };
  }

  // ---------- routes ----------

  route(
    path: FieldPath,
    parent: string,
    r: {
      name?: string | undefined;
      namespace?: string | undefined;
      ruleName?: string | undefined;
      hostnames?: string[] | undefined;
      matches?: RouteMatch[] | undefined;
      policies?: TrafficPolicies | undefined;
      backends?: RouteBackend[] | undefined;
    },
    inherited: TrafficPolicies | undefined,
    targeted: ReturnType<Builder['targetedPolicies']>,
    /** Backends built elsewhere (the llm block's ai backend). */
    built: RouteBackendIR[] = [],
  ): RouteIR {
    const name = r.name ?? `route${path[path.length - 1]}`;
    if (r.policies) this.trafficChecks([...path, 'policies'], r.policies);
    const matches = r.matches && r.matches.length > 0 ? r.matches : [{ path: { pathPrefix: '/' } }];
    matches.forEach((m, mi) => {
      this.report(checkRouteMatch(m, [...path, 'matches', mi]));
    });
    // A route with a namespace (every route from Kubernetes) is also targeted as <namespace>/<name>,
    // and each of its rules is a route of its own, so the rule is part of the key.
    const qualified = r.namespace ? `${r.namespace}/${name}` : name;
    // A target names a route as <namespace>/<name> (agentgateway's form; a route without a
    // namespace is in "default"), or by its name alone. A policy on one rule
    // (<namespace>/<route>/<rule name>) is more specific than one on the route.
    const inNamespace = `${r.namespace ?? 'default'}/${name}`;
    const ruleKey = r.ruleName ? `${inNamespace}/${r.ruleName}` : undefined;
    const ownLayers = [
      { policies: targeted.route.get(name), override: this.#overrides.route.get(name) },
      { policies: targeted.route.get(inNamespace), override: this.#overrides.route.get(inNamespace) },
      ...(ruleKey
        ? [{ policies: targeted.route.get(ruleKey), override: this.#overrides.route.get(ruleKey) }]
        : []),
      { policies: r.policies },
    ];
    const own = mergePolicies(...ownLayers.map((l) => l.policies)) ?? {};
    // fields an override policy on the gateway or listener fixed are theirs, whatever the route says
    const fixedAbove = inherited && this.#fixed.get(inherited);
    const merged = this.mergeInherited(inherited, ownLayers) ?? {};
    // where each of the route's effective policies is written: on it, in a policy targeting it (its
    // rule first, as the most specific), or where what it inherits is
    const inheritedAt = inherited && this.#inheritedAt.get(inherited);
    const writtenAt = (k: string): FieldPath | undefined =>
      (fixedAbove?.has(k) ? inheritedAt?.(k) : undefined) ??
      written([...path, 'policies'], r.policies, k) ??
      (ruleKey ? this.targetedAt('route', ruleKey, k) : undefined) ??
      this.targetedAt('route', inNamespace, k) ??
      this.targetedAt('route', name, k) ??
      inheritedAt?.(k);
    // A prefix rewrite or redirect replaces the prefix a pathPrefix match matched (Gateway API's
    // ReplacePrefixMatch); on an exact or regex match there is none, and it would be put in front of
    // the whole path.
    const notPrefix = matches.find((m) => m.path !== undefined && !('pathPrefix' in m.path));
    if (notPrefix?.path)
      for (const k of ['urlRewrite', 'requestRedirect'] as const) {
        const spec = merged[k]?.path;
        if (spec && 'prefix' in spec)
          this.fail(
            [...(writtenAt(k) ?? [...path, 'policies']), k, 'path', 'prefix'],
            `a prefix ${k === 'urlRewrite' ? 'rewrite' : 'redirect'} replaces what a pathPrefix match matched, and this route matches ${'exact' in notPrefix.path ? 'an exact path' : 'a regex'}: use path.full`,
          );
      }
    const policySources: RouteIR['policySources'] = {};
    const parentSources = this.#delegating.at(-1)?.sources;
    for (const k of Object.keys(merged))
      policySources[k] = k in own && !fixedAbove?.has(k) ? 'route' : (parentSources?.[k] ?? 'gateway');
    const key = `${parent}/${qualified}${r.ruleName ? `/${r.ruleName}` : ''}`;
    const gi = (r.backends ?? []).findIndex((b) => 'routeGroup' in b);
    if (gi !== -1) {
      const group = ((r.backends ?? [])[gi] as { routeGroup: string }).routeGroup;
      const delegating: RouteIR = {
        key,
        name,
        path: formatPath(path),
        hostnames: (r.hostnames ?? []).map((h) => h.toLowerCase()),
        matches,
        policies: {},
        policySources: {},
        backends: [],
        routeGroup: group,
      };
      // the group's routes inherit the merged policies: their backend policies are reported where written
      this.#inheritedAt.set(merged, writtenAt);
      const routes = this.delegate(path, r.backends ?? [], gi, key, merged, policySources, targeted);
      this.#groupRoutes.set(delegating, routes);
      return delegating;
    }
    const backends: RouteBackendIR[] = [...built];
    (r.backends ?? []).forEach((b, bi) => {
      const ir = this.routeBackend([...path, 'backends', bi], b, merged, targeted, writtenAt);
      if (ir) backends.push(ir);
    });
    // `ai` is the LLM policy of the route's ai backends (routeBackend handed it to them), not a layer.
    const { ai: routeAi, ...layers } = merged;
    if (routeAi && (built.length > 0 || !backends.some((b) => b.target.kind === 'ai'))) {
      this.fail(
        r.policies?.ai ? [...path, 'policies', 'ai'] : path,
        built.length > 0
          ? "ai does not apply to the llm or mcp block's route (in the llm block, set these on its models)"
          : "ai applies to routes whose backends are ai backends (this route's are not)",
      );
    }
    return {
      key,
      name,
      path: formatPath(path),
      hostnames: (r.hostnames ?? []).map((h) => h.toLowerCase()),
      matches,
      policies: sealPolicies(layers),
      policySources,
      backends,
    };
  }

  /** Every routeGroup has a name of its own. */
  checkRouteGroups(): void {
    const seen = new Set<string>();
    (this.cfg.routeGroups ?? []).forEach((g, i) => {
      if (seen.has(g.name))
        this.fail(['routeGroups', i, 'name'], `a second routeGroup named ${JSON.stringify(g.name)}`);
      seen.add(g.name);
    });
  }

  /**
   * The routes of the group a route delegates to (its routeGroup backend), each with the delegating
   * route's effective policies under its own, as agentgateway merges them: a policy the group's route
   * sets replaces the one of the same name. An unknown group or a cycle is a config error.
   */
  delegate(
    path: FieldPath,
    backends: RouteBackend[],
    gi: number,
    key: string,
    merged: TrafficPolicies,
    sources: RouteIR['policySources'],
    targeted: ReturnType<Builder['targetedPolicies']>,
  ): RouteIR[] {
    const at = [...path, 'backends', gi];
    const b = backends[gi] as { routeGroup: string; policies?: unknown };
    if (backends.length > 1) {
      this.fail(
        [...path, 'backends'],
        "a route with a routeGroup backend has no other backends (the group's routes name theirs)",
      );
      return [];
    }
    if (b.policies !== undefined) {
      this.fail(
        [...at, 'policies'],
        "policies on a routeGroup backend are not used: set them on the group's routes",
      );
      return [];
    }
    const groups = this.cfg.routeGroups ?? [];
    const index = groups.findIndex((g) => g.name === b.routeGroup);
    if (index === -1) {
      const known = groups.map((g) => g.name);
      this.fail(
        [...at, 'routeGroup'],
        `no routeGroup named ${JSON.stringify(b.routeGroup)}${known.length ? ` (routeGroups: ${known.join(', ')})` : ''}`,
      );
      return [];
    }
    const stack = this.#delegating.map((d) => d.group);
    if (stack.includes(b.routeGroup)) {
      const cycle = [...stack.slice(stack.indexOf(b.routeGroup)), b.routeGroup];
      this.fail([...at, 'routeGroup'], `route delegation cycle: ${cycle.join(' → ')}`);
      return [];
    }
    this.#delegating.push({ group: b.routeGroup, sources });
    try {
      return (groups[index]?.routes ?? []).map((r, ri) =>
        this.route(['routeGroups', index, 'routes', ri], key, r, merged, targeted),
      );
    } finally {
      this.#delegating.pop();
    }
  }

  /** A delegating route followed by its group's routes (and theirs), each marked with its delegator. */
  withGroup(r: RouteIR): RouteIR[] {
    const routes = this.#groupRoutes.get(r);
    if (!routes) return [r];
    return [
      r,
      ...routes.flatMap((c) => this.withGroup(c).map((x) => (x === c ? { ...c, delegatedFrom: r.key } : x))),
    ];
  }

  routeBackend(
    path: FieldPath,
    b: RouteBackend,
    routePolicies: TrafficPolicies,
    targeted: ReturnType<Builder['targetedPolicies']>,
    /** Where each of the route's policies is written (on it, targeting it, or what it inherits). */
    routeAt?: (policy: string) => FieldPath | undefined,
  ): RouteBackendIR | undefined {
    let target: BackendTarget | undefined;
    let name: string;
    let named: BackendPolicies | undefined;
    /** The named backend's policies, where its definition is. */
    let namedAt: FieldPath | undefined;
    if ('host' in b) {
      target = parseHost(b.host, this.opts.hostRewriteByName !== false);
      name = b.host;
    } else if ('ai' in b) {
      name = 'groups' in b.ai ? 'ai' : b.ai.name;
      const outer = mergeAi(routePolicies.ai, targeted.backend.get(name)?.ai, b.policies?.ai);
      target = this.routeAiTarget([...path, 'ai'], b.ai, outer, name);
      if (!target) return undefined;
    } else if ('dynamic' in b) {
      target = this.dynamicTarget([...path, 'dynamic'], b.dynamic);
      name = 'dynamic';
    } else if ('service' in b) {
      name = `${b.service.name}:${b.service.port}`;
      target = this.serviceTarget([...path, 'service'], b.service);
      if (!target) return undefined;
    } else if ('mcp' in b) {
      name = 'mcp';
      target = this.mcpTarget(
        [...path, 'mcp'],
        b.mcp,
        mcpOuter(
          { route: [...path.slice(0, -2), 'policies'], own: [...path, 'policies'] },
          routePolicies,
          targeted.backend.get(name),
          undefined,
          b.policies,
        ),
      );
      if (!target) return undefined;
    } else if ('aws' in b) {
      target = this.awsTarget([...path, 'aws'], b.aws);
      if (!target) return undefined;
      name = 'aws';
    } else if ('invalid' in b) {
      target = { kind: 'invalid' };
      name = 'invalid';
    } else if ('internal' in b) {
      target = internalTarget(b.internal);
      name = 'internal';
    } else if ('routeGroup' in b) {
      return undefined; // route() delegates to the group instead
    } else {
      name = b.backend;
      const def = (this.cfg.backends ?? []).find((d) => d.name === b.backend);
      if (!def) {
        const known = (this.cfg.backends ?? []).map((d) => d.name);
        this.fail(
          [...path, 'backend'],
          `no backend named ${JSON.stringify(b.backend)}${known.length ? ` (backends: ${known.join(', ')})` : ''}`,
        );
        return undefined;
      }
      const di = (this.cfg.backends ?? []).indexOf(def);
      namedAt = ['backends', di, 'policies'];
      const outer = () =>
        mergeAi(routePolicies.ai, targeted.backend.get(name)?.ai, def.policies?.ai, b.policies?.ai);
      if ('ai' in def) {
        target = this.routeAiTarget(['backends', di, 'ai'], def.ai, outer(), name);
        if (!target) return undefined;
      } else if ('llmModels' in def) {
        target = this.llmModelsTarget(['backends', di, 'llmModels'], def.llmModels, outer());
        if (!target) return undefined;
      } else if ('mcp' in def) {
        target = this.mcpTarget(
          ['backends', di, 'mcp'],
          def.mcp,
          mcpOuter(
            { route: [...path.slice(0, -2), 'policies'], own: [...path, 'policies'] },
            routePolicies,
            targeted.backend.get(name),
            def.policies,
            b.policies,
          ),
          name,
        );
        if (!target) return undefined;
      } else if ('aws' in def) {
        target = this.awsTarget(['backends', di, 'aws'], def.aws);
        if (!target) return undefined;
      } else if ('internal' in def) target = internalTarget(def.internal);
      else
        target =
          'host' in def
            ? parseHost(def.host, this.opts.hostRewriteByName !== false)
            : this.dynamicTarget(['backends', di, 'dynamic'], def.dynamic);
      named = def.policies;
    }
    const fromRoute: BackendPolicies = {};
    if (routePolicies.backendTLS) fromRoute.backendTLS = routePolicies.backendTLS;
    if (routePolicies.backendAuth) fromRoute.backendAuth = routePolicies.backendAuth;
    if (routePolicies.backendTunnel) fromRoute.backendTunnel = routePolicies.backendTunnel;
    // a Service is targeted on all its ports (<namespace>/<hostname>) or on one (its backend name)
    const fromTargeted = (
      'service' in b
        ? mergePolicies(targeted.backend.get(b.service.name), targeted.backend.get(name))
        : targeted.backend.get(name)
    ) as BackendPolicies | undefined;
    const merged = mergePolicies(fromRoute, fromTargeted, named, b.policies) ?? {};
    // the ai backend kind took its ai policy above; on any other backend it is a mistake
    if (merged.ai && target.kind !== 'ai')
      this.fail(
        b.policies?.ai ? [...path, 'policies', 'ai'] : path,
        `ai applies to ai backends, not to ${backendKindName(target.kind)}`,
      );
    delete merged.ai;
    // sessionAffinity chooses among an ai backend's providers: the only backend with more than one
    // endpoint to choose from
    const affinity = merged.sessionAffinity;
    delete merged.sessionAffinity;
    if (affinity) {
      const ap = b.policies?.sessionAffinity ? [...path, 'policies', 'sessionAffinity'] : path;
      if (target.kind !== 'ai')
        this.fail(
          ap,
          `sessionAffinity chooses among an ai backend's providers; ${backendKindName(target.kind)} has one endpoint`,
        );
      else {
        this.report(checkCel(affinity.source, [...ap, 'source']));
        for (const v of target.virtualModels) v.sessionAffinity ??= affinity.source;
      }
    }
    // inferenceRouting: an endpoint picker chooses which of a Service's endpoints gets each request
    const inference = merged.inferenceRouting;
    delete merged.inferenceRouting;
    if (inference) {
      const ip = b.policies?.inferenceRouting ? [...path, 'policies', 'inferenceRouting'] : path;
      if (target.kind !== 'service')
        this.fail(
          ip,
          `inferenceRouting picks one of the endpoints of a service backend; ${backendKindName(target.kind)} has none to pick from`,
        );
      else {
        const picker = this.endpointPicker(ip, inference);
        if (picker) target = { ...target, inference: picker };
      }
    }
    if (target.kind === 'service') this.warnNoEndpoint([...path, 'service'], target);
    // hostRewrite decides the host backend's default Host (upstream/call.ts upstreamHost). The
    // route's decides over a backend's own (GwPolicy traffic.hostRewrite over a GwBackend's default).
    const hostRewrite = routePolicies.hostRewrite ?? merged.hostRewrite;
    if (merged.hostRewrite && target.kind !== 'host')
      this.fail(
        b.policies?.hostRewrite ? [...path, 'policies', 'hostRewrite'] : path,
        `hostRewrite applies to host backends, not to ${NOT_A2A[target.kind]}`,
      );
    if (hostRewrite && target.kind === 'host') {
      const { rewriteHost: _, ...t } = target;
      target = hostRewrite.mode === 'auto' ? { ...t, rewriteHost: true } : t;
    }
    delete merged.hostRewrite;
    // agentgateway's a2a, on the route or on the backend, makes a host backend an A2A agent.
    const a2a = merged.a2a ?? routePolicies.a2a;
    delete merged.a2a;
    if (a2a !== undefined) {
      if (target.kind === 'host') target = { kind: 'a2a', host: target.host, port: target.port };
      else
        this.fail(
          [...path, ...(b.policies?.a2a ? ['policies', 'a2a'] : [])],
          `a2a applies only to host backends, not to ${NOT_A2A[target.kind]}`,
        );
    }
    // mcp targets make calls of their own: they took the backendAuth above (mcpTarget's outer).
    if (target.kind === 'mcp') delete merged.backendAuth;
    // An ai provider takes its key in its own policies. Set on the backend itself that is a mistake;
    // from the route or a targeted policy it skips them.
    if (merged.backendAuth && target.kind === 'ai') {
      const own = b.policies?.backendAuth
        ? [...path, 'policies', 'backendAuth']
        : named?.backendAuth
          ? path
          : undefined;
      if (own)
        this.fail(
          own,
          `backendAuth applies to host, dynamic and a2a backends, not to ${NOT_A2A[target.kind]}${target.kind === 'ai' ? " (set the key in the provider's policies)" : ''}`,
        );
      delete merged.backendAuth;
    }
    // A backend's own mcpAuthentication (where GwPolicy backend.mcp.authentication lands) guards an
    // MCP endpoint; the route's is a route policy.
    if (merged.mcpAuthentication) {
      const ap = [...path, 'policies', 'mcpAuthentication'];
      if (target.kind !== 'mcp')
        this.fail(ap, 'mcpAuthentication on a backend applies only to mcp backends (set it on the route)');
      this.mcpAuthenticationFiles(ap, merged.mcpAuthentication);
      this.report(checkMcpAuthentication(merged.mcpAuthentication, ap));
    }
    // Active health checks probe the one endpoint every request goes to.
    if (merged.health?.active && target.kind !== 'host' && target.kind !== 'a2a' && target.kind !== 'unix')
      this.fail(
        [...path, 'policies', 'health', 'active'],
        `health.active probes the one endpoint of a host, a2a or unix backend, not ${NOT_A2A[target.kind]}`,
      );
    // MCP rules accumulate like authorization: the route's, then the backend's own.
    const { mcpAuthorization: _rules, ...rest } = merged;
    // each set of rules checked where it is written (the route's, a policy's, the definition's, its own)
    const rulesAt = [
      [routePolicies.mcpAuthorization, routeAt?.('mcpAuthorization')],
      [
        fromTargeted?.mcpAuthorization,
        this.targetedAt('backend', name, 'mcpAuthorization') ??
          ('service' in b ? this.targetedAt('backend', b.service.name, 'mcpAuthorization') : undefined),
      ],
      [named?.mcpAuthorization, namedAt],
      [b.policies?.mcpAuthorization, [...path, 'policies']],
    ] as const;
    const mcpRules: NonNullable<typeof routePolicies.mcpAuthorization>[] = [];
    for (const [r, at] of rulesAt) {
      if (r === undefined) continue;
      mcpRules.push(r);
      this.report(checkAuthorization(r, [...(at ?? [...path, 'policies']), 'mcpAuthorization']));
    }
    if (target.kind === 'mcp') {
      target.authorization = mcpRules;
      if (routePolicies.mcpRemoteRateLimit)
        target.remoteRateLimit = sealMcpRemoteRateLimit(routePolicies.mcpRemoteRateLimit);
    } else if (routePolicies.mcpRemoteRateLimit)
      this.fail(
        [...(routeAt?.('mcpRemoteRateLimit') ?? [...path, 'policies']), 'mcpRemoteRateLimit'],
        `mcpRemoteRateLimit applies only to mcp backends (use remoteRateLimit on a ${target.kind} backend)`,
      );
    else if (_rules !== undefined || b.policies?.mcpAuthorization)
      this.fail([...path, 'policies', 'mcpAuthorization'], 'mcpAuthorization applies only to mcp backends');
    // Processors are one ordered chain: the most specific block replaces the route's.
    const { mcpGuardrails: ownGuards, ...connection } = rest;
    const guards = ownGuards ?? (target.kind === 'mcp' ? routePolicies.mcpGuardrails : undefined);
    if (target.kind === 'mcp' && guards) {
      const at = ownGuards ? [...path, 'policies'] : [...path.slice(0, -2), 'policies'];
      target.guardrails = this.mcpProcessors([...at, 'mcpGuardrails'], guards);
    } else if (ownGuards)
      this.fail([...path, 'policies', 'mcpGuardrails'], 'mcpGuardrails applies only to mcp backends');
    if (target.kind === 'aws' && merged.backendAuth) {
      const own = b.policies?.backendAuth ? [...path, 'policies', 'backendAuth'] : path;
      this.report(checkAgentCoreAuth(merged.backendAuth, target.agentCore.region, own));
    }
    // Each policy's problems where it is written: on the backend, its named definition, a policy
    // targeting it, the route, or what the route inherits it from (else at the backend).
    const origin = (k: string): FieldPath =>
      written([...path, 'policies'], b.policies, k) ??
      (namedAt && written(namedAt, named, k)) ??
      this.targetedAt('backend', name, k) ??
      ('service' in b ? this.targetedAt('backend', b.service.name, k) : undefined) ??
      routeAt?.(k) ?? [...path, 'policies'];
    const policies = this.resolveBackendPolicies([...path, 'policies'], connection, origin);
    if (target.kind === 'aws') awsAuth(target, policies);
    if (target.kind === 'unix' && policies.backendTunnel)
      this.fail([...origin('backendTunnel'), 'backendTunnel'], UNIX_NO_TUNNEL);
    return { name, weight: b.weight ?? 1, target, policies };
  }

  /**
   * A Service with no endpoint loads with a warning: its requests get 503 (unless an endpoint picker
   * in passthrough mode dials what it picks).
   */
  warnNoEndpoint(path: FieldPath, t: ServiceTarget): void {
    if (t.endpoints.length > 0 || t.inference?.passthrough) return;
    this.src.warnings.push(
      this.src.issueAt(
        path,
        `service ${t.service} has no workload to send requests to (a healthy one in workloads that names it, with a port for ${t.port}): its requests get 503, its connections are closed`,
      ),
    );
  }

  /**
   * A `service` backend: the Service of the file's `services` it names, and its endpoints — the first
   * address of each healthy workload that names it (capacity above 0), at the port the workload maps
   * the Service's port to, else at the Service's own target port.
   */
  serviceTarget(path: FieldPath, ref: { name: string; port: number }): ServiceTarget | undefined {
    const services = this.cfg.services ?? [];
    const slash = ref.name.indexOf('/');
    const [ns, hostname] = [ref.name.slice(0, slash), ref.name.slice(slash + 1)];
    const svc = services.find((x) => x.namespace === ns && x.hostname === hostname);
    if (!svc) {
      const known = services.map((x) => `${x.namespace}/${x.hostname}`);
      this.fail(
        [...path, 'name'],
        `no service ${JSON.stringify(ref.name)} in services${known.length ? ` (services: ${known.join(', ')})` : ' (there are none)'}`,
      );
      return undefined;
    }
    const targetPort = svc.ports[String(ref.port)];
    if (targetPort === undefined) {
      this.fail(
        [...path, 'port'],
        `service ${ref.name} has no port ${ref.port} (ports: ${Object.keys(svc.ports).join(', ') || 'none'})`,
      );
      return undefined;
    }
    const endpoints: ServiceTarget['endpoints'] = [];
    for (const w of this.cfg.workloads ?? []) {
      const ports = w.services[ref.name];
      const weight = w.capacity ?? 1;
      const ip = w.workloadIps[0];
      if (!ports || w.status === 'Unhealthy' || weight === 0 || ip === undefined) continue;
      const mapped = ports[String(ref.port)];
      const port = mapped !== undefined && mapped > 0 ? mapped : targetPort;
      if (port > 0) endpoints.push({ host: ip, port, weight });
    }
    const proto = svc.appProtocols?.[String(ref.port)];
    return {
      kind: 'service',
      service: ref.name,
      port: ref.port,
      endpoints,
      ...(proto === 'Http2' || proto === 'Grpc' ? { http2: true as const } : {}),
    };
  }

  /**
   * A Service a policy calls (`role` says which, in problems): its name as host:port (the authority
   * its calls name, and the name TLS to it verifies) and its endpoints. A Service with no workload to
   * call loads with a warning, its calls going to that name, resolved by DNS, as the tracing
   * collector's are. Undefined (reported at `at`) when the Service is not in `services` or lacks the
   * port.
   */
  policyService(
    at: FieldPath,
    ref: { name: string; port: number },
    role: string,
  ): { authority: string; hostname: string; endpoints: InTurnEndpoint[] } | undefined {
    const t = this.serviceTarget(at, ref);
    if (!t) return undefined;
    const hostname = ref.name.slice(ref.name.indexOf('/') + 1);
    const authority = hostPort(hostname, ref.port);
    if (t.endpoints.length === 0)
      this.src.warnings.push(
        this.src.issueAt(
          at,
          `service ${ref.name} has no workload for ${role} to call (a healthy one in workloads that names it, with a port for ${ref.port}): its calls go to ${authority}, resolved by DNS`,
        ),
      );
    // each workload's capacity is its share of the calls, as for a backend by Service
    const endpoints = t.endpoints.map((e) =>
      e.weight === 1 ? { host: e.host, port: e.port } : { host: e.host, port: e.port, weight: e.weight },
    );
    return { authority, hostname, endpoints };
  }

  /**
   * A policy's gRPC service given by `service` (policyService): the target its gRPC channel dials,
   * grpc-js's ipv4:// or ipv6:// list of the Service's endpoints with the Service's host:port as its
   * authority (policies/grpc-client.ts balances the list round robin and keeps one channel per
   * Service), and the Service's hostname. Undefined (reported at `at`) as policyService, and when the
   * Service mixes IPv4 and IPv6 endpoints.
   */
  grpcService(
    at: FieldPath,
    ref: { name: string; port: number },
    role: string,
  ): { host: string; hostname: string } | undefined {
    const svc = this.policyService(at, ref, role);
    if (!svc) return undefined;
    const { authority, hostname, endpoints } = svc;
    if (endpoints.length === 0) return { host: authority, hostname };
    const v6 = endpoints.filter((e) => isIPv6(e.host));
    if (v6.length > 0 && v6.length < endpoints.length) {
      this.fail(
        at,
        `service ${ref.name} has IPv4 and IPv6 workload addresses, which one gRPC channel to ${role} cannot balance over`,
      );
      return undefined;
    }
    // grpc-js's round robin takes an address as often as it is listed: a workload's capacity is its
    // share of the calls, the list scaled down to at most 64 entries
    const shares = scaledWeights(
      endpoints.map((e) => e.weight ?? 1),
      64,
    );
    const addresses = endpoints.flatMap(
      (e, i) => Array(shares[i]).fill(hostPort(e.host, e.port)) as string[],
    );
    return { host: `${v6.length > 0 ? 'ipv6' : 'ipv4'}://${authority}/${addresses.join(',')}`, hostname };
  }

  /**
   * An HTTP service given by `service` (policyService): called by the Service's host:port, each
   * connection dialled at the next of its endpoints (upstream/in-turn.ts); none: by DNS.
   */
  httpService(
    at: FieldPath,
    ref: { name: string; port: number },
    role: string,
  ): { host: string; endpoints?: InTurnEndpoint[] } | undefined {
    const svc = this.policyService(at, ref, role);
    if (!svc) return undefined;
    return svc.endpoints.length > 0
      ? { host: svc.authority, endpoints: svc.endpoints }
      : { host: svc.authority };
  }

  /**
   * A token endpoint by `backend`: the named host backend's address and its backendTLS (checked and
   * read where the backend says it); its other policies are refused by name.
   */
  namedEndpoint(at: FieldPath, name: string): { host: string; tls?: BackendTlsIR } | undefined {
    const def = this.hostBackend(at, name, 'a token endpoint');
    if (!def) return undefined;
    const refused = refusedNamedPolicies(name, def.policies, 'a token endpoint call', TAKES_TLS);
    if (refused) {
      this.fail(at, refused);
      return undefined;
    }
    const t = def.policies?.backendTLS;
    if (!t) return { host: def.host };
    const tls = this.checkedTls(['backends', def.index, 'policies'], t);
    return tls ? { host: def.host, tls } : undefined;
  }

  /**
   * inferenceRouting's endpoint picker as an ext_proc call: its host, or its named host backend's
   * address and backendTLS (the backend's other policies refused by name). Fail closed, bodies
   * streamed both ways, as agentgateway calls it.
   */
  endpointPicker(path: FieldPath, inf: InferenceRouting): InferenceIR | undefined {
    const ep = inf.endpointPicker;
    let host: string;
    let backendTLS: BackendTlsIR | undefined;
    if ('host' in ep) host = ep.host;
    else if ('service' in ep) {
      const svc = this.grpcService([...path, 'endpointPicker', 'service'], ep.service, 'the endpoint picker');
      if (!svc) return undefined;
      host = svc.host;
    } else {
      const at = [...path, 'endpointPicker', 'backend'];
      const def = this.hostBackend(at, ep.backend, 'an endpoint picker');
      if (!def) return undefined;
      const refused = refusedNamedPolicies(ep.backend, def.policies, 'an endpoint picker call', TAKES_TLS);
      if (refused) this.fail(at, refused);
      host = def.host;
      const tls = def.policies?.backendTLS;
      if (tls) {
        // checked and read where the backend says it
        const bp = ['backends', def.index, 'policies'];
        const problems = checkBackendPolicies({ backendTLS: tls }, bp);
        this.report(problems);
        if (problems.length > 0) return undefined;
        backendTLS = this.resolveTls([...bp, 'backendTLS'], tls);
      }
    }
    return {
      picker: {
        host,
        ...(backendTLS ? { policies: { backendTLS } } : {}),
        failureMode: inf.failureMode ?? 'failClosed',
        processingOptions: { requestBodyMode: 'fullDuplexStreamed', responseBodyMode: 'fullDuplexStreamed' },
      },
      passthrough: inf.destinationMode === 'passthrough',
    };
  }

  /** An `aws` backend: an AgentCore runtime, its region and partition read from its ARN. */
  awsTarget(path: FieldPath, a: AwsBackend): AwsTarget | undefined {
    const c = a.agentCore;
    const before = this.issues.length;
    this.report(checkAgentCore(c, [...path, 'agentCore']));
    const arn = parseAgentRuntimeArn(c.agentRuntimeArn);
    if (!arn || this.issues.length > before) return undefined;
    return {
      kind: 'aws',
      agentCore: {
        agentRuntimeArn: c.agentRuntimeArn,
        region: arn.region,
        host: `bedrock-agentcore.${arn.region}.${awsDnsSuffix(arn.partition)}`,
        ...(c.qualifier ? { qualifier: c.qualifier } : {}),
      },
      auth: { kind: 'sigv4' },
    };
  }

  /**
   * A route's `mcp` backend: its targets (remote ones as origin + path), modes in the CRD's words.
   * `outer`: the backend policies an MCP target takes that the route, a targeted policy or the mcp
   * backend itself sets (at `outer.at`); every target's calls carry them, under the target's own.
   */
  mcpTarget(
    path: FieldPath,
    m: McpBackend,
    outer?: { policies: BackendPolicies; at: FieldPath },
    /** A named backend's name: policies targeting one of its targets (`section`) apply to it. */
    backendName?: string,
  ): McpTarget | undefined {
    const before = this.issues.length;
    this.report(checkMcpBackend(m, path));
    const keepAlive = m.sseKeepAlive == null ? MCP_KEEPALIVE_MS : ms(m.sseKeepAlive, MCP_KEEPALIVE_MS);
    // below 100ms is a flood, not a keep-alive (a duration past what a timer can wait is capped)
    if (keepAlive !== 0 && keepAlive < 100)
      this.fail([...path, 'sseKeepAlive'], 'expected 0s (none) or at least 100ms');
    const pascal = <T extends string>(v: string | null | undefined, d: T): T =>
      (v ? v[0]?.toUpperCase() + v.slice(1) : d) as T;
    const targets: McpTargetIR[] = [];
    m.targets.forEach((t, i) => {
      const tp = [...path, 'targets', i];
      const kind = t.mcp ? 'mcp' : t.sse ? 'sse' : t.openapi ? 'openapi' : undefined;
      const spec = kind && t[kind];
      // a target by backend reference: the backend's host, and its policies under the target's own
      const named = spec && 'backend' in spec && spec.backend !== undefined ? spec.backend : undefined;
      let host = spec && 'host' in spec ? spec.host : undefined;
      const inherited: BackendPolicies = {};
      let namedAt: FieldPath | undefined;
      if (kind && named !== undefined) {
        const defs = this.cfg.backends ?? [];
        const def = defs.find((d) => d.name === named);
        if (!def || !('host' in def)) {
          const hosts = defs.filter((d) => 'host' in d).map((d) => d.name);
          this.fail(
            [...tp, kind, 'backend'],
            `no backend with a host named ${JSON.stringify(named)}${hosts.length ? ` (host backends: ${hosts.join(', ')})` : ''}`,
          );
          return;
        }
        host = def.host;
        namedAt = ['backends', defs.indexOf(def), 'policies'];
        for (const [k, v] of Object.entries(def.policies ?? {}))
          if (v !== undefined && !MCP_TARGET_POLICIES.has(k))
            this.fail(
              [...namedAt, k],
              `${k} of backend ${JSON.stringify(named)} is not taken by MCP target ${t.name} (it takes ${[...MCP_TARGET_POLICIES].join(', ')})`,
            );
          else if (v !== undefined) (inherited as Record<string, unknown>)[k] = v;
      }
      // a policy targeting this target (section) under the target's own
      const targetPolicies = mergePolicies(
        this.sectionPolicies(backendName, t.name, {
          has: (k) => MCP_TARGET_POLICIES.has(k) || k === 'mcpAuthorization',
          what: `MCP target ${t.name} of backend ${JSON.stringify(backendName)} (it takes ${[...MCP_TARGET_POLICIES, 'mcpAuthorization'].join(', ')})`,
        }) as typeof t.policies,
        t.policies ?? undefined,
      );
      const { mcpAuthorization, mcpGuardrails, transformations, ...own } = targetPolicies ?? {};
      // what the route or the mcp backend sets; a stdio process makes no HTTP call to take it, and the
      // client's token (passthrough) goes only with a streamable-HTTP target's per-request calls
      const fromOuter: BackendPolicies = kind ? { ...outer?.policies } : {};
      const outerAuth = fromOuter.backendAuth;
      if (outerAuth && typeof outerAuth === 'object' && 'passthrough' in outerAuth && kind !== 'mcp') {
        delete fromOuter.backendAuth;
        this.src.warnings.push(
          this.src.issueAt(
            [...(outer?.at ?? path), 'backendAuth'],
            `backendAuth passthrough does not reach MCP target ${t.name}: a ${kind} target is not called per client request`,
          ),
        );
      }
      const connection: typeof own = { ...fromOuter, ...inherited, ...own };
      // where a problem with the target's backendAuth is: its own, the named backend's, or the route's
      const authAt: FieldPath =
        own.backendAuth !== undefined
          ? [...tp, 'policies', 'backendAuth']
          : inherited.backendAuth !== undefined && namedAt
            ? [...namedAt, 'backendAuth']
            : outer && fromOuter.backendAuth !== undefined
              ? [...outer.at, 'backendAuth']
              : [...tp, 'policies', 'backendAuth'];
      if (transformations)
        this.fail(
          [...tp, 'policies', 'transformations'],
          'transformations on an MCP target is not supported by this build of gw yet (set it on the route or the mcp backend)',
        );
      if (mcpGuardrails)
        this.fail(
          [...tp, 'policies', 'mcpGuardrails'],
          'mcpGuardrails applies to the whole mcp backend (route or backend policies), not one target',
        );
      for (const k of Object.keys(connection) as (keyof typeof connection)[])
        if (connection[k] !== undefined && !MCP_TARGET_POLICIES.has(k))
          this.fail(
            [...tp, 'policies', k],
            `${k} on an MCP target is not supported by this build of gw yet (it takes ${[...MCP_TARGET_POLICIES].join(', ')})`,
          );
      const auth = connection.backendAuth;
      // passthrough: the client's token, per request, which only a streamable-HTTP target's calls carry
      const passthrough = typeof auth === 'object' && auth !== null && 'passthrough' in auth;
      const passLocation = passthrough ? auth.passthrough.location : undefined;
      if (passLocation && !('header' in passLocation))
        this.fail(
          [...authAt, 'passthrough', 'location'],
          'an MCP target takes the forwarded token in a header (the default, Authorization: Bearer)',
        );
      if (passthrough && !t.mcp)
        this.fail(
          authAt,
          'backendAuth passthrough is for streamable-HTTP (mcp) targets: an sse or openapi target is not called per client request',
        );
      else if (auth && !passthrough && (typeof auth !== 'object' || !mcpTargetAuthForm(auth)))
        this.fail(
          authAt,
          `backendAuth ${typeof auth === 'object' ? Object.keys(auth).find((k) => k !== 'credentials') : auth} on an MCP target is not supported by this build of gw yet (it takes key, passthrough and credentials)`,
        );
      else if (
        typeof auth === 'object' &&
        auth !== null &&
        'key' in auth &&
        typeof auth.key === 'object' &&
        'location' in auth.key &&
        auth.key.location &&
        !('header' in auth.key.location)
      )
        this.fail(
          [...authAt, 'key', 'location'],
          'an MCP target takes its key in a header (the default, Authorization: Bearer)',
        );
      if (typeof auth === 'object' && auth !== null && 'credentials' in auth)
        (auth.credentials ?? []).forEach((c, i) => {
          if (!('header' in c.location))
            this.fail(
              [...authAt, 'credentials', i, 'location'],
              'an MCP target takes its credentials in headers',
            );
        });
      const policies = this.resolveBackendPolicies([...tp, 'policies'], connection);
      if (mcpAuthorization)
        this.report(checkAuthorization(mcpAuthorization, [...tp, 'policies', 'mcpAuthorization']));
      const authorization = mcpAuthorization ? [mcpAuthorization] : [];
      if (t.stdio) {
        const s = t.stdio;
        targets.push({
          name: t.name,
          transport: {
            kind: 'stdio',
            cmd: s.cmd,
            args: s.args ?? [],
            env: s.env ?? {},
            clearEnv: s.clear_env ?? false,
          },
          policies,
          authorization,
        });
        return;
      }
      if (host === undefined) return; // refused by checkMcpBackend
      if (t.openapi) {
        const o = t.openapi;
        const op = [...tp, 'openapi'];
        const where = remoteMcpTarget({ ...o, host }, '/', policies.backendTLS !== undefined);
        if (typeof where === 'string') {
          this.fail([...op, named !== undefined ? 'backend' : 'host'], where);
          return;
        }
        // an explicit path (or a host URL's) wins over the document's server path
        const given = where.path.split('?', 1)[0]?.replace(/\/+$/, '') ?? '';
        const explicit = o.path !== undefined || given !== '' ? given : undefined;
        const transport = { kind: 'openapi' as const, origin: where.origin, tls: where.tls };
        if (typeof o.schema === 'object' && 'url' in o.schema) {
          // fetched by the data plane on first use (mcp/upstream/openapi.ts)
          targets.push({
            name: t.name,
            transport: { ...transport, path: explicit, tools: [], schemaUrl: o.schema.url as string },
            policies,
            authorization,
          });
          return;
        }
        const sp = typeof o.schema === 'string' ? [...op, 'schema'] : [...op, 'schema', 'file'];
        const text =
          typeof o.schema === 'string' ? o.schema : this.readMaterial(sp, o.schema as { file: string });
        if (text === undefined) return;
        let tools: OpenApiTools;
        try {
          tools = openApiTools(parseYaml(text, { maxAliasCount: 100 }));
        } catch (err) {
          this.fail(sp, `the OpenAPI document cannot be served as tools: ${(err as Error).message}`);
          return;
        }
        targets.push({
          name: t.name,
          transport: { ...transport, path: explicit ?? tools.serverPath, tools: tools.tools },
          policies,
          authorization,
        });
        return;
      }
      const remote = t.mcp ?? t.sse;
      if (!remote) return;
      const where = remoteMcpTarget(
        'host' in remote ? remote : { host, ...(remote.path != null ? { path: remote.path } : {}) },
        t.mcp ? '/mcp' : '/sse',
        policies.backendTLS !== undefined,
      );
      if (typeof where === 'string') {
        this.fail([...tp, t.mcp ? 'mcp' : 'sse', named !== undefined ? 'backend' : 'host'], where);
        return;
      }
      targets.push({
        name: t.name,
        transport: { kind: t.mcp ? 'streamable-http' : 'sse', ...where },
        policies,
        authorization,
      });
    });
    if (this.issues.length > before) return undefined;
    return {
      kind: 'mcp',
      targets,
      sessionRouting: pascal(m.statefulMode ?? m.sessionRouting, 'Stateful'),
      prefixMode: pascal(m.prefixMode, 'Conditional'),
      failureMode: pascal(m.failureMode, 'FailClosed'),
      localhostOnly: m.dnsRebindingProtection ?? false,
      authorization: [],
      guardrails: [],
      keepAliveMs: keepAlive,
      ...(m.server ? { server: defined(m.server) } : {}),
    };
  }

  /** mcpGuardrails processors: where each is called, and which methods it sees in which phase. */
  mcpProcessors(path: FieldPath, g: McpGuardrails): McpGuardrailIR[] {
    const out: McpGuardrailIR[] = [];
    g.processors.forEach((proc, i) => {
      const pp = [...path, 'processors', i];
      const methods = Object.fromEntries(
        Object.entries(proc.methods).map(([k, v]) => [k, v.toLowerCase() as McpProcessorPhase]),
      );
      if (proc.kind === 'cel' || proc.kind === 'expression') {
        const p = proc;
        for (const k of ['when', 'transform'] as const) {
          const src = p[k];
          if (src !== undefined) this.report(checkCel(src, [...pp, k]));
        }
        out.push({
          kind: 'cel',
          methods,
          ...(p.when !== undefined ? { when: p.when } : {}),
          ...(p.reject !== undefined ? { reject: p.reject } : {}),
          ...(p.transform !== undefined ? { transform: p.transform } : {}),
          failOpen: p.failureMode?.toLowerCase() === 'failopen',
        });
        return;
      }
      const p = proc as McpRemoteProcessor;
      let host = p.host;
      // the processor's own policies, else those of the backend it names
      let policies = p.policies ?? undefined;
      let polPath: FieldPath = [...pp, 'policies'];
      if (p.backend !== undefined) {
        const backends = this.cfg.backends ?? [];
        const index = backends.findIndex((d) => d.name === p.backend);
        const def = backends[index];
        if (!def || !('host' in def)) {
          this.fail([...pp, 'backend'], `no backend with a host named ${JSON.stringify(p.backend)}`);
          return;
        }
        const named = def.policies ?? {};
        const refused = refusedNamedPolicies(p.backend, named, 'a processor call', TAKES_PROCESSOR);
        if (refused) {
          this.fail([...pp, 'backend'], refused);
          return;
        }
        if (!policies && Object.keys(named).length > 0) {
          policies = named as NonNullable<McpRemoteProcessor['policies']>;
          polPath = ['backends', index, 'policies'];
        }
        host = def.host;
      }
      let endpoints: McpProcessorIR['endpoints'];
      if (p.service !== undefined) {
        const svc = this.httpService([...pp, 'service'], p.service, 'an MCP processor');
        if (!svc) return;
        host = svc.host;
        endpoints = svc.endpoints;
      }
      if (host === undefined) return; // the schema refused the processor already
      const connection = policies ? this.processorConnection(polPath, policies) : undefined;
      if (connection === null) return;
      if (endpoints && connection?.connection.tunnel) {
        // the proxy would be asked for the Service's name, which only this file declares
        this.fail(
          [...pp, 'service'],
          `a processor given as a Service of services is dialled at its workloads, not through a backendTunnel (${polPath.join('.')} sets one)`,
        );
        return;
      }
      const where = remoteMcpTarget({ host }, '/', false);
      if (typeof where === 'string') {
        this.fail(
          [...pp, p.backend !== undefined ? 'backend' : p.service !== undefined ? 'service' : 'host'],
          where,
        );
        return;
      }
      this.report(checkCelMap(p.metadata, [...pp, 'metadata']));
      // backendTLS makes the call TLS (a plain host:port is https then)
      const origin =
        connection?.connection.tls && where.origin.startsWith('http://')
          ? `https://${where.origin.slice('http://'.length)}`
          : where.origin;
      const requestTimeout = policies?.http?.requestTimeout;
      out.push({
        origin,
        basePath: where.path.replace(/\/+$/, ''),
        timeoutMs: ms(p.timeout ?? requestTimeout ?? undefined, MCP_DEFAULT_TIMEOUT_MS),
        ...(connection && Object.keys(connection.connection).length > 0
          ? { connection: connection.connection }
          : {}),
        ...(connection?.credential ? { credential: connection.credential } : {}),
        ...(connection?.credentials ? { credentials: connection.credentials } : {}),
        ...(endpoints ? { endpoints } : {}),
        failOpen: p.failureMode?.toLowerCase() === 'failopen',
        metadata: p.metadata ?? {},
        headers: {
          allowed: (p.requestHeaders?.allowed ?? []).map((h) => h.toLowerCase()),
          disallowed: (p.requestHeaders?.disallowed ?? []).map((h) => h.toLowerCase()),
        },
        methods,
      });
    });
    return out;
  }

  /**
   * An MCP processor's connection from its policies (at `path`): TLS, headers, a key in a header,
   * tcp, HTTP/2 and a tunnel, as a guard service's; null when one of them is broken (reported).
   */
  processorConnection(
    path: FieldPath,
    p: NonNullable<McpRemoteProcessor['policies']>,
  ): {
    connection: NonNullable<McpProcessorIR['connection']>;
    credential?: McpProcessorIR['credential'];
    credentials?: McpProcessorIR['credentials'];
  } | null {
    const connection: NonNullable<McpProcessorIR['connection']> = { ...serviceConnection(p) };
    if (p.backendTLS) {
      const tls = this.checkedTls(path, p.backendTLS);
      if (!tls) return null;
      connection.tls = tls;
    }
    if (p.requestHeaderModifier) connection.requestHeaders = p.requestHeaderModifier;
    if (p.backendTunnel) {
      const t = this.resolveTunnel([...path, 'backendTunnel'], p.backendTunnel);
      if (!t) return null;
      connection.tunnel = t;
    }
    if (!p.backendAuth) return { connection };
    const at = [...path, 'backendAuth'];
    const r = resolveBackendAuth(this, at, p.backendAuth as BackendAuth);
    if (!r) return null;
    // credentials (headers only, by the schema) beside the key, or alone
    const credentials = (r.credentials ?? []).flatMap(
      (c) => sealedHeader(c.location, c.value.reveal()) ?? [],
    );
    const extra = credentials.length > 0 ? { credentials } : {};
    if (!('key' in r)) return { connection, ...extra };
    const credential = sealedHeader(r.key.location ?? AUTHORIZATION, r.key.value.reveal());
    if (!credential) {
      this.fail([...at, 'key', 'location'], 'a processor takes its key in a header');
      return null;
    }
    return { connection, credential, ...extra };
  }

  /**
   * A service call's backendAuth key (its file read) as the header it goes in (`fallback` when its
   * location says nothing), prefix included, and the value sealed; undefined (reported) when it is
   * not a key in a header (`role` names the caller).
   */
  keyInHeader(
    path: FieldPath,
    auth: unknown,
    role: string,
    fallback: AuthLocationIR = AUTHORIZATION,
  ): { header: string; value: Secret } | undefined {
    const r = resolveBackendAuth(this, path, auth as BackendAuth);
    if (!r || !('key' in r)) return undefined;
    const h = sealedHeader(r.key.location ?? fallback, r.key.value.reveal());
    if (!h) {
      this.fail([...path, 'key', 'location'], `${role} takes its key in a header`);
      return undefined;
    }
    if (/[\r\n\0]/.test(h.value.reveal())) {
      this.fail([...path, 'key'], 'the key holds a line break or NUL, which no header can carry');
      return undefined;
    }
    return h;
  }

  /**
   * Backend policies resolved, their problems reported at `path` (the policies object), or for
   * policies merged from several places at `origin(name)`, where each is written.
   */
  resolveBackendPolicies(
    path: FieldPath,
    p: BackendPolicies,
    origin: (policy: string) => FieldPath = () => path,
  ): ResolvedBackendPolicies {
    const { backendTLS, backendAuth, backendTunnel, extAuthz, mcpAuthentication, ...rest } = p;
    const at = (k: string): FieldPath => [...origin(k), k];
    const out: ResolvedBackendPolicies = { ...rest };
    if (mcpAuthentication) out.mcpAuthentication = sealMcpAuthentication(mcpAuthentication);
    if (p.authorization) this.report(checkAuthorization(p.authorization, at('authorization')));
    if (extAuthz) {
      // as a route's: its service by backend reference, its TLS files read, then sealed
      this.extAuthzFiles(at('extAuthz'), extAuthz);
      this.report(checkExtAuthz(extAuthz, at('extAuthz')));
      out.extAuthz = sealExtAuthzPolicy(extAuthz);
    }
    if (p.transformations) this.report(checkTransformations(p.transformations, at('transformations')));
    if (backendAuth) {
      const auth = resolveBackendAuth(this, at('backendAuth'), backendAuth);
      if (auth) out.backendAuth = auth;
    }
    if (backendTLS) this.report(checkBackendPolicies({ backendTLS }, origin('backendTLS')));
    if (backendTunnel) this.report(checkBackendPolicies({ backendTunnel }, origin('backendTunnel')));
    if (p.health) this.report(checkBackendPolicies({ health: p.health }, origin('health')));
    if (backendTLS) out.backendTLS = this.resolveTls(at('backendTLS'), backendTLS);
    if (backendTunnel) {
      const t = this.resolveTunnel(at('backendTunnel'), backendTunnel);
      if (t) out.backendTunnel = t;
    }
    return out;
  }

  /** The indexes of the top-level policies by what they target (`kind` and name), made once. */
  #targeting: Map<string, number[]> | undefined;

  /** Where the last policy targeting the `kind` named `name` that sets `policy` is, if one does. */
  targetedAt(
    kind: 'gateway' | 'listener' | 'route' | 'backend',
    name: string,
    policy: string,
  ): FieldPath | undefined {
    const all = this.cfg.policies ?? [];
    if (!this.#targeting) {
      this.#targeting = new Map();
      all.forEach((p, i) => {
        // a gateway-phase policy is no part of what a route merges
        if (p.phase === 'gateway') return;
        for (const [k, n] of Object.entries(p.target as Record<string, string | undefined>)) {
          // a policy on a gateway's port is found at each of the listeners there
          const keys =
            k === 'gatewayPort' ? this.listenersOnPort(n ?? '').map((l) => `listener/${l}`) : [`${k}/${n}`];
          for (const key of keys) {
            const list = this.#targeting?.get(key);
            if (list) list.push(i);
            else this.#targeting?.set(key, [i]);
          }
        }
      });
    }
    const at = this.#targeting.get(`${kind}/${name}`) ?? [];
    for (let j = at.length - 1; j >= 0; j--) {
      const i = at[j] as number;
      if ((all[i]?.policy as Record<string, unknown> | undefined)?.[policy] !== undefined)
        return ['policies', i, 'policy'];
    }
    return undefined;
  }

  /** backendTLS with its files read (the checks ran with the policies that hold it). */
  resolveTls(tp: FieldPath, t: BackendTLS): BackendTlsIR {
    const resolved: BackendTlsIR = {};
    if (t.cert) {
      const v = this.readMaterial([...tp, 'cert'], t.cert);
      if (v) resolved.cert = v;
    }
    if (t.key) {
      const v = this.readMaterial([...tp, 'key'], t.key);
      if (v) resolved.key = new Secret(v);
    }
    if (t.root) {
      const v = this.readMaterial([...tp, 'root'], t.root);
      if (v) resolved.root = v;
    }
    for (const k of ['hostname', 'insecure', 'insecureHost', 'alpn', 'subjectAltNames'] as const) {
      if (t[k] !== undefined) (resolved as Record<string, unknown>)[k] = t[k];
    }
    if (t.keyExchangeGroups) resolved.ecdhCurve = ecdhCurveOf(t.keyExchangeGroups);
    return resolved;
  }

  /**
   * The top-level host backend a policy names by `backend` (`role` says what it must serve as), with
   * its index; undefined, reported at `at`, when there is none by that name or it is not host:port.
   */
  hostBackend(
    at: FieldPath,
    name: string,
    role: string,
  ): { host: string; policies: BackendPolicies | undefined; index: number } | undefined {
    const backends = this.cfg.backends ?? [];
    const index = backends.findIndex((d) => d.name === name);
    const def = backends[index];
    if (!def || !('host' in def) || def.host.startsWith('unix:')) {
      this.fail(
        at,
        def
          ? `backend ${JSON.stringify(name)} is not a host:port backend, which ${role} must be`
          : `no backend named ${JSON.stringify(name)}${backends.length ? ` (backends: ${backends.map((d) => d.name).join(', ')})` : ''}`,
      );
      return undefined;
    }
    return { host: def.host, policies: def.policies, index };
  }

  /**
   * The OTLP collector of a tracing or accessLog.otlp block (`role` names it in problems): its host, or
   * its named backend's, and how exports reach it: TLS, a key in a header and headers, from its
   * policies, else from those of the named backend. Undefined (reported) when it cannot be used.
   */
  otlpCollector(path: FieldPath, c: CollectorSpec, role: string): Collector | undefined {
    let host = c.host;
    // as agentgateway exports to a Service: at its hostname and port, whether or not `services` has it
    if (host === undefined && c.service) {
      const hostname = c.service.name.slice(c.service.name.indexOf('/') + 1);
      host = hostPort(hostname, c.service.port);
    }
    let policies = c.policies ?? undefined;
    let pp: FieldPath = [...path, 'policies'];
    if (c.backend !== undefined && c.host === undefined) {
      const def = this.hostBackend([...path, 'backend'], c.backend, role);
      if (!def) return undefined;
      host = def.host;
      if (!policies && def.policies) {
        pp = ['backends', def.index, 'policies'];
        const { backendTLS, backendAuth, requestHeaderModifier } = def.policies;
        const refused = refusedNamedPolicies(c.backend, def.policies, role, TAKES_COLLECTOR);
        if (refused) {
          this.fail([...path, 'backend'], refused);
          return undefined;
        }
        policies = {
          ...(backendTLS ? { backendTLS } : {}),
          ...(backendAuth
            ? { backendAuth: backendAuth as NonNullable<CollectorPolicies['backendAuth']> }
            : {}),
          ...(requestHeaderModifier ? { requestHeaderModifier } : {}),
        };
      }
    }
    if (host === undefined) return undefined;
    const connection: CollectorConnectionIR = {};
    const t = policies?.backendTLS;
    if (t) {
      if (t.alpn !== undefined) {
        this.fail(
          [...pp, 'backendTLS', 'alpn'],
          `alpn is set by the OTLP protocol (h2 for grpc, http/1.1 for http), not on ${role}`,
        );
        return undefined;
      }
      const tls = this.checkedTls(pp, t);
      if (!tls) return undefined;
      connection.tls = tls;
    }
    const auth = policies?.backendAuth;
    if (auth) {
      const credential = this.keyInHeader([...pp, 'backendAuth'], auth, role);
      if (!credential) return undefined;
      connection.credential = credential;
    }
    const hm = policies?.requestHeaderModifier;
    if (hm?.add || hm?.set) {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries({ ...hm.add, ...hm.set })) headers[k.toLowerCase()] = v;
      connection.headers = headers;
    }
    return { host, connection };
  }

  /** A dynamic backend: its dial target's CEL checked where it is written. */
  dynamicTarget(path: FieldPath, d: { target?: string | null | undefined }): BackendTarget {
    if (!d.target) return { kind: 'dynamic' };
    this.report(checkCel(d.target, [...path, 'target']));
    return { kind: 'dynamic', target: d.target };
  }

  /** A backendTLS checked (its problems reported under `policiesPath`) and resolved; null when broken. */
  checkedTls(policiesPath: FieldPath, t: BackendTLS): BackendTlsIR | null {
    const problems = checkBackendPolicies({ backendTLS: t }, policiesPath);
    this.report(problems);
    return problems.length > 0 ? null : this.resolveTls([...policiesPath, 'backendTLS'], t);
  }

  /** What promptGuardIR needs of the loader, its paths under `base`. */
  guardContext(base: FieldPath): GuardContext {
    return {
      read: (at, file) => this.readMaterial([...base, ...at, 'file'], file),
      // `at` ends in backendTLS: its problems are the policies' above it
      tls: (at, t) => this.checkedTls([...base, ...at.slice(0, -1)], t) ?? undefined,
      tunnel: (at, t) => this.resolveTunnel([...base, ...at], t),
      service: (at, ref) => this.httpService([...base, ...at], ref, 'a webhook target'),
      backend: (at, name) => {
        const def = this.hostBackend([...base, ...at], name, 'a webhook target');
        if (!def) return undefined;
        const t = def.policies?.backendTLS;
        // checked and read where the backend says it, as its other users see it
        return t ? { ...def, tls: this.checkedTls(['backends', def.index, 'policies'], t) } : def;
      },
      fail: (at, message) => this.fail([...base, ...at], message),
    };
  }

  /**
   * backendTunnel: the proxy's address (a host, a named host backend, or a Service's hostname with its
   * workloads' addresses), its TLS and credential.
   */
  resolveTunnel(tp: FieldPath, t: NonNullable<BackendPolicies['backendTunnel']>): TunnelIR | undefined {
    let proxy: string | undefined;
    let named: BackendPolicies | undefined;
    if ('host' in t.proxy) proxy = t.proxy.host;
    else if ('backend' in t.proxy) {
      const def = this.hostBackend([...tp, 'proxy', 'backend'], t.proxy.backend, 'a backendTunnel proxy');
      if (!def) return undefined;
      proxy = def.host;
      named = def.policies;
    }
    let endpoints: TunnelIR['endpoints'];
    if ('service' in t.proxy) {
      const svc = this.httpService([...tp, 'proxy', 'service'], t.proxy.service, 'a backendTunnel');
      if (!svc) return undefined;
      proxy = svc.host;
      endpoints = svc.endpoints;
    }
    if (proxy === undefined) return undefined;
    const out: TunnelIR = { proxy, mode: t.mode ?? 'Auto', ...(endpoints ? { endpoints } : {}) };
    // The tunnel's own policies, else those of the named backend it points at.
    const tls = t.policies?.backendTLS ?? named?.backendTLS;
    if (tls) out.tls = this.resolveTls([...tp, 'policies', 'backendTLS'], tls);
    const auth = t.policies?.backendAuth ?? named?.backendAuth;
    if (auth && typeof auth === 'object' && 'key' in auth) {
      const at = [...tp, 'policies', 'backendAuth'];
      const credential = this.keyInHeader(at, auth, 'a backendTunnel proxy', PROXY_AUTHORIZATION);
      if (credential) out.auth = credential;
    }
    return out;
  }

  /**
   * Reads the files a traffic policy names (JWKS, htpasswd) into it, then runs @gw/api's checks: CEL
   * and JWKS, htpasswd hashes, ext_authz headers.
   */
  trafficChecks(path: FieldPath, p: TrafficPolicies): void {
    if (p.retry && p.retry.attempts === undefined) p.retry.attempts = 1;
    if (p.ai) this.report(checkAiPolicy(p.ai, [...path, 'ai']));
    const j = p.jwtAuth;
    if (j) {
      const providers = j.providers ?? (j.issuer && j.jwks ? [{ issuer: j.issuer, jwks: j.jwks }] : []);
      providers.forEach((prov, i) => {
        const pp = j.providers ? [...path, 'jwtAuth', 'providers', i, 'jwks'] : [...path, 'jwtAuth', 'jwks'];
        if ('file' in prov.jwks) {
          const text = this.readMaterial([...pp, 'file'], prov.jwks);
          if (text !== undefined) (prov as { jwks: unknown }).jwks = { inline: text };
        }
      });
      // the single-provider form: the provider above is a copy, the jwks read goes back to the policy
      if (!j.providers && j.issuer && j.jwks && providers[0]) j.jwks = providers[0].jwks;
    }
    const b = p.basicAuth;
    if (b?.htpasswd && typeof b.htpasswd === 'object') {
      const text = this.readMaterial([...path, 'basicAuth', 'htpasswd', 'file'], b.htpasswd);
      if (text !== undefined) b.htpasswd = text;
    }
    if (p.mcpAuthentication) this.mcpAuthenticationFiles([...path, 'mcpAuthentication'], p.mcpAuthentication);
    const o = p.oidc;
    // an oidc policy's discovery document and JWKS, when files, are read now; its rules (@gw/api
    // checkOidc) are checked here: no GwPolicy field has it
    for (const f of ['discovery', 'jwks'] as const) {
      const v = o?.[f];
      if (o && v && 'file' in v) {
        const text = this.readMaterial([...path, 'oidc', f, 'file'], v);
        if (text !== undefined) o[f] = { inline: text };
      }
    }
    if (o) this.report(checkOidc(o, [...path, 'oidc']));
    if (p.extAuthz) this.extAuthzFiles([...path, 'extAuthz'], p.extAuthz);
    this.serviceBackends(path, p);
    this.report(checkTrafficPolicies(p, path));
  }

  /** Reads the certificate files of TLS to an extAuthz service into it (sealPolicies seals the key). */
  extAuthzFiles(path: FieldPath, e: NonNullable<TrafficPolicies['extAuthz']>): void {
    const entries =
      'conditional' in e
        ? e.conditional.map((c, i) => [c, [...path, 'conditional', i]] as const)
        : [[e, path] as const];
    for (const [entry, at] of entries) {
      if (entry.backendRef !== undefined) this.extAuthzBackend(at, entry);
      if (entry.serviceRef !== undefined) {
        const ref = entry.serviceRef;
        delete entry.serviceRef;
        if ('grpc' in entry) {
          const svc = this.grpcService([...at, 'service'], ref, 'the extAuthz service');
          if (svc) {
            entry.grpc.host = svc.host;
            withServiceName(entry, svc.hostname);
          }
        } else {
          const svc = this.httpService([...at, 'service'], ref, 'the extAuthz service');
          if (svc) {
            entry.http.host = svc.host;
            if (svc.endpoints) entry.http.endpoints = svc.endpoints;
          }
        }
      }
      this.serviceKey(
        [...at, 'policies', 'backendAuth'],
        entry.policies?.backendAuth,
        'the extAuthz service',
      );
      const tls = entry.policies?.backendTLS;
      if (!tls) continue;
      this.readTlsFiles([...at, 'policies', 'backendTLS'], tls);
    }
  }

  /**
   * A policy's service's key (extAuthz, extProc, remoteRateLimit), a file read into it (trailing
   * newline dropped); a location other than a header is refused (a call carries no query or cookie
   * of its own).
   */
  serviceKey(
    path: FieldPath,
    auth: NonNullable<NonNullable<ExtAuthzPolicies>['backendAuth']> | undefined,
    service: string,
  ): void {
    if (!auth) return;
    // a value no header (gRPC metadata) can carry would fail every call
    const headerSafe = (at: FieldPath, v: string) => {
      if (!/[\r\n\0]/.test(v)) return true;
      this.fail(at, 'the key holds a line break or NUL, which no header can carry');
      return false;
    };
    const read = (at: FieldPath, v: string | { file: string }) =>
      typeof v === 'string' ? v : this.readMaterial([...at, 'file'], v)?.replace(/\r?\n$/, '');
    // credentials (their locations are headers, by the schema): each file read into it
    if ('credentials' in auth && auth.credentials)
      auth.credentials.forEach((c, i) => {
        const at = [...path, 'credentials', i, 'key'];
        const v = read(at, c.key);
        if (v === '') this.fail(at, 'the key is empty');
        else if (v !== undefined && headerSafe(at, v)) c.key = v;
      });
    const form = SERVICE_TOKEN_FORMS.find((f) => f in auth);
    if (form) {
      this.serviceToken(path, auth, form, service);
      return;
    }
    if (!('key' in auth)) return;
    const k = auth.key;
    if (typeof k === 'object' && 'value' in k) {
      if (k.location && !('header' in k.location)) {
        this.fail([...path, 'key', 'location'], `${service} takes its key in a header`);
        return;
      }
      const v = read([...path, 'key', 'value'], k.value);
      if (v !== undefined && headerSafe([...path, 'key', 'value'], v)) k.value = v;
    } else {
      const v = read([...path, 'key'], k);
      if (v !== undefined && headerSafe([...path, 'key'], v)) auth.key = v;
    }
  }

  /**
   * A service's backendAuth obtained per call (`form`), resolved as a backend's (its files read, its
   * token endpoint's service found) for the sealed IR (seal.ts SERVICE_AUTH); its credential must go
   * in a header, and a Google ID token's audience (default: the request's host) be named.
   */
  serviceToken(path: FieldPath, auth: object, form: ServiceTokenForm, service: string): void {
    const r = resolveBackendAuth(this, path, auth as BackendAuth);
    if (!r) return;
    const { credentials: _static, ...token } = r as BackendAuthIR & { credentials?: unknown };
    const location = (token as Record<string, { location?: AuthLocationIR } | undefined>)[form]?.location;
    if (location && !('header' in location)) {
      this.fail([...path, form, 'location'], `${service} takes its credential in a header`);
      return;
    }
    if ('gcp' in token && token.gcp.type === 'idToken' && !token.gcp.audience) {
      this.fail(
        [...path, 'gcp', 'audience'],
        `an ID token for ${service} needs its audience (the service's URL): the request's host is not the service's`,
      );
      return;
    }
    SERVICE_AUTH.set(auth, token as BackendAuthIR);
  }

  /** The certificate files of a backendTLS read into it (a PEM already there stays). */
  readTlsFiles(at: FieldPath, tls: BackendTLS): void {
    for (const k of ['cert', 'key', 'root'] as const) {
      const v = tls[k];
      if (v === undefined) continue;
      const text = this.readMaterial([...at, k, ...(typeof v === 'string' ? [] : ['file'])], v);
      if (text !== undefined) tls[k] = text;
    }
  }

  /**
   * An extAuthz check by `backend`: the named host backend's address becomes the check's host, its
   * backendTLS the check's unless the check has its own; other policies of it are refused by name.
   * Done once: policies are shared by the routes that inherit them.
   */
  extAuthzBackend(
    at: FieldPath,
    entry: Exclude<NonNullable<TrafficPolicies['extAuthz']>, { conditional: unknown }>,
  ): void {
    const name = entry.backendRef as string;
    delete entry.backendRef;
    const def = this.hostBackend([...at, 'backend'], name, 'an authorization service');
    if (!def) return;
    const j = def.index;
    const backendTLS = def.policies?.backendTLS;
    const refused = refusedNamedPolicies(name, def.policies, 'an extAuthz call', TAKES_TLS);
    if (refused) this.fail([...at, 'backend'], refused);
    if ('grpc' in entry) entry.grpc.host = def.host;
    else entry.http.host = def.host;
    if (backendTLS && !entry.policies?.backendTLS) {
      // checked and read where the backend says it
      const bp = ['backends', j, 'policies'];
      const problems = checkBackendPolicies({ backendTLS }, bp);
      this.report(problems);
      if (problems.length > 0) return;
      this.readTlsFiles([...bp, 'backendTLS'], backendTLS);
      entry.policies = { ...entry.policies, backendTLS };
    }
  }

  /**
   * A gateway's or listener's policies (route policies get trafficChecks): their transformations and
   * ipAccessControl lists, and an extAuthz's backend reference and TLS files, resolved where they are
   * written (the routes that inherit them share the same objects).
   */
  transformationChecks(path: FieldPath, p: TrafficPolicies | undefined): void {
    if (p?.transformations)
      this.report(checkTransformations(p.transformations, [...path, 'transformations']));
    if (p?.ipAccessControl)
      this.report(checkIpAccessControl(p.ipAccessControl, [...path, 'ipAccessControl']));
    if (p?.extAuthz) this.extAuthzFiles([...path, 'extAuthz'], p.extAuthz);
    if (p) this.serviceBackends(path, p);
  }

  /**
   * The extProc and remoteRateLimit services and a requestMirror's backend given by `backend`: the
   * named host backend's address becomes `host`. The services take the backend's backendTLS (unless
   * they have their own) and read their TLS files; other policies of the backend are refused by name,
   * and a mirror takes none.
   * Done once: policies are shared by the routes that inherit them.
   */
  serviceBackends(path: FieldPath, p: TrafficPolicies): void {
    type Entry = {
      host?: string | undefined;
      backend?: string | undefined;
      service?: { name: string; port: number } | undefined;
      endpoints?: InTurnEndpoint[] | undefined;
      policies?:
        | {
            backendTLS?: BackendTLS | undefined;
            backendAuth?: NonNullable<NonNullable<ExtAuthzPolicies>['backendAuth']> | undefined;
          }
        | null
        | undefined;
    };
    for (const k of ['extProc', 'remoteRateLimit', 'mcpRemoteRateLimit', 'requestMirror'] as const) {
      const v = p[k];
      if (!v) continue;
      const entries: [Entry, FieldPath][] =
        'conditional' in v
          ? v.conditional.map((c, i) => [c, [...path, k, 'conditional', i]])
          : k === 'requestMirror'
            ? [[(v as NonNullable<TrafficPolicies['requestMirror']>).backend, [...path, k, 'backend']]]
            : [[v as Entry, [...path, k]]];
      for (const [entry, at] of entries) {
        if (k !== 'requestMirror')
          this.serviceKey(
            [...at, 'policies', 'backendAuth'],
            entry.policies?.backendAuth,
            `the ${k} service`,
          );
        if (entry.service !== undefined && k === 'requestMirror') {
          const svc = this.httpService([...at, 'service'], entry.service, 'the mirror');
          delete entry.service;
          if (svc) {
            entry.host = svc.host;
            entry.endpoints = svc.endpoints;
          }
        } else if (entry.service !== undefined) {
          const svc = this.grpcService([...at, 'service'], entry.service, `the ${k} service`);
          delete entry.service;
          if (svc) {
            entry.host = svc.host;
            withServiceName(entry, svc.hostname);
          }
        }
        const name = entry.backend;
        if (name !== undefined) {
          delete entry.backend;
          const def = this.hostBackend([...at, 'backend'], name, `the ${k} service`);
          if (!def) continue;
          const backendTLS = def.policies?.backendTLS;
          const set = Object.keys(def.policies ?? {});
          const refused =
            k === 'requestMirror'
              ? set.length > 0 &&
                `backend ${JSON.stringify(name)} sets ${set.join(', ')}, which the ${k} call does not take yet (it is called in plain text)`
              : refusedNamedPolicies(name, def.policies, `the ${k} call`, TAKES_TLS);
          if (refused) this.fail([...at, 'backend'], refused);
          entry.host = def.host;
          if (k !== 'requestMirror' && backendTLS && !entry.policies?.backendTLS) {
            // checked and read where the backend says it
            const bp = ['backends', def.index, 'policies'];
            const problems = checkBackendPolicies({ backendTLS }, bp);
            this.report(problems);
            if (problems.length > 0) continue;
            this.readTlsFiles([...bp, 'backendTLS'], backendTLS);
            entry.policies = { ...entry.policies, backendTLS };
            continue;
          }
        }
        const tls = entry.policies?.backendTLS;
        if (tls) this.readTlsFiles([...at, 'policies', 'backendTLS'], tls);
      }
    }
  }

  /** Reads an mcpAuthentication's JWKS file into it. */
  mcpAuthenticationFiles(path: FieldPath, m: McpAuthentication): void {
    if (m.jwks && typeof m.jwks === 'object' && 'file' in m.jwks) {
      const text = this.readMaterial([...path, 'jwks', 'file'], m.jwks);
      if (text !== undefined) m.jwks = { inline: text };
    }
  }
}

/** Of `p`, what an MCP target's calls take (MCP_TARGET_POLICIES). */
function pickMcpTargetPolicies(p: BackendPolicies | TrafficPolicies | undefined): BackendPolicies {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p ?? {})) if (v !== undefined && MCP_TARGET_POLICIES.has(k)) out[k] = v;
  return out as BackendPolicies;
}

/**
 * The policies every target of a route's mcp backend takes from outside it, in agentgateway's order
 * (the route's connection policies, a targeted policy, the named backend's, the route backend's own,
 * the later winning), and where they are written.
 */
function mcpOuter(
  /** Where the route's policies are written, and the route backend's own. */
  at: { route: FieldPath; own: FieldPath },
  routePolicies: TrafficPolicies,
  fromTargeted: object | undefined,
  named: object | undefined,
  own: { backendAuth?: unknown } | undefined,
): { policies: BackendPolicies; at: FieldPath } {
  const fromRoute: BackendPolicies = {};
  if (routePolicies.backendTLS) fromRoute.backendTLS = routePolicies.backendTLS;
  if (routePolicies.backendAuth) fromRoute.backendAuth = routePolicies.backendAuth;
  if (routePolicies.backendTunnel) fromRoute.backendTunnel = routePolicies.backendTunnel;
  const merged =
    mergePolicies<BackendPolicies>(
      fromRoute,
      fromTargeted as BackendPolicies | undefined,
      named as BackendPolicies | undefined,
      own as BackendPolicies | undefined,
    ) ?? {};
  return {
    policies: pickMcpTargetPolicies(merged),
    at: own?.backendAuth ? at.own : at.route,
  };
}

/** backendAuth an MCP target's calls carry: a key, or credentials alone (passthrough is checked apart). */
const mcpTargetAuthForm = (auth: object): boolean => {
  const forms = Object.keys(auth).filter((k) => k !== 'credentials');
  return forms.length === 0 || (forms.length === 1 && forms[0] === 'key');
};

/**
 * Where credentials travel is known from the auth policies: their headers join the sensitive ones
 * and their query parameters are redacted wherever a request's URL is shown.
 */
function addCredentialLocations(
  global: GlobalIR,
  binds: BindIR[],
  upstream: readonly AuthLocationIR[],
): void {
  const headers = new Set(global.sensitiveHeaders);
  const params = new Set<string>();
  const add = (loc: AuthLocationIR | { expression: string } | undefined) => {
    if (!loc) return;
    if ('header' in loc) headers.add(loc.header.name.toLowerCase());
    else if ('queryParameter' in loc) params.add(loc.queryParameter.name);
  };
  for (const b of binds)
    for (const l of b.listeners)
      for (const r of l.routes) {
        const p = r.policies;
        add(p.apiKey?.location);
        add(p.jwtAuth?.location);
        add(p.basicAuth?.location);
        add(p.mcpAuthentication?.authorizationLocation);
      }
  for (const loc of upstream) add(loc);
  global.sensitiveHeaders = [...headers];
  global.credentialQueryParams = [...params].sort();
}

/** The paths the LLM API is served at: every client API this build speaks, and the model list. */
const LLM_PATHS = [...CLIENT_APIS.filter((a) => !a.matches).map((a) => a.path), MODELS_PATH];
/** Those whose path names the model (Gemini's `…/models/<model>:generateContent`). */
const LLM_PATH_REGEXES = CLIENT_APIS.flatMap((a) => (a.pathRegex ? [a.pathRegex] : []));
/** Where the mcp block's server answers: streamable HTTP, and the SSE transport's two endpoints. */
const MCP_PATHS = ['/mcp', '/sse', '/message'];
/** The port an llm or mcp block with neither a port nor gateways serves on, as agentgateway does. */
const BLOCK_DEFAULT_PORT = { llm: 4000, mcp: 3000 } as const;

/** promptCaching with agentgateway's defaults filled in. */
function promptCachingIR(c: NonNullable<LlmModel['promptCaching']>): LlmPromptCachingIR {
  return {
    system: c.cacheSystem ?? true,
    messages: c.cacheMessages ?? true,
    tools: c.cacheTools ?? false,
    minTokens: c.minTokens === undefined ? 1024 : c.minTokens,
    offset: c.cacheMessageOffset ?? 0,
  };
}

/**
 * A provider's `auth` with what the provider implies: SigV4 for Bedrock signs for the `bedrock`
 * service in the provider's region unless it says otherwise.
 */
function providerAuthDefaults(auth: BackendAuthIR, p: LlmProviderIR): BackendAuthIR {
  if (!('aws' in auth) || p.kind !== 'bedrock') return auth;
  const region = (p as LlmProviderIR<'bedrock'>).settings.region;
  return { aws: { ...auth.aws, region: auth.aws.region ?? region, service: auth.aws.service ?? 'bedrock' } };
}

/**
 * The paths an `oidc` policy of the llm block answers itself (the callback of its redirectURI, its
 * logout path): the llm route matches them too, as it matches the LLM API's. A redirectURI that is
 * not an absolute URL is the oidc policy's own config error; it adds no path here.
 */
function oidcPaths(
  oidc: { redirectURI: string; logout?: { path: string } | null | undefined } | undefined,
): string[] {
  if (!oidc) return [];
  const out: string[] = [];
  if (URL.canParse(oidc.redirectURI)) out.push(new URL(oidc.redirectURI).pathname);
  if (oidc.logout) out.push(oidc.logout.path);
  return out.filter((p) => !LLM_PATHS.includes(p));
}

/** agentgateway's custom-provider format names, as the wire formats this build converts. */
const CUSTOM_FORMATS: Partial<Record<(typeof LLM_PROVIDER_FORMATS)[number], LlmFormat>> = {
  completions: 'openai-chat',
  messages: 'anthropic-messages',
  responses: 'openai-responses',
  embeddings: 'openai-embeddings',
  anthropicTokenCount: 'anthropic-count-tokens',
  generateContent: 'gemini-generate-content',
};

/**
 * Where a remote MCP target is: `http(s)://host:port/path`, `host:port` (+ path) or host, port and
 * path. TLS when the URL says https or the target has backendTLS. A string is what is wrong.
 */
function remoteMcpTarget(
  r: { host: string; port?: number | undefined; path?: string | undefined },
  defaultPath: string,
  backendTls: boolean,
): { origin: string; path: string; tls: boolean } | string {
  if (/^[a-z]+:\/\//i.test(r.host)) {
    let u: URL;
    try {
      u = new URL(r.host);
    } catch {
      return `${JSON.stringify(r.host)} is not a URL`;
    }
    const tls = u.protocol === 'https:';
    const port = u.port || (tls ? '443' : '80');
    return {
      origin: `${u.protocol}//${u.hostname}:${port}`,
      path: u.pathname + u.search,
      tls: tls || backendTls,
    };
  }
  const hp =
    r.port !== undefined
      ? `${r.host.includes(':') && !r.host.startsWith('[') ? `[${r.host}]` : r.host}:${r.port}`
      : r.host;
  const path = r.path ?? defaultPath;
  if (!path.startsWith('/')) return `the path ${JSON.stringify(path)} must start with /`;
  return { origin: `${backendTls ? 'https' : 'http'}://${hp}`, path, tls: backendTls };
}

/**
 * An aws backend signs its calls itself (SigV4 for bedrock-agentcore in the ARN's region):
 * backendAuth.aws only gives it credentials. Any other backendAuth form (a bearer token for a
 * runtime with a JWT authorizer) replaces the signature.
 */
function awsAuth(target: AwsTarget, policies: ResolvedBackendPolicies): void {
  const auth = policies.backendAuth;
  if (!auth) return;
  if (!('aws' in auth)) {
    target.auth = { kind: 'none' };
    return;
  }
  target.auth = { kind: 'sigv4', ...(auth.aws.credentials ? { credentials: auth.aws.credentials } : {}) };
  delete policies.backendAuth;
}

/**
 * frontendPolicies.tcp.keepalives: probes on each client connection, with the backend keepalive's
 * defaults (180 s idle, then every 180 s, 9 unanswered probes) for what it leaves out.
 */
function downstreamKeepalive(
  ka:
    | {
        enabled?: boolean | undefined;
        time?: string | undefined;
        interval?: string | undefined;
        retries?: number | undefined;
      }
    | undefined,
): { keepalive?: NonNullable<GlobalIR['downstream']['keepalive']> } {
  if (!ka || ka.enabled === false) return {};
  return {
    keepalive: {
      timeMs: ms(ka.time, 180_000),
      intervalMs: ms(ka.interval, 180_000),
      retries: ka.retries ?? 9,
    },
  };
}

/** `byName`: a backend named by a DNS name (not an IP address) sends that name as Host. */
function parseHost(host: string, byName = false): BackendTarget {
  if (host.startsWith('unix:')) return { kind: 'unix', path: host.slice(5) };
  const { host: h, port } = splitHostPort(host);
  return byName && isIP(h) === 0
    ? { kind: 'host', host: h, port, rewriteHost: true }
    : { kind: 'host', host: h, port };
}

/**
 * An internal backend on a route that takes any Host (neither it nor its listener names one) is
 * marked: there a request naming a DNS name is refused, since a page that rebinds its name to the
 * gateway's address would otherwise read the admin API through a visitor's browser.
 */
function markInternalBackends(binds: BindIR[]): void {
  for (const b of binds)
    for (const l of b.listeners)
      for (const r of l.routes)
        for (const be of r.backends)
          if (be.target.kind === 'internal' && l.hostname === undefined && r.hostnames.length === 0)
            be.target.anyHost = true;
}

/** How often an idle MCP stream carries a comment when sseKeepAlive is unset. */
const MCP_KEEPALIVE_MS = 25_000;

/** `internal: forward`, or an admin path (a leading / added when it has none, as agentgateway does). */
function internalTarget(v: string): BackendTarget {
  return v === 'forward' ? { kind: 'internal' } : { kind: 'internal', path: v.startsWith('/') ? v : `/${v}` };
}

/** How a config error names a backend that cannot be an A2A agent. */
const NOT_A2A: Record<Exclude<BackendTarget['kind'], 'host'>, string> = {
  a2a: 'an a2a backend',
  unix: 'a unix socket',
  dynamic: 'a dynamic forward proxy',
  invalid: 'an invalid backend',
  internal: 'an internal backend',
  ai: 'an ai backend',
  mcp: 'an mcp backend',
  aws: 'an aws backend',
  service: 'a service backend',
};

/** A backend of this kind, as problems name it. */
function backendKindName(kind: BackendTarget['kind']): string {
  return kind === 'host' ? 'a host backend' : NOT_A2A[kind];
}

/**
 * Most specific wins per policy field: later arguments replace earlier ones field by field. The
 * exception is `authorization`, whose rules accumulate (a route cannot drop a gateway's Deny rule).
 */
export function mergePolicies<T extends object>(...layers: (T | undefined)[]): T | undefined {
  let out: T | undefined;
  for (const l of layers) {
    if (!l) continue;
    const prev = (out as { authorization?: unknown } | undefined)?.authorization;
    const prevIp = (out as IpAccessHolder | undefined)?.ipAccessControl;
    out = { ...(out ?? ({} as T)), ...l };
    const next = (l as { authorization?: unknown }).authorization;
    if (prev !== undefined && next !== undefined && prev !== next) {
      (out as { authorization?: unknown }).authorization = [prev, next].flat();
    }
    // address lists add up across levels, as agentgateway merges them
    const nextIp = (l as IpAccessHolder).ipAccessControl;
    if (prevIp !== undefined && nextIp !== undefined && prevIp !== nextIp)
      (out as IpAccessHolder).ipAccessControl = mergeIpAccessControl(prevIp, nextIp);
  }
  return out;
}
/**
 * Fields fixed by `inheritance: override` policies: their values, which no more specific layer
 * changes. Kept by merged object (Builder's #fixed) so what a route inherits carries them.
 */
type Fixed = ReadonlyMap<string, unknown>;
/**
 * One level of traffic policies: all of them merged, and those of them that are `inheritance:
 * override` merged alone.
 */
interface Layer {
  policies: TrafficPolicies | undefined;
  override?: TrafficPolicies | undefined;
}

/**
 * Traffic policy layers merged as mergePolicies does, least specific first, where the fields a
 * layer's override policies set keep the value those give them (an accumulating field, as
 * authorization, what has accumulated above the layer with theirs added). `carried`: fields fixed
 * above the first layer; the first to fix a field wins.
 */
export function mergeLocked(
  carried: Fixed | undefined,
  layers: readonly Layer[],
): { merged: TrafficPolicies | undefined; fixed: Fixed | undefined } {
  let merged: TrafficPolicies | undefined;
  let fixed = carried;
  for (const { policies, override } of layers) {
    if (!policies) continue;
    const above = merged;
    merged = mergePolicies(merged, policies) as TrafficPolicies;
    const out = merged as Record<string, unknown>;
    if (fixed) for (const [k, v] of fixed) out[k] = v;
    if (!override) continue;
    const locked = mergePolicies(above, override) as Record<string, unknown>;
    for (const [k, v] of Object.entries(override)) {
      if (v === undefined || fixed?.has(k)) continue;
      const next = new Map(fixed);
      next.set(k, locked[k]);
      fixed = next;
      out[k] = locked[k];
    }
  }
  return { merged, fixed };
}
type IpAccessHolder = Pick<TrafficPolicies, 'ipAccessControl'>;
type IpAccessControl = NonNullable<TrafficPolicies['ipAccessControl']>;

/**
 * Two ipAccessControl policies as one, `outer` (a listener's, a gateway's) under `inner` (a route's):
 * an address either allows is allowed and one either denies is denied; a setting the inner one makes
 * wins.
 */
function mergeIpAccessControl(outer: IpAccessControl, inner: IpAccessControl): IpAccessControl {
  const joined = (a: readonly string[] | undefined, b: readonly string[] | undefined) => {
    const all = [...new Set([...(a ?? []), ...(b ?? [])])];
    return all.length > 0 ? all : undefined;
  };
  const allow = joined(outer.allow, inner.allow);
  const deny = joined(outer.deny, inner.deny);
  const hops = inner.xffNumTrustedHops ?? outer.xffNumTrustedHops;
  const max = inner.maxXffLength ?? outer.maxXffLength;
  const skip = inner.skipPrivateIps ?? outer.skipPrivateIps;
  const full = inner.enforceFullChain ?? outer.enforceFullChain;
  return {
    ...(allow ? { allow } : {}),
    ...(deny ? { deny } : {}),
    ...(hops !== undefined ? { xffNumTrustedHops: hops } : {}),
    ...(max !== undefined ? { maxXffLength: max } : {}),
    ...(skip !== undefined ? { skipPrivateIps: skip } : {}),
    ...(full !== undefined ? { enforceFullChain: full } : {}),
  };
}

function secretHashReplacer(this: Record<string, unknown>, k: string, v: unknown): unknown {
  // Secrets print as [redacted]; hash their content so a rotated key is a new version. JSON.stringify
  // hands the replacer what toJSON gave ('[redacted]'): the Secret itself is the holder's property.
  const raw = this[k];
  return raw instanceof Secret ? `secret:${createHash('sha256').update(raw.reveal()).digest('hex')}` : v;
}

/** The generic text a rejection carries when its config gives none (agentgateway's). */
export const DEFAULT_REJECTION_MESSAGE = 'The request was rejected due to inappropriate content';

/** How long a cloud guard service has to answer (agentgateway's shapes have no timeout). */
export const GUARD_SERVICE_TIMEOUT_MS = 10_000;

/**
 * What the guard IR needs of the loader, each reporting its own failures at the path given (relative
 * to the guard entry): a key given as {file}, a backendTLS with its files read, a named host backend.
 * undefined: unreadable or unknown, already reported.
 */
export interface GuardContext {
  read(at: FieldPath, file: { file: string }): string | undefined;
  tls(at: FieldPath, t: BackendTLS): BackendTlsIR | undefined;
  tunnel(at: FieldPath, t: NonNullable<BackendPolicies['backendTunnel']>): TunnelIR | undefined;
  /** A Service of `services`: its hostname:port and its workloads' addresses. */
  service(
    at: FieldPath,
    ref: { name: string; port: number },
  ): { host: string; endpoints?: InTurnEndpoint[] } | undefined;
  /** A named host backend; its backendTLS resolved (and reported) at the backend's own path, null when broken. */
  backend(
    at: FieldPath,
    name: string,
  ): { host: string; policies?: BackendPolicies | undefined; tls?: BackendTlsIR | null } | undefined;
  fail(at: FieldPath, message: string): void;
}
const inlineOnly: GuardContext = {
  read: () => undefined,
  tls: () => undefined,
  tunnel: () => undefined,
  service: () => undefined,
  backend: () => undefined,
  fail: () => {},
};

type GuardServicePolicies = {
  backendTLS?: BackendTLS | undefined;
  requestHeaderModifier?: LlmGuardServiceIR['requestHeaders'] | undefined;
  tcp?: LlmGuardServiceIR['tcp'] | undefined;
  http?: { version?: 'HTTP1' | 'HTTP2' | null | undefined; requestTimeout?: string | undefined } | undefined;
  backendTunnel?: BackendPolicies['backendTunnel'];
  /** Its `credentials` (the form itself is the guard's own, read by each kind). */
  backendAuth?: unknown;
} | null;

/** agentgateway's PromptGuard as the guard IR: each entry one guard of its kind. */
export function promptGuardIR(g: PromptGuard, base: GuardContext = inlineOnly): LlmGuardsIR {
  type Entry = NonNullable<PromptGuard['request']>[number];
  const guard = (e: Entry, where: FieldPath): LlmGuardIR[] => {
    // the loader's paths for this entry (request[i] / response[i])
    const ctx: GuardContext = {
      read: (at, file) => base.read([...where, ...at], file),
      tls: (at, t) => base.tls([...where, ...at], t),
      tunnel: (at, t) => base.tunnel([...where, ...at], t),
      service: (at, ref) => base.service([...where, ...at], ref),
      backend: (at, name) => base.backend([...where, ...at], name),
      fail: (at, message) => base.fail([...where, ...at], message),
    };
    return guardEntry(e, ctx);
  };
  return {
    streaming: g.streaming === true || g.streaming === 'Enabled',
    request: (g.request ?? []).flatMap((e, i) => guard(e, ['request', i])),
    response: (g.response ?? []).flatMap((e, i) => guard({ ...e, scope: ['messages'] }, ['response', i])),
  };
}

/** One guard entry as the guard IR (none when a part of it could not be read, already reported). */
function guardEntry(e: NonNullable<PromptGuard['request']>[number], ctx: GuardContext): LlmGuardIR[] {
  const read = ctx.read.bind(ctx);
  /**
   * A cloud guard's service: its host (or the stand-in's), its TLS, the headers set on calls and its
   * connection's tcp and http settings.
   */
  const service = (
    kind: string,
    host: string,
    override: string | undefined,
    p: GuardServicePolicies | undefined,
  ): LlmGuardServiceIR | undefined => {
    const tls = p?.backendTLS ? ctx.tls([kind, 'policies', 'backendTLS'], p.backendTLS) : undefined;
    if (p?.backendTLS && !tls) return undefined;
    const tunnel = p?.backendTunnel
      ? ctx.tunnel([kind, 'policies', 'backendTunnel'], p.backendTunnel)
      : undefined;
    if (p?.backendTunnel && !tunnel) return undefined;
    // backendAuth.credentials: more secrets, each in a header of its own (headers only, by the schema)
    const creds =
      (p?.backendAuth as { credentials?: { location: AuthLocationIR; key: string | { file: string } }[] })
        ?.credentials ?? [];
    const credentials: { header: string; value: Secret }[] = [];
    for (const [i, c] of creds.entries()) {
      const at: FieldPath = [kind, 'policies', 'backendAuth', 'credentials', i, 'key'];
      const text = typeof c.key === 'string' ? c.key : read(at, c.key)?.trim();
      if (text === undefined) return undefined;
      if (text === '' || /[\r\n\0]/.test(text)) {
        ctx.fail(
          at,
          text === '' ? 'the key is empty' : 'the key holds a line break or NUL, which no header can carry',
        );
        return undefined;
      }
      const h = sealedHeader(c.location, text);
      if (h) credentials.push(h);
    }
    return {
      origin: serviceOrigin(host, override, tls !== undefined),
      ...(credentials.length > 0 ? { credentials } : {}),
      timeoutMs: ms(p?.http?.requestTimeout, GUARD_SERVICE_TIMEOUT_MS),
      ...(tls ? { tls } : {}),
      ...(tunnel ? { tunnel } : {}),
      ...(p?.requestHeaderModifier ? { requestHeaders: p.requestHeaderModifier } : {}),
      ...serviceConnection(p),
    };
  };
  const r = e.rejection;
  const rejection: LlmGuardIR['rejection'] = {
    status: r?.status ?? 403,
    message: r?.body ?? DEFAULT_REJECTION_MESSAGE,
    ...(r?.headers ? { headers: r.headers } : {}),
  };
  const scope = e.scope ?? ['systemPrompt', 'messages'];
  if (e.webhook) {
    const w = webhookGuardIR(e.webhook, scope, rejection, ctx);
    return w ? [w] : [];
  }
  const common = { scope, rejection };
  const key = (at: FieldPath, k: string | { file: string } | undefined): Secret | undefined | null => {
    if (k === undefined) return undefined;
    const text = typeof k === 'string' ? k : read(at, k)?.trim();
    return text === undefined ? null : new Secret(text);
  };
  if ('openAIModeration' in e && e.openAIModeration) {
    const m = e.openAIModeration;
    const ma = m.policies?.backendAuth;
    const apiKey = key(
      ['openAIModeration', 'policies', 'backendAuth', 'key'],
      ma && 'key' in ma ? ma.key : undefined,
    );
    if (apiKey === null) return [];
    const svc = service('openAIModeration', OPENAI_MODERATION_HOST, m.hostOverride, m.policies);
    if (!svc) return [];
    return [
      {
        kind: 'openAIModeration',
        name: 'openAIModeration',
        ...common,
        ...(m.action === 'audit' ? { audit: true as const } : {}),
        settings: {
          service: svc,
          model: m.model ?? DEFAULT_MODERATION_MODEL,
          ...(apiKey ? { apiKey } : {}),
        },
      },
    ];
  }
  if (e.bedrockGuardrails) {
    const b = e.bedrockGuardrails;
    const ba = b.policies?.backendAuth;
    let auth: LlmGuardSettings['bedrockGuardrails']['auth'] = { kind: 'chain' };
    if (ba && 'key' in ba) {
      const k = key(['bedrockGuardrails', 'policies', 'backendAuth', 'key'], ba.key);
      if (!k) return [];
      auth = { kind: 'key', key: k };
    } else if (ba && 'aws' in ba && 'accessKeyId' in ba.aws) {
      const a = ba.aws;
      auth = {
        kind: 'static',
        accessKeyId: a.accessKeyId,
        secretAccessKey: new Secret(a.secretAccessKey),
        ...(a.sessionToken ? { sessionToken: new Secret(a.sessionToken) } : {}),
      };
    } else if (ba && 'aws' in ba && 'assumeRole' in ba.aws && ba.aws.assumeRole) {
      const at: FieldPath = ['bedrockGuardrails', 'policies', 'backendAuth', 'aws', 'assumeRole'];
      let bad = false;
      const role = assumeRoleIR(ba.aws.assumeRole, at, (problems) => {
        for (const p of problems) {
          bad = true;
          ctx.fail(p.path, p.message);
        }
      });
      if (bad) return [];
      auth = { kind: 'assumeRole', role };
    }
    const svc = service(
      'bedrockGuardrails',
      `bedrock-runtime.${b.region}.amazonaws.com`,
      b.hostOverride,
      b.policies,
    );
    if (!svc) return [];
    return [
      {
        kind: 'bedrockGuardrails',
        name: 'bedrockGuardrails',
        ...common,
        settings: {
          service: svc,
          identifier: b.guardrailIdentifier,
          version: b.guardrailVersion,
          region: b.region,
          audit: b.action === 'Audit',
          auth,
        },
      },
    ];
  }
  if (e.azureContentSafety) {
    const a = e.azureContentSafety;
    const ba = a.policies?.backendAuth;
    let auth: LlmGuardSettings['azureContentSafety']['auth'];
    if (ba && 'key' in ba) {
      const k = key(['azureContentSafety', 'policies', 'backendAuth', 'key'], ba.key);
      if (!k) return [];
      auth = { kind: 'key', key: k };
    } else auth = { kind: 'azure', azure: resolveAzure(ba && 'azure' in ba ? ba.azure : { implicit: {} }) };
    const t = a.analyzeText;
    // analyzeText is the default: a guard that looked for nothing would pass everything
    const analyze =
      t || !a.detectJailbreak
        ? {
            apiVersion: t?.apiVersion ?? '2024-09-01',
            threshold: t?.severityThreshold ?? 2,
            blocklists: t?.blocklistNames ?? [],
            haltOnBlocklistHit: t?.haltOnBlocklistHit ?? false,
          }
        : undefined;
    const svc = service('azureContentSafety', a.endpoint, a.hostOverride, a.policies);
    if (!svc) return [];
    return [
      {
        kind: 'azureContentSafety',
        name: 'azureContentSafety',
        ...common,
        ...(a.action === 'audit' ? { audit: true as const } : {}),
        settings: {
          service: svc,
          ...(analyze ? { analyze } : {}),
          ...(a.detectJailbreak
            ? { jailbreak: { apiVersion: a.detectJailbreak.apiVersion ?? '2024-02-15-preview' } }
            : {}),
          auth,
        },
      },
    ];
  }
  if (e.googleModelArmor) {
    const g = e.googleModelArmor;
    const ba = g.policies?.backendAuth;
    const token =
      ba && 'key' in ba ? key(['googleModelArmor', 'policies', 'backendAuth', 'key'], ba.key) : undefined;
    if (token === null) return [];
    const location = g.location ?? 'us-central1';
    const svc = service(
      'googleModelArmor',
      `modelarmor.${location}.rep.googleapis.com`,
      g.hostOverride,
      g.policies,
    );
    if (!svc) return [];
    return [
      {
        kind: 'googleModelArmor',
        name: 'googleModelArmor',
        ...common,
        ...(g.action === 'audit' ? { audit: true as const } : {}),
        settings: {
          service: svc,
          project: g.projectId,
          location,
          template: g.templateId,
          ...(token ? { token } : {}),
        },
      },
    ];
  }
  if ('promptInjection' in e && e.promptInjection) {
    const p = e.promptInjection;
    return [
      {
        kind: 'promptInjection',
        name: 'promptInjection',
        ...common,
        settings: { threshold: p.threshold ?? 0.33, action: p.action ?? 'reject' },
      },
    ];
  }
  // The schema refuses the kinds this build does not implement.
  if (!e.regex) return [];
  const rules = e.regex.rules.map((x) =>
    'builtin' in x ? { builtin: x.builtin } : { pattern: x.pattern, ...(x.name ? { name: x.name } : {}) },
  );
  return [
    {
      kind: 'regex',
      name: 'regex',
      scope,
      rejection,
      settings: { action: e.regex.action ?? 'mask', rules },
    },
  ];
}

/** The policies a backend runs (a policy targeting one takes only these). */
const BACKEND_POLICY_NAMES = new Set(Object.keys(BackendPoliciesSchema.shape));

/**
 * Which of a named backend's policies a call to a service takes, each with how the message names it
 * ("backendAuth key": only the key form; "requestHeaderModifier add/set": no remove).
 */
type Takes = Partial<Record<keyof BackendPolicies, string>>;
const TAKES_TLS: Takes = { backendTLS: 'backendTLS' };
const TAKES_WEBHOOK: Takes = {
  backendTLS: 'backendTLS',
  requestHeaderModifier: 'requestHeaderModifier',
  tcp: 'tcp',
  http: 'http',
};
const TAKES_PROCESSOR: Takes = {
  backendTLS: 'backendTLS',
  backendAuth: 'backendAuth key',
  requestHeaderModifier: 'requestHeaderModifier',
  tcp: 'tcp',
  http: 'http',
  backendTunnel: 'backendTunnel',
};
const TAKES_COLLECTOR: Takes = {
  backendTLS: 'backendTLS',
  backendAuth: 'backendAuth key',
  requestHeaderModifier: 'requestHeaderModifier add/set',
};

/** A bind listener's gateway (its gatewayName, else bind/<port>) and name (else listener<index>). */
/** A backend's part, as the section policies are kept: the backend's name and the part's. */
/** A Map that remembers which of its keys were read with `get` (`peek` reads without counting). */
class ReadMap<V> extends Map<string, V> {
  readonly #read = new Set<string>();
  override get(key: string): V | undefined {
    const v = super.get(key);
    if (v !== undefined) this.#read.add(key);
    return v;
  }
  peek(key: string): V | undefined {
    return super.get(key);
  }
  wasRead(key: string): boolean {
    return this.#read.has(key);
  }
}

function sectionKey(backend: string, section: string): string {
  return `${backend}\n${section}`;
}

function bindListenerName(
  port: number | null | undefined,
  l: { gatewayName?: string | undefined; name?: string | undefined },
  li: number,
): { gateway: string; name: string } {
  // an internal bind without a port: bind/internal
  return { gateway: l.gatewayName ?? `bind/${port ?? 'internal'}`, name: l.name ?? `listener${li}` };
}

/** A listener of `gateways.<name>`: its name, else listener<index>, or `default` for the gateway's own. */
function gatewayListenerName(gw: { listeners?: unknown[] | undefined }, l: object, li: number): string {
  return (
    ('name' in l && typeof l.name === 'string' && l.name) || (gw.listeners ? `listener${li}` : 'default')
  );
}

/** A `<gateway>:<port>` policy target's gateway and port (the gateway name may hold a colon). */
function splitGatewayPort(target: string): [gateway: string, port: number] {
  const i = target.lastIndexOf(':');
  return [target.slice(0, i), Number(target.slice(i + 1))];
}

/** `at` when `from` sets `policy` (where it is written), else undefined. */
function written(at: FieldPath, from: object | null | undefined, policy: string): FieldPath | undefined {
  return from && (from as Record<string, unknown>)[policy] !== undefined ? at : undefined;
}

/**
 * TLS to a policy's service given by `service` sends and verifies the Service's hostname (its workloads
 * are dialled by address), unless its backendTLS names another.
 */
function withServiceName(
  entry: { policies?: { backendTLS?: BackendTLS | undefined } | null | undefined },
  hostname: string,
): void {
  const tls = entry.policies?.backendTLS;
  if (tls && tls.hostname === undefined)
    entry.policies = { ...entry.policies, backendTLS: { ...tls, hostname } };
}

/**
 * What a call to `role` does not take of named backend `name`'s policies, as the message that says so
 * (each refused one by name, and what the call takes); undefined when it takes them all.
 */
function refusedNamedPolicies(
  name: string,
  p: BackendPolicies | undefined,
  role: string,
  takes: Takes,
): string | undefined {
  const refused: string[] = [];
  for (const [k, v] of Object.entries(p ?? {})) {
    if (v === undefined) continue;
    const as = takes[k as keyof BackendPolicies];
    if (as === undefined) refused.push(k);
    else if (as.endsWith(' key') && !(typeof v === 'object' && v !== null && 'key' in v))
      refused.push(`${k} (other than key)`);
    else if (as.endsWith(' add/set') && (v as { remove?: unknown }).remove !== undefined)
      refused.push(`${k}.remove`);
  }
  if (refused.length === 0) return undefined;
  const list = Object.values(takes) as string[];
  const named = list.length > 1 ? `${list.slice(0, -1).join(', ')} and ${list.at(-1)}` : list[0];
  return `backend ${JSON.stringify(name)} sets ${refused.join(', ')}, which ${role} does not take (it takes ${named})`;
}

/** A guard service's tcp and http policies as the service IR holds them. */
function serviceConnection(p: GuardServicePolicies | undefined): Pick<LlmGuardServiceIR, 'tcp' | 'http2'> {
  return {
    ...(p?.tcp ? { tcp: p.tcp } : {}),
    ...(p?.http?.version === 'HTTP2' ? { http2: true } : {}),
  };
}

function webhookGuardIR(
  w: GuardWebhook,
  scope: LlmGuardIR['scope'],
  rejection: LlmGuardIR['rejection'],
  ctx: GuardContext,
): LlmGuardIR<'webhook'> | undefined {
  // A host without a port is port 80, as agentgateway's; a named host backend brings its TLS.
  let host = '';
  let tls: BackendTlsIR | undefined;
  let requestHeaders: LlmGuardServiceIR['requestHeaders'];
  let connection: GuardServicePolicies | undefined;
  let endpoints: LlmGuardServiceIR['endpoints'];
  if ('host' in w.target) {
    host = String(w.target.host);
    // agentgateway's https:// host: TLS with the system's roots; http:// the plain default
    const scheme = /^(https?):\/\//i.exec(host);
    if (scheme) {
      host = host.slice(scheme[0].length).replace(/\/+$/, '');
      if (scheme[1]?.toLowerCase() === 'https') {
        tls = ctx.tls(['webhook', 'target', 'host'], {});
        if (!tls) return undefined;
      }
    }
  } else if ('service' in w.target) {
    const svc = ctx.service(['webhook', 'target', 'service'], w.target.service);
    if (!svc) return undefined;
    host = svc.host;
    endpoints = svc.endpoints;
  } else if ('backend' in w.target) {
    const at = ['webhook', 'target', 'backend'];
    const name = w.target.backend;
    const def = ctx.backend(at, name);
    if (!def) return undefined;
    host = def.host;
    const p = def.policies ?? {};
    const refused = refusedNamedPolicies(name, p, 'a webhook call', TAKES_WEBHOOK);
    if (refused) ctx.fail(at, refused);
    if (def.tls === null) return undefined;
    tls = def.tls;
    if (p.requestHeaderModifier) requestHeaders = p.requestHeaderModifier;
    connection = p;
  }
  // the target's own policies, over a named backend's field by field
  const own = w.target.policies;
  if (own) {
    if (own.backendTLS) {
      const t = ctx.tls(['webhook', 'target', 'policies', 'backendTLS'], own.backendTLS);
      if (!t) return undefined;
      tls = t;
    }
    if (own.requestHeaderModifier) requestHeaders = own.requestHeaderModifier;
    connection = { ...(connection ?? {}), ...own } as GuardServicePolicies;
  }
  const origin = `${tls ? 'https' : 'http'}://${/:[0-9]+$/.test(host) ? host : `${host}:${tls ? 443 : 80}`}`;
  return {
    kind: 'webhook',
    name: 'webhook',
    scope,
    rejection,
    settings: {
      origin,
      ...(tls ? { tls } : {}),
      ...(requestHeaders ? { requestHeaders } : {}),
      ...serviceConnection(connection),
      ...(endpoints ? { endpoints } : {}),
      headers: w.headers ?? {},
      forward: (w.forwardHeaderMatches ?? []).map((m) => ({ name: m.name.toLowerCase(), ...m.value })),
      failureMode: w.failureMode ?? 'failClosed',
      audit: w.action === 'audit',
      // the webhook's own timeout, else the named backend's requestTimeout
      timeoutMs: ms(w.timeout ?? connection?.http?.requestTimeout, DEFAULT_TIMEOUT_MS),
      ...(w.messageFormat === 'raw' ? { raw: true } : {}),
      ...(w.path !== undefined ? { path: w.path } : {}),
      ...(w.minSizeBytes ? { minSizeBytes: w.minSizeBytes } : {}),
    },
  };
}

/**
 * ai policies from the least specific (the route's) to the most (a provider's), merged as
 * agentgateway merges them: field by field, a more specific field replacing the whole field
 * (modelAliases and routes are not combined entry by entry).
 */
function mergeAi(...layers: (AiPolicy | undefined)[]): AiPolicy | undefined {
  let out: AiPolicy | undefined;
  for (const l of layers) if (l) out = { ...out, ...l };
  return out;
}

/** A catalog's rates as numbers; the unset and null ones left out. */
function costRates(r: CatalogRates | undefined): CostRatesIR {
  const out: CostRatesIR = {};
  for (const [k, v] of Object.entries(r ?? {}))
    if (typeof v === 'string') out[k as keyof CostRatesIR] = Number(v);
  return out;
}

/** Enrichment messages with roles in lower case (SYSTEM and system are one role). */
export function promptEnrichmentIR(p: PromptEnrichment): LlmPromptEnrichmentIR | undefined {
  const msgs = (l: PromptEnrichment['prepend']) =>
    (l ?? []).map((m) => ({ role: m.role.toLowerCase(), content: m.content }));
  const out = { prepend: msgs(p.prepend), append: msgs(p.append) };
  return out.prepend.length + out.append.length > 0 ? out : undefined;
}
