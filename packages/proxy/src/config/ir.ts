// The proxy's one intermediate representation. The standalone loader and the xDS client both produce
// it; everything after (compile, swap, serve) is shared. Plain data, so it crosses worker threads.
import type { AccessLog, Authorization, BackendPolicies, RouteMatch, TrafficPolicies } from '@gw/api';
import type { Secret } from '../secret.ts';

export interface ProxyIR {
  /** Content hash: equal configs have equal versions, so a no-op reload is skipped. */
  version: string;
  source: string;
  global: GlobalIR;
  binds: BindIR[];
  frontend: FrontendIR;
}

export interface GlobalIR {
  maxBufferSize: number;
  connectTimeoutMs: number;
  poolIdleTimeoutMs: number;
  poolMaxSize: number | null;
  keepalive: { enabled: boolean; timeMs: number; intervalMs: number; retries: number };
  http1IdleTimeoutMs: number;
  downstream: DownstreamLimits;
  terminationDeadlineMs: number;
  /**
   * Header names whose values diagnostics (trace, dumps) never show: the defaults, the configured
   * ones, and every header an auth policy reads a credential from.
   */
  sensitiveHeaders: string[];
  /** Query parameters an auth policy reads a credential from: shown as [redacted] in traces and logs. */
  credentialQueryParams: string[];
}

/** Bounds on what downstream connections may hold (frontendPolicies.http / .tcp); a 0 ms timeout is off. */
export interface DownstreamLimits {
  /** First byte of an HTTP/1 request (of a new connection: its start) to the end of its headers. */
  requestHeadersTimeoutMs: number;
  /** A new connection's silence before its first byte (h2: before its first stream); TLS handshakes. */
  firstRequestTimeoutMs: number;
  /** A stalled request body, on routes without a request timeout. */
  requestBodyIdleTimeoutMs: number;
  /** Open connections per bind, across the workers of a replica. */
  maxConnections: number;
  http2MaxConcurrentStreams: number;
}

export interface FrontendIR {
  accessLog?: AccessLog;
  /** Layer-4 rules on each downstream connection's source address, before any HTTP. */
  networkAuthorization?: Authorization;
  /** How request paths are normalised before routing (pipeline/normalize-path.ts); absent: the defaults. */
  paths?: {
    mergeSlashes: boolean;
    escapedSlashes: 'KeepUnchanged' | 'RejectRequest' | 'UnescapeAndForward';
  };
  /** Peers (IP or CIDR) whose X-Forwarded-For/-Proto are kept; absent or empty: nobody. */
  trustedProxies?: string[];
}

export interface TlsServerIR {
  cert: string;
  key: Secret;
  root?: string;
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  maxVersion?: 'TLSv1.2' | 'TLSv1.3';
}

export interface BindIR {
  /** `address:port`, stable across reloads so the listening socket is kept. */
  key: string;
  address: string;
  port: number;
  protocol: 'HTTP' | 'HTTPS';
  listeners: ListenerIR[];
}

export interface ListenerIR {
  gateway: string;
  name: string;
  hostname?: string;
  protocol: 'HTTP' | 'HTTPS';
  tls?: TlsServerIR;
  routes: RouteIR[];
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
}

/**
 * Traffic policies as the IR holds them: every credential (API keys and their hashes, htpasswd
 * lines) is a Secret from the moment the config loads, so a dump, a trace or a log line cannot print
 * one. Policies reveal them when they build their layer.
 */
export interface RoutePolicies extends Omit<TrafficPolicies, 'apiKey' | 'basicAuth'> {
  apiKey?: ApiKeyIR;
  basicAuth?: BasicAuthIR;
}

type ApiKeyConfig = NonNullable<TrafficPolicies['apiKey']>;
export type ApiKeyEntryIR =
  | Secret
  | { key: Secret; metadata?: unknown }
  | { keyHash: Secret; metadata?: unknown };
export interface ApiKeyIR extends Omit<ApiKeyConfig, 'keys'> {
  keys: ApiKeyEntryIR[] | Record<string, ApiKeyEntryIR>;
}

type BasicAuthConfig = NonNullable<TrafficPolicies['basicAuth']>;
/** The htpasswd file, when it was a file, has been read into `htpasswd`. */
export interface BasicAuthIR extends Omit<BasicAuthConfig, 'users' | 'htpasswd'> {
  users?: Secret[];
  htpasswd?: Secret;
}

export type BackendTarget =
  | { kind: 'host'; host: string; port: number }
  | { kind: 'unix'; path: string }
  | { kind: 'dynamic' };

export interface RouteBackendIR {
  name: string;
  weight: number;
  target: BackendTarget;
  policies: ResolvedBackendPolicies;
}

/** Backend policies with file references already read (TLS material inline). */
export interface ResolvedBackendPolicies extends Omit<BackendPolicies, 'backendTLS'> {
  backendTLS?: {
    cert?: string;
    key?: Secret;
    root?: string;
    hostname?: string;
    insecure?: boolean;
    insecureHost?: boolean;
    alpn?: string[];
    subjectAltNames?: string[];
  };
}
