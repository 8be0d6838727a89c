// The proxy's one intermediate representation. The standalone loader and the xDS client both produce
// it; everything after (compile, swap, serve) is shared. Plain data, so it crosses worker threads.

import type {
  AccessLog,
  AiRouteType,
  Authorization,
  BackendPolicies,
  ExtAuthz,
  JWT_SIGN_ALGS,
  RouteMatch,
  TrafficPolicies,
} from '@gw/api';
import type { Secret } from '../secret.ts';
import type { ProxyProtocolIR } from '../server/proxy-protocol.ts';
import type { AuthLocationIR, BackendTlsIR, InTurnEndpoint } from './connection-ir.ts';
import type { AzureAuthIR, CrossAppAccessIR, GcpAuthIR, OAuthTokenExchangeIR } from './token-auth.ts';

export type { AuthLocationIR, BackendTlsIR };

export interface ProxyIR {
  /** Content hash: equal configs have equal versions, so a no-op reload is skipped. */
  version: string;
  source: string;
  global: GlobalIR;
  binds: BindIR[];
  frontend: FrontendIR;
}

/** How backend names resolve (config.enableIpv6, config.dns.lookupFamily); unset: both families, as the system orders them. */
export interface DnsIR {
  family?: 4 | 6;
  /** V4Preferred: IPv4 addresses first. */
  order?: 'ipv4first';
}

export interface GlobalIR {
  maxBufferSize: number;
  dns?: DnsIR;
  connectTimeoutMs: number;
  poolIdleTimeoutMs: number;
  poolMaxSize: number | null;
  keepalive: { enabled: boolean; timeMs: number; intervalMs: number; retries: number };
  http1IdleTimeoutMs: number;
  downstream: DownstreamLimits;
  /** From the stop signal: in-flight requests are cut after this long (connectionTerminationDeadline). */
  terminationDeadlineMs: number;
  /**
   * From the stop signal: the listeners keep accepting and serving this long, while readiness already
   * fails, so load balancers stop sending before connections are refused (connectionMinTerminationDeadline).
   */
  terminationMinMs: number;
  /**
   * Header names whose values diagnostics (trace, dumps) never show: the defaults, the configured
   * ones, and every header an auth policy reads a credential from.
   */
  sensitiveHeaders: string[];
  /** Query parameters an auth policy reads a credential from: shown as [redacted] in traces and logs. */
  credentialQueryParams: string[];
  /** Connections to each guardrail webhook (GUARDRAIL_WEBHOOK_* environment variables, read at load). */
  guardrailWebhook: { maxConnections: number | null; keepAliveMs: number };
  /** config.metrics: labels added to the request metrics, metrics not collected. */
  metrics?: MetricsIR;
  /** config.modelCatalog, merged: what each provider's models cost (llm/cost.ts prices requests with it). */
  modelCatalog?: CostCatalogIR;
  /** config.session.key: what sessions are sealed with, read once at start (cli.ts); unset: SESSION_KEY. */
  sessionKey?: Secret;
  /** config.mcp.sessionTtl: an MCP session's life from its initialize; unset: no limit. */
  mcpSessionTtlMs?: number;
  /** config.customFunctions: the block of CEL functions every expression of this config may call. */
  customFunctions?: string;
}

/** Prices in currency units per million tokens, by kind; an unset kind is not priced. */
export type CostRatesIR = Partial<
  Record<'input' | 'output' | 'cacheRead' | 'cacheWrite' | 'reasoning' | 'inputAudio' | 'outputAudio', number>
>;
export interface CostModelIR {
  rates: CostRatesIR;
  /** Ascending by contextOver: the highest one the request's context exceeds overlays `rates`. */
  tiers: { contextOver: number; rates: CostRatesIR }[];
}
/** provider name → model id → its prices. */
/** An IAM role to assume; the session name and tag values are names or CEL expressions. */
export interface AwsAssumeRoleIR {
  roleArn: string;
  sessionName?: string | { expression: string };
  tags: { key: string; value?: string; expression?: string }[];
  /** sts:ExternalId sent with AssumeRole. */
  externalId?: string;
}

export type CostCatalogIR = Record<string, Record<string, CostModelIR>>;

export interface MetricsIR {
  /** Label name → CEL evaluated when the request ends (gw_requests_total, gw_request_duration_seconds). */
  labels: Record<string, string>;
  /** Names of metrics not collected or served. */
  remove: string[];
}

/** Bounds on what downstream connections may hold (frontendPolicies.http / .tcp); a 0 ms timeout is off. */
export interface DownstreamLimits {
  /** First byte of an HTTP/1 request (of a new connection: its start) to the end of its headers. */
  requestHeadersTimeoutMs: number;
  /** A new connection's silence before its first byte (h2: before its first stream); TLS handshakes. */
  firstRequestTimeoutMs: number;
  /** frontendPolicies.tls.handshakeTimeout: a TLS handshake not done by then closes the connection; unset: firstRequestTimeoutMs. */
  tlsHandshakeTimeoutMs?: number;
  /** A stalled request body, on routes without a request timeout. */
  requestBodyIdleTimeoutMs: number;
  /** Open connections per bind, across the workers of a replica. */
  maxConnections: number;
  http2MaxConcurrentStreams: number;
  /**
   * Requests in flight per bind across the workers of a replica (frontendPolicies.http.
   * maxConcurrentRequests): each holds its place until its response is sent; unset: no limit.
   */
  maxConcurrentRequests?: number;
  /** HTTP/2 settings advertised to clients (frontendPolicies.http); unset: Node's defaults. */
  http2?: { initialWindowSize?: number; maxFrameSize?: number; maxHeaderListSize?: number };
  /** How long a client connection may live (frontendPolicies.http.maxConnectionDuration); 0: no limit. */
  maxConnectionDurationMs: number;
  /** Each HTTP/2 connection's receive window (frontendPolicies.http.http2ConnectionWindowSize). */
  http2ConnectionWindowSize?: number;
  /** TCP keepalive probes on each client connection (frontendPolicies.tcp.keepalives); unset: none. */
  keepalive?: { timeMs: number; intervalMs: number; retries: number };
  /**
   * HTTP/2 PINGs on each client connection (frontendPolicies.http.http2KeepaliveInterval/Timeout): one
   * every intervalMs; one unanswered after timeoutMs closes the connection. Unset: none.
   */
  http2Keepalive?: { intervalMs: number; timeoutMs: number };
  /** The most headers an HTTP/1 request may have; more is a 431. Unset: Node's (2000, the rest dropped). */
  http1MaxHeaders?: number;
  /** http1HeaderCase preserve: an HTTP/1 request's header names go upstream as the client spelled them. */
  preserveHeaderCase?: true;
}

/** accessLog.otlp: each access log record also exported as an OpenTelemetry log record. */
export interface AccessLogOtlpIR extends CollectorConnectionIR {
  /** The OTLP collector: for http the full URL (path included), for grpc its origin. */
  endpoint: string;
  protocol: 'grpc' | 'http';
  /** The record's own shaping; each unset part is the access log's (the preset always is). */
  preset?: 'otel';
  filter?: string;
  add?: Record<string, string>;
  remove?: string[];
}

export interface FrontendIR {
  accessLog?: AccessLog;
  accessLogOtlp?: AccessLogOtlpIR;
  /** OpenTelemetry spans (frontendPolicies.tracing, or config.tracing); absent: no request pays for tracing. */
  tracing?: TracingIR;
  /** Layer-4 rules on each downstream connection's source address, before any HTTP. */
  networkAuthorization?: Authorization;
  /** An ext_authz gRPC check of each new connection, after networkAuthorization (server/connection-check.ts). */
  networkExtAuthz?: Extract<ExtAuthzIR, { grpc: unknown }>;
  /** How request paths are normalised before routing (pipeline/normalize-path.ts); absent: the defaults. */
  paths?: {
    mergeSlashes: boolean;
    escapedSlashes: 'KeepUnchanged' | 'RejectRequest' | 'UnescapeAndForward';
  };
  /** Peers (IP or CIDR) whose X-Forwarded-For/-Proto are kept; absent or empty: nobody. */
  trustedProxies?: string[];
  /** The PROXY protocol header downstream connections start with (server/proxy-protocol.ts). */
  proxyProtocol?: ProxyProtocolIR;
  /**
   * frontendPolicies.connect: CONNECT requests are routed (a TCP tunnel to the backend), or each is a
   * tunnel into the gateway's own bind on its port (server/connect-tunnel.ts); absent: 405.
   */
  connect?: 'route' | 'tunnel';
}

/**
 * Sampling of one kind: always, never, a fraction of requests, or CEL giving one of those for each
 * request (a string).
 */
export type SamplingIR = boolean | number | string;

/** How exports reach an OTLP collector beyond its URL: the policies on it (or its named backend's). */
export interface CollectorConnectionIR {
  /** TLS to the collector (the endpoint is https then). */
  tls?: BackendTlsIR;
  /** A key sent in a header with every export (backendAuth key). */
  credential?: { header: string; value: Secret };
  /** Headers sent with every export (requestHeaderModifier add and set). */
  headers?: Record<string, string>;
}

export interface TracingIR extends Omit<CollectorConnectionIR, 'headers'> {
  /** The OTLP collector: for http the full URL (path included), for grpc its origin. */
  endpoint: string;
  protocol: 'grpc' | 'http';
  /** Sent with every export. */
  headers: Record<string, string>;
  /** Resource attributes by CEL, evaluated once without a request (service.name defaults to "gw"). */
  resources: Record<string, string>;
  /** Span attributes added by CEL when the request ends. */
  attributes: Record<string, string>;
  /** Attributes left out of the spans. */
  remove: string[];
  /** Requests without a (valid) traceparent. */
  randomSampling: SamplingIR;
  /** Requests whose traceparent is marked sampled. */
  clientSampling: SamplingIR;
  /** Requests whose traceparent is marked not sampled: traced anyway (and sent on sampled) when it holds. */
  parentNotSampled: SamplingIR;
  /** CEL: spans of requests for which it is not true are dropped. */
  filter?: string;
}

export interface TlsServerIR {
  cert: string;
  key: Secret;
  root?: string;
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** OpenSSL's cipher list (TLS 1.3 and 1.2 suites); unset: the TLS library's defaults. */
  ciphers?: string;
  /** The key exchange groups in order of preference (Node's ecdhCurve); unset: the library's. */
  ecdhCurve?: string;
  /** The ALPN protocols offered, in order (frontendPolicies.tls.alpn); unset: h2 and http/1.1 on HTTPS, none on TLS. */
  alpn?: string[];
}

export interface BindIR {
  /** `address:port`, stable across reloads so the listening socket is kept. */
  key: string;
  address: string;
  port: number;
  protocol: ListenerProtocol;
  listeners: ListenerIR[];
  /** tunnelProtocol connect: the port takes CONNECT tunnels only, into the bind on each one's port. */
  tunnel?: true;
  /**
   * mode internal: no socket; reached only through CONNECT tunnels to `port` (0: to any port no
   * other bind takes).
   */
  internal?: true;
}

/** HTTP and HTTPS listeners serve `routes`; TCP and TLS listeners proxy connections by `tcpRoutes`. */
export type ListenerProtocol = 'HTTP' | 'HTTPS' | 'TCP' | 'TLS';

export interface ListenerIR {
  gateway: string;
  name: string;
  hostname?: string;
  protocol: ListenerProtocol;
  /** HTTPS: the certificates; TLS: set when TLS is terminated, absent for passthrough. */
  tls?: TlsServerIR;
  routes: RouteIR[];
  /** TCP and TLS listeners only. */
  tcpRoutes?: TcpRouteIR[];
  /**
   * Policies of the gateway phase (`policies[].phase: gateway` on the listener, its port or its
   * gateway, merged): they run on every request to the listener before a route is chosen.
   */
  gatewayPhase?: RoutePolicies;
}

/** A layer-4 route: the connection's bytes go to one of its backends, picked by weight. */
export interface TcpRouteIR {
  key: string;
  name: string;
  /** Where the route was defined, e.g. `binds[0].listeners[0].tcpRoutes[1]`. */
  path: string;
  /** Lower-case server names (exact or `*.suffix`) matched against the TLS SNI; empty: any. */
  hostnames: string[];
  backends: TcpBackendIR[];
}

export interface TcpBackendIR {
  /** host:port, or the name of a top-level backend. */
  name: string;
  weight: number;
  /**
   * dynamic: each connection dials where it asks, `target` (CEL over source.* and destination.*)
   * giving host:port; unset: its TLS server name at the port it came to.
   */
  target:
    | { kind: 'host'; host: string; port: number }
    | { kind: 'unix'; path: string }
    | { kind: 'dynamic'; target?: string };
  /**
   * backendTLS (TLS originated to the backend: the client's bytes travel inside it), tcp, and a named
   * backend's passive health (connections that fail count as unhealthy answers).
   */
  policies: Pick<ResolvedBackendPolicies, 'backendTLS' | 'backendTunnel' | 'tcp' | 'health'>;
}

export interface RouteIR {
  /** Unique in the config; used in metrics, logs and errors. */
  key: string;
  name: string;
  /** Where the route was defined, e.g. `binds[0].listeners[0].routes[2]`. */
  path: string;
  hostnames: string[];
  matches: RouteMatch[];
  /** Effective traffic policy: gateway → listener → route, most specific field wins. */
  policies: RoutePolicies;
  /** Where each effective policy was set: on the gateway/listener, or on the route itself. */
  policySources: Record<string, 'gateway' | 'route'>;
  backends: RouteBackendIR[];
  /**
   * A route with a routeGroup backend: the group's name. It has no policies or backends of its own:
   * once it matches, the group's routes (those with `delegatedFrom` = its key) are matched next, and
   * its policies are already merged into theirs.
   */
  routeGroup?: string;
  /** A route of a routeGroup: the key of the route that delegates to it (listed after that route). */
  delegatedFrom?: string;
}

/**
 * Traffic policies as the IR holds them: every credential (API keys and their hashes, htpasswd
 * lines) is a Secret from the moment the config loads, so a dump, a trace or a log line cannot print
 * one. Policies reveal them when they build their layer.
 */
export interface RoutePolicies
  extends Omit<
    TrafficPolicies,
    | 'apiKey'
    | 'basicAuth'
    | 'backendAuth'
    | 'oidc'
    | 'extAuthz'
    | 'extProc'
    | 'remoteRateLimit'
    | 'mcpRemoteRateLimit'
    | 'mcpAuthentication'
  > {
  apiKey?: ApiKeyIR;
  mcpAuthentication?: McpAuthenticationIR;
  basicAuth?: BasicAuthIR;
  oidc?: OidcIR;
  extAuthz?: ExtAuthzIR | { conditional: (ExtAuthzIR & { condition?: string })[] };
  extProc?: ServiceTlsIR<NonNullable<TrafficPolicies['extProc']>>;
  remoteRateLimit?: ServiceTlsIR<NonNullable<TrafficPolicies['remoteRateLimit']>>;
  /** Shown only: the route's mcp backends check it (McpTarget.remoteRateLimit). */
  mcpRemoteRateLimit?: McpRemoteRateLimitIR;
  /** Never set on a route: the loader hands a route's backendAuth to each of its backends. */
  backendAuth?: BackendAuthIR;
}

/** A service policy (plain or conditional) whose policies.backendTLS the loader has read and sealed. */
export type ServiceTlsIR<P> = P extends { conditional: (infer E)[] }
  ? { conditional: ServiceEntryTlsIR<E>[] }
  : ServiceEntryTlsIR<P>;
type ServiceEntryTlsIR<E> = Omit<E, 'policies'> & { policies?: ServiceCallIR };

type ApiKeyConfig = NonNullable<TrafficPolicies['apiKey']>;
/** `allowedModels`: the model name patterns the key may use on the LLM API; unset: any. */
export type ApiKeyEntryIR =
  | Secret
  | { key: Secret; metadata?: unknown; allowedModels?: string[] }
  | { keyHash: Secret; metadata?: unknown; allowedModels?: string[] };
export interface ApiKeyIR extends Omit<ApiKeyConfig, 'keys'> {
  keys: ApiKeyEntryIR[] | Record<string, ApiKeyEntryIR>;
}

/** mcpAuthentication with its clientSecret sealed (config/seal.ts). */
export type McpAuthenticationIR = Omit<NonNullable<TrafficPolicies['mcpAuthentication']>, 'clientSecret'> & {
  clientSecret?: Secret;
};

type OidcConfig = NonNullable<TrafficPolicies['oidc']>;
/** The client secret sealed; a discovery document or JWKS that was a file has been read (inline). */
export interface OidcIR extends Omit<OidcConfig, 'clientSecret'> {
  clientSecret: Secret;
}

/** One extAuthz check, TLS to its service resolved (the files read, the client key sealed). */
export type ExtAuthzIR = WithResolvedTls<ExtAuthz>;
/** How each call reaches a policy's service (extAuthz, extProc, remoteRateLimit): TLS, headers, a key sealed. */
export interface ServiceCallIR {
  backendTLS?: BackendTlsIR;
  /** requestHeaderModifier add and set: headers (gRPC metadata) on each check. */
  headers?: Record<string, string>;
  /** backendAuth key: the header (metadata) it goes in, with its prefix, and the value. */
  credential?: { header: string; value: Secret };
  /** backendAuth credentials: more secrets, each in a header of its own (written before the key). */
  credentials?: { header: string; value: Secret }[];
  /**
   * backendAuth obtained per call for the request it is made for (passthrough, jwtSign, gcp, azure,
   * oauthTokenExchange, crossAppAccess), each in a header; its `credentials` are in `credentials`.
   */
  auth?: BackendAuthIR;
}
type WithResolvedTls<E> = E extends unknown ? Omit<E, 'policies'> & { policies?: ServiceCallIR } : never;

type BasicAuthConfig = NonNullable<TrafficPolicies['basicAuth']>;
/** The htpasswd file, when it was a file, has been read into `htpasswd`. */
export interface BasicAuthIR extends Omit<BasicAuthConfig, 'users' | 'htpasswd'> {
  users?: Secret[];
  htpasswd?: Secret;
}

export type BackendTarget =
  | {
      kind: 'host';
      host: string;
      port: number;
      /**
       * Send the backend's own name as Host (agentgateway's default for a backend named by DNS name
       * in a file), unless a route's urlRewrite or hostRewrite says otherwise.
       */
      rewriteHost?: true;
    }
  | { kind: 'unix'; path: string }
  /** target: dynamic.target's CEL, giving host:port to dial; unset: the request's authority. */
  | { kind: 'dynamic'; target?: string }
  /** A backend that does not exist (`invalid`, an unresolved backendRef): answered 500. */
  | { kind: 'invalid' }
  /**
   * gw's admin API (`internal`): the request's own path, or `path` for every request. `anyHost`: its
   * route and listener name no hostname, so the Host a request names must be an address or localhost
   * (a DNS name could be a rebinding page's).
   */
  | { kind: 'internal'; path?: string; anyHost?: true }
  | ServiceTarget
  | AiTarget
  | McpTarget
  | A2aTarget
  | AwsTarget;

/**
 * A Service of the file's `services` (upstream/backends/service/): each request goes to one of the
 * workloads that name it, chosen by their weight (capacity).
 */
export interface ServiceTarget {
  kind: 'service';
  /** namespace/hostname */
  service: string;
  port: number;
  /** Its healthy workloads: the first address of each, at the port it maps the Service's to. */
  endpoints: { host: string; port: number; weight: number }[];
  /** The port's appProtocol is Http2 or Grpc: HTTP/2 by prior knowledge. */
  http2?: true;
  /** inferenceRouting: the endpoint picker that chooses each request's endpoint. */
  inference?: InferenceIR;
}

/**
 * An endpoint picker (inferenceRouting): the ext_proc call that chooses a service backend's endpoint
 * (its service, its mode: fail closed, bodies streamed both ways), and whether the address it picks is
 * dialled as it is (passthrough) or must be one of the Service's endpoints.
 */
export interface InferenceIR {
  picker: Exclude<NonNullable<RoutePolicies['extProc']>, { conditional: unknown }>;
  passthrough: boolean;
}

// ---------- AWS (the `aws` backend kind, upstream/backends/aws/) ----------

/**
 * An Amazon Bedrock AgentCore runtime: every request is its InvokeAgentRuntime operation
 * (POST /runtimes/{ARN}/invocations), signed with SigV4 for bedrock-agentcore in the ARN's region.
 */
export interface AwsTarget {
  kind: 'aws';
  agentCore: {
    agentRuntimeArn: string;
    region: string;
    /** AgentCore's endpoint in that region (bedrock-agentcore.<region>.amazonaws.com[.cn]). */
    host: string;
    qualifier?: string;
  };
  /**
   * sigv4: signed with the backend's backendAuth.aws credentials, else the environment and the SDK's
   * default chain; none: another backendAuth form (a bearer for a runtime with a JWT authorizer)
   * writes the credential.
   */
  auth:
    | { kind: 'sigv4'; credentials?: { accessKeyId: string; secretAccessKey: Secret; sessionToken?: Secret } }
    | { kind: 'none' };
}

// ---------- A2A (the `a2a` backend kind, a2a/ and upstream/backends/a2a/) ----------

/**
 * An A2A agent at host:port: a host backend under agentgateway's `a2a` policy (route or backend), or
 * an a2a GwBackend. Its agent cards are rewritten to point at the gateway and its JSON-RPC calls are
 * read (method, task, outcome) as they pass.
 */
export interface A2aTarget {
  kind: 'a2a';
  host: string;
  port: number;
}

// ---------- MCP (the `mcp` backend kind, mcp/ and upstream/backends/mcp/) ----------

/** An MCP backend: several MCP servers (targets) federated behind one MCP endpoint. */
export interface McpTarget {
  kind: 'mcp';
  targets: McpTargetIR[];
  /** Stateful: the client's session maps to one upstream session per target; Stateless: none. */
  sessionRouting: 'Stateful' | 'Stateless';
  /** Conditional: names are prefixed `<target>_` only when there are several targets. */
  prefixMode: 'Conditional' | 'Always' | 'Never';
  /** FailOpen: a target that fails is left out and the rest still serve. */
  failureMode: 'FailClosed' | 'FailOpen';
  /** Only localhost in Host and Origin (DNS rebinding protection). */
  localhostOnly: boolean;
  /** mcpAuthorization rules of the route and the backend; they accumulate. */
  authorization: Authorization[];
  /** mcpGuardrails processors, in order (the backend's own block, else the route's). */
  guardrails: McpGuardrailIR[];
  /** The route's mcpRemoteRateLimit: a rate limit service asked per MCP request. */
  remoteRateLimit?: McpRemoteRateLimitIR;
  /** sseKeepAlive: ms between comments on an idle MCP stream; 0: none. */
  keepAliveMs: number;
  /** server: what initialize reports when several targets are federated. */
  server?: { name?: string; version?: string; title?: string; instructions?: string };
}

/** mcpRemoteRateLimit as the IR holds it (its service's TLS read and its key sealed). */
export type McpRemoteRateLimitIR = ServiceTlsIR<NonNullable<TrafficPolicies['mcpRemoteRateLimit']>>;

/** A when-to-call of a processor: the client's request, the result it gets, both, or neither. */
export type McpProcessorPhase = 'request' | 'response' | 'full' | 'off';

/** One MCP guardrail processor: a remote one, or CEL expressions gw runs itself. */
export type McpGuardrailIR = McpProcessorIR | McpCelProcessorIR;

/** A CEL processor: when `when` holds (unset: always), `reject` refuses or `transform` replaces. */
export interface McpCelProcessorIR {
  kind: 'cel';
  methods: Record<string, McpProcessorPhase>;
  when?: string;
  reject?: string;
  transform?: string;
  failOpen: boolean;
}

/** One remote MCP guardrail processor (@gw/guardrail-sdk's MCP processor contract over HTTP). */
export interface McpProcessorIR {
  kind?: undefined;
  /** http(s)://host:port */
  origin: string;
  /** Prefix of the contract's paths (`<base>/mcp/request`); empty for none. */
  basePath: string;
  timeoutMs: number;
  /** failOpen: a failed call lets the message through; else the client gets a JSON-RPC error. */
  failOpen: boolean;
  /** CEL sources, evaluated per call. */
  metadata: Record<string, string>;
  /** Lower-case header names; an empty allowed list means every header. */
  headers: { allowed: string[]; disallowed: string[] };
  /** Method key (exact, `x/*`, `*\/x`, `*`) → phase. */
  methods: Record<string, McpProcessorPhase>;
  /** The calls' connection (policies, or the named backend's): as a guard service's. */
  connection?: Pick<LlmGuardServiceIR, 'tls' | 'requestHeaders' | 'tcp' | 'http2' | 'tunnel'>;
  /** The origin is a Service of `services`: its workloads' addresses, dialled in turn. */
  endpoints?: InTurnEndpoint[];
  /** policies.backendAuth key: the header it goes in (with its prefix) and the value. */
  credential?: { header: string; value: Secret };
  /** policies.backendAuth credentials: more secrets, each in a header of its own (written before the key). */
  credentials?: { header: string; value: Secret }[];
}

export type McpTransportIR =
  | { kind: 'stdio'; cmd: string; args: string[]; env: Record<string, string>; clearEnv: boolean }
  /** Streamable HTTP (`mcp`) or the legacy SSE transport (`sse`) at origin + path. */
  | { kind: 'streamable-http' | 'sse'; origin: string; path: string; tls: boolean }
  /** An HTTP API described by OpenAPI (mcp/openapi.ts): its tools, called at origin + path + theirs. */
  | {
      kind: 'openapi';
      origin: string;
      /** Put before each operation's path; unset: the path of the document's server URL (a fetched one). */
      path: string | undefined;
      tls: boolean;
      tools: OpenApiToolIR[];
      /** The document at a URL, fetched on first use instead of read at load (then `tools` is empty). */
      schemaUrl?: string;
    };

/** One operation of an OpenAPI document as an MCP tool, and how a call of it becomes a request. */
export interface OpenApiToolIR {
  name: string;
  description: string;
  title?: string;
  /** `{path, query, header, body}` as the client fills it in. */
  inputSchema: Record<string, unknown>;
  /** GET, POST, … */
  method: string;
  /** The document's path template (`/pets/{petId}`). */
  path: string;
  /** The parameter names of each group (headers as the document spells them). */
  params: { path: string[]; query: string[]; header: string[] };
  /** json: `body` is sent as JSON; binary: base64 in `body`, sent as octet-stream. */
  body?: 'json' | 'binary';
}

export interface McpTargetIR {
  name: string;
  transport: McpTransportIR;
  /** Connection settings (backendTLS, http, tcp) of a remote target. */
  policies: ResolvedBackendPolicies;
  /** The target's own mcpAuthorization rules: they add to the backend's for this target's items. */
  authorization: Authorization[];
}

// ---------- LLM (the `ai` backend kind, llm/ and upstream/backends/ai/) ----------

/**
 * An LLM backend: the models it serves and the virtual models routing among them. The client's
 * request names a model; the first model (or virtual model) whose name matches serves it.
 */
export interface AiTarget {
  kind: 'ai';
  models: LlmModelIR[];
  virtualModels: LlmVirtualModelIR[];
  /**
   * The ai policy's `routes`: which API a request is, by the end of its path (`*` for any other),
   * longest suffix first. Unset: told by the APIs' standard paths (llm/formats/clients.ts).
   */
  routes?: [suffix: string, type: AiRouteType][];
  /** The ai policy's `models`: what the model list answers, in place of the models served by name. */
  modelList?: { id: string; ownedBy?: string | undefined; created?: number | undefined }[];
}

/**
 * Provider-specific settings, by provider kind. A provider is one key here plus one folder under
 * llm/providers/ and one entry in its registry (a key without an entry is a type error).
 */
/** OpenAI's inline `moderation` request parameter, as sent. */
export interface OpenAIModerationIR {
  model: string;
  policy?: { input?: { mode: 'score' | 'block' }; output?: { mode: 'score' | 'block' } };
}

export interface LlmProviderSettings {
  /** moderation: written into each chat completions and responses request (llm/providers/openai/). */
  openai: { moderation?: OpenAIModerationIR };
  azureOpenAI: {
    /** `<resourceName>.openai.azure.com` (or `.services.ai.azure.com` for foundry/aiServices). */
    resourceName?: string;
    resourceType?: 'openAI' | 'foundry' | 'aiServices';
    /** With an apiVersion: the deployment path `/openai/deployments/<model>/…?api-version=`; else v1. */
    apiVersion?: string;
    projectName?: string;
  };
  mistral: Record<string, never>;
  anthropic: Record<string, never>;
  /** Converse at `bedrock-runtime.<region>.amazonaws.com`, SigV4; a guardrail goes in the body. */
  bedrock: { region: string; guardrail?: { identifier: string; version: string } };
  gemini: Record<string, never>;
  /** `<region>-aiplatform.googleapis.com` (`global`: aiplatform.googleapis.com), the project in the path. */
  vertexAI: { project: string; region: string };
  /** GitHub Copilot: api.githubcopilot.com, a GitHub token (llm/providers/copilot/). */
  copilot: Record<string, never>;
  custom: {
    /** The provider-native formats the endpoint speaks, with an optional path for each. */
    formats: { format: LlmFormat; path?: string }[];
  };
}
export type LlmProviderKind = keyof LlmProviderSettings;

/**
 * An LLM API wire format, spoken by a client (chosen by the request path) or by a provider's
 * endpoint. A client format is converted to a provider format by a format pair module
 * (llm/formats/<client>__<provider>.ts). The standalone config's custom `formats` use
 * agentgateway's names (`completions`, `messages`, …), mapped to these when the config loads.
 */
export type LlmFormat =
  | 'openai-chat'
  | 'openai-responses'
  | 'openai-embeddings'
  | 'anthropic-messages'
  | 'anthropic-count-tokens'
  | 'gemini-generate-content'
  | 'gemini-count-tokens'
  | 'gemini-embed-content'
  | 'bedrock-converse';

interface LlmProviderCommon {
  /** The provider as telemetry names it (`llm.provider`, metrics): the kind or a providerOverride. */
  name: string;
  /** The model sent to the provider instead of the requested one. */
  model?: string;
  /** Sent the provider's way (bearer, api-key, …); unset: the client's own credentials pass through. */
  apiKey?: Secret;
  /**
   * The model's `auth` when it is more than a key (a token from a cloud credential chain or a token
   * endpoint, a signed JWT, SigV4 with given keys, the client's validated JWT, a key at a location):
   * written by the backendAuth layer after the provider's request is ready. Never set with apiKey.
   */
  auth?: BackendAuthIR;
  /** Where requests go instead of the provider's default endpoint. */
  endpoint?: { host: string; port: number; tls: boolean };
  /** The whole request path, replacing the provider's. */
  path?: string;
  /** Replaces the provider's base path (e.g. `/v1`), keeping the operation's own path after it. */
  pathPrefix?: string;
}

export type LlmProviderIR<K extends LlmProviderKind = LlmProviderKind> = {
  [P in K]: LlmProviderCommon & { kind: P; settings: LlmProviderSettings[P] };
}[K];

export interface LlmHeaderModifier {
  add?: Record<string, string> | undefined;
  set?: Record<string, string> | undefined;
  remove?: string[] | undefined;
}

export interface LlmModelIR {
  /** Matched against the requested model: exact, `*` (any) or `prefix*`. */
  name: string;
  /**
   * The provider's name in its ai backend (unique there), or the entry's name in a models list: what
   * a virtual model's choice tells it apart by (sessionAffinity hashes it, the trace shows it).
   */
  entry?: string;
  /** internal: reachable only through a virtual model, and not listed by /v1/models. */
  visibility: 'public' | 'internal';
  provider: LlmProviderIR;
  /** Request fields set when the request has none. */
  defaults?: Record<string, unknown>;
  /** Request fields set, replacing the request's. */
  overrides?: Record<string, unknown>;
  /** Request fields set from CEL (`llmRequest.*` is the request so far), e.g. `model`; applied last. */
  transformation?: Record<string, string>;
  /** The same over the request in the provider's format, once converted (`llmRequest.*` is that). */
  finalTransformation?: Record<string, string>;
  requestHeaders?: LlmHeaderModifier;
  responseHeaders?: LlmHeaderModifier;
  /** Connection settings (backendTLS, http, tcp) as for any backend. */
  policies: ResolvedBackendPolicies;
  /** Prompt guards on the request and the answer (llm/guardrails/). */
  guards?: LlmGuardsIR;
  /** Messages added before and after the client's on every request. */
  prompts?: LlmPromptEnrichmentIR;
  /** Bedrock Converse's requestMetadata: a value, or a CEL expression evaluated per request, by key. */
  requestMetadata?: { key: string; value?: string; expression?: string }[];
  /** The ai policy's modelAliases: a requested model → the model sent (exact names, then `*` patterns). */
  modelAliases?: Record<string, string>;
  /**
   * Request headers this entry also needs (any one entry of the list, every header of it): entries
   * of one name are told apart by them; one without serves the requests none of the others match.
   */
  matches?: { headers?: { name: string; value: { exact: string } | { regex: string } }[] | undefined }[];
  /** Rules a request must pass (CEL over it, llmRequest included) to be sent to this model. */
  authorization?: Authorization;
  /** Cache breakpoints added for providers that cache where told (llm/formats/prompt-caching.ts). */
  promptCaching?: LlmPromptCachingIR;
  /**
   * The client's request sent unchanged, in its own format, which the provider must speak: detect
   * still reads the answer for usage, opaque passes it on untouched.
   */
  passthrough?: 'detect' | 'opaque';
  /** Passive health (upstream/health.ts): an ejected model is passed by in a virtual model's routing. */
  health?: NonNullable<ResolvedBackendPolicies['health']>;
}

export interface LlmPromptCachingIR {
  system: boolean;
  messages: boolean;
  tools: boolean;
  /** The estimated size (words × 1.3) a system prompt needs before it is marked; null: any size. */
  minTokens: number | null;
  /** How many messages before the second-to-last the history's marker goes. */
  offset: number;
}

/**
 * The settings of each guard kind. A guard kind is one key here plus one module under
 * llm/guardrails/ and one entry in its registry (a key without an entry is a type error).
 */
export interface LlmGuardSettings {
  regex: {
    action: LlmGuardAction;
    /** Built-in detectors and patterns, in order; the first rule to match names the finding. */
    rules: LlmRegexRuleIR[];
  };
  /** A guardrail webhook (@gw/guardrail-sdk's contract), called over HTTP at `origin`. */
  webhook: {
    /** http://host:port, or https://host:port for a named backend with backendTLS */
    origin: string;
    /** A named backend's backendTLS, requestHeaderModifier, tcp and http. */
    tls?: BackendTlsIR;
    requestHeaders?: LlmGuardServiceIR['requestHeaders'];
    tcp?: LlmGuardServiceIR['tcp'];
    http2?: boolean;
    /** A target given as a Service of `services`: its workloads' addresses, dialled in turn. */
    endpoints?: LlmGuardServiceIR['endpoints'];
    /** Header name or :path / :method / :authority → CEL on the original request. */
    headers: Record<string, string>;
    /** The client's headers to forward: a name and an exact value or a pattern. */
    forward: { name: string; exact?: string; regex?: string }[];
    failureMode: 'failClosed' | 'failOpen';
    /** audit: the call is made and its verdict recorded, never applied. */
    audit: boolean;
    timeoutMs: number;
    /** messageFormat raw: the request's own messages are posted and a {messages} answer replaces them. */
    raw?: boolean;
    /** The path called (default /request or /response). */
    path?: string;
    /** The webhook is skipped when its body would be smaller than this. */
    minSizeBytes?: number;
  };
  /** OpenAI's moderation endpoint (POST /v1/moderations): a flagged text is rejected. */
  openAIModeration: {
    service: LlmGuardServiceIR;
    /** Default omni-moderation-latest. */
    model: string;
    /** Unset: the client's own Authorization is passed on. */
    apiKey?: Secret;
  };
  /** Amazon Bedrock Guardrails' ApplyGuardrail on bedrock-runtime.<region>.amazonaws.com. */
  bedrockGuardrails: {
    service: LlmGuardServiceIR;
    identifier: string;
    version: string;
    /** The signing region (and the host's, unless overridden). */
    region: string;
    /** audit: the call is made and its verdict recorded, never applied (a failure never stops traffic). */
    audit: boolean;
    /** chain: the environment, then the AWS SDK's default chain (as the Bedrock provider signs). */
    auth:
      | { kind: 'chain' }
      | { kind: 'static'; accessKeyId: string; secretAccessKey: Secret; sessionToken?: Secret }
      /** A Bedrock API key, sent as a bearer instead of a signature. */
      | { kind: 'key'; key: Secret }
      /** The role's credentials from STS, assumed with the ambient ones (per session name and tags). */
      | { kind: 'assumeRole'; role: AwsAssumeRoleIR };
  };
  /** Azure AI Content Safety: text:analyze (harm categories, blocklists), text:detectJailbreak. */
  azureContentSafety: {
    service: LlmGuardServiceIR;
    /** text:analyze; unset when only jailbreaks are looked for. */
    analyze?: { apiVersion: string; threshold: number; blocklists: string[]; haltOnBlocklistHit: boolean };
    /** text:detectJailbreak, on requests only. */
    jailbreak?: { apiVersion: string };
    /** The subscription key, or an Entra ID token source. */
    auth: { kind: 'key'; key: Secret } | { kind: 'azure'; azure: AzureAuthIR };
  };
  /** Injection phrasing in a request's texts, found locally (llm/guardrails/prompt-injection.ts). */
  promptInjection: {
    /** A text is flagged when its score (families matched / 3, at most 1) reaches this, and one matched. */
    threshold: number;
    action: 'reject' | 'audit';
  };
  /** Google Model Armor's sanitizeUserPrompt / sanitizeModelResponse on a template. */
  googleModelArmor: {
    service: LlmGuardServiceIR;
    project: string;
    location: string;
    template: string;
    /** A static access token; unset: Application Default Credentials (as the Vertex AI provider). */
    token?: Secret;
  };
}
export type LlmGuardKind = keyof LlmGuardSettings;

/** Where a cloud guard service is called: its own host over TLS, or a hostOverride over plain HTTP. */
export interface LlmGuardServiceIR {
  /** https://<service host>, or http(s)://<override host:port> (https with `tls`) */
  origin: string;
  timeoutMs: number;
  /** The connection's TLS settings (policies.backendTLS); unset: the system's roots for https. */
  tls?: BackendTlsIR;
  /** Headers added, set or removed on each call (policies.requestHeaderModifier). */
  requestHeaders?: {
    add?: Record<string, string> | undefined;
    set?: Record<string, string> | undefined;
    remove?: string[] | undefined;
  };
  /** policies.tcp: the connect timeout and keepalives (unset: the global ones). */
  tcp?: ResolvedBackendPolicies['tcp'];
  /** policies.http version HTTP2: h2 over TLS, h2c over plain text. */
  http2?: boolean;
  /** policies.backendTunnel: the forward proxy the service is reached through. */
  tunnel?: TunnelIR;
  /** The origin is a Service of `services`: its workloads' addresses, dialled in turn. */
  endpoints?: InTurnEndpoint[];
  /** backendAuth.credentials: more secrets, each set in a header of its own on every call. */
  credentials?: { header: string; value: Secret }[];
}

/** mask: replace the match; reject: answer the rejection; audit: record what would be done, pass on. */
export type LlmGuardAction = 'mask' | 'reject' | 'audit';
export type LlmBuiltinDetector = 'ssn' | 'creditCard' | 'phoneNumber' | 'email' | 'caSin';
export type LlmRegexRuleIR = { builtin: LlmBuiltinDetector } | { pattern: string; name?: string };
/** Which parts of a request a guard reads (answers are read whole: the assistant's text). */
export type LlmContentScope = 'systemPrompt' | 'messages' | 'toolInput' | 'toolOutput';

export interface LlmGuardRejectionIR {
  status: number;
  /** The reason in the client's error object. */
  message: string;
  headers?: LlmHeaderModifier;
}

interface LlmGuardCommon {
  /** How the guard is named in logs, traces and metrics: `<kind>` or the configured name. */
  name: string;
  /** Request guards only. */
  scope: LlmContentScope[];
  rejection: LlmGuardRejectionIR;
  /**
   * action: audit on a kind without an audit of its own (azureContentSafety, googleModelArmor,
   * openAIModeration): its verdicts recorded, never applied, its failures never closing.
   */
  audit?: true;
}

export type LlmGuardIR<K extends LlmGuardKind = LlmGuardKind> = {
  [P in K]: LlmGuardCommon & { kind: P; settings: LlmGuardSettings[P] };
}[K];

export interface LlmGuardsIR {
  /** Response guards run on streamed answers too (Mask is never applied to a stream). */
  streaming: boolean;
  request: LlmGuardIR[];
  response: LlmGuardIR[];
}

export interface LlmPromptMessageIR {
  /** Lower case: system, user, assistant, developer … */
  role: string;
  content: string;
}

export interface LlmPromptEnrichmentIR {
  prepend: LlmPromptMessageIR[];
  append: LlmPromptMessageIR[];
}

/** A target of a virtual model: a model entry (by index in `models`) and the model name it is asked for. */
export interface LlmTargetIR {
  model: number;
  /** The model name the target is asked for; unset: the client's requested model. */
  as?: string;
}

export type LlmRoutingIR =
  | { weighted: (LlmTargetIR & { weight: number })[] }
  | { failover: (LlmTargetIR & { priority: number })[] }
  /** In order; the first whose `when` (CEL) is true serves; the last may have no `when`. */
  | { conditional: (LlmTargetIR & { when?: string })[] };

export interface LlmVirtualModelIR {
  /** Matched like a model's name. */
  name: string;
  routing: LlmRoutingIR;
  /**
   * sessionAffinity's CEL source (an ai backend's): requests with the same value go to the same
   * model among those a weighted choice or a priority group has.
   */
  sessionAffinity?: string;
}

export interface RouteBackendIR {
  name: string;
  weight: number;
  target: BackendTarget;
  policies: ResolvedBackendPolicies;
}

/** Backend policies with file references already read (TLS material inline). */
/** backendAuth with its secrets sealed and files read. */
/** One of backendAuth's `credentials`: a value written where `location` says. */
export interface ExtraCredentialIR {
  location: AuthLocationIR;
  value: Secret;
}
/**
 * backendAuth: one form, with the extra `credentials` written beside it (before it, so the form wins a
 * place both name), or those credentials alone.
 */
export type BackendAuthIR =
  | (BackendAuthFormIR & { credentials?: ExtraCredentialIR[] })
  | { credentials: ExtraCredentialIR[] };
export type BackendAuthFormIR =
  | { key: { value: Secret; location?: AuthLocationIR } }
  /** The GitHub token Copilot takes, from the environment or GitHub's tools (copilot-token.ts). */
  | { copilot: true }
  | { passthrough: { location?: AuthLocationIR } }
  | {
      jwtSign: {
        signingKey: Secret;
        alg: (typeof JWT_SIGN_ALGS)[number];
        kid?: string;
        claims: Record<string, unknown>;
        ttlSeconds: number;
        location?: AuthLocationIR;
      };
    }
  | {
      aws: {
        /** Unset: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, then the AWS SDK's default chain. */
        credentials?: { accessKeyId: string; secretAccessKey: Secret; sessionToken?: Secret };
        region?: string;
        service?: string;
        /** STS AssumeRole from the ambient credentials before signing (policies/backend-auth/aws-assume-role.ts). */
        assumeRole?: AwsAssumeRoleIR;
      };
    }
  | { gcp: GcpAuthIR }
  | { azure: AzureAuthIR }
  | { oauthTokenExchange: OAuthTokenExchangeIR }
  | { crossAppAccess: CrossAppAccessIR };

/** backendTunnel: the forward proxy a backend is reached through. */
export interface TunnelIR {
  /** host:port of the proxy (an IPv6 host in brackets); a Service's hostname and port. */
  proxy: string;
  /**
   * A Service of `services`: the addresses of its workloads, each connection to the proxy dialled at
   * the next of them (the proxy's name, its TLS server name included, stays `proxy`).
   */
  endpoints?: InTurnEndpoint[];
  /** TLS to the proxy itself (an https proxy). */
  tls?: BackendTlsIR;
  /** The credential sent to the proxy (Proxy-Authorization by default), prefix included. */
  auth?: { header: string; value: Secret };
  /** Auto: CONNECT for TLS and HTTP/2, absolute form for plaintext HTTP/1.1; Connect: always CONNECT. */
  mode: 'Auto' | 'Connect';
}

export interface ResolvedBackendPolicies
  extends Omit<
    BackendPolicies,
    'backendTLS' | 'backendAuth' | 'backendTunnel' | 'extAuthz' | 'mcpAuthentication'
  > {
  backendAuth?: BackendAuthIR;
  /** An mcp backend's own, its clientSecret sealed. */
  mcpAuthentication?: McpAuthenticationIR;
  backendTLS?: BackendTlsIR;
  backendTunnel?: TunnelIR;
  /** As a route's: TLS to its service read and sealed. */
  extAuthz?: RoutePolicies['extAuthz'];
}
