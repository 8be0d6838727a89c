// The standalone config file (`gw -f config.yaml`): one zod definition gives the runtime validation,
// the TypeScript types and the published JSON Schema (schema/config.json). Field names follow
// agentgateway's config schema so its users can bring their files.
//
// Where a field means what a gw.dev CRD field means, it is the CRD's definition (../crd), so a limit,
// a pattern or a rule's message is written once and a user reads the same words whether the mistake
// is in a config file or in a GwPolicy (shared-definitions.test.ts holds this). What stays local is
// agentgateway's shapes and the forms the standalone config accepts beyond the CRDs: Go-style
// durations (`1.5h`, `0`), integer byte sizes, JWKS and htpasswd files, lower-case enum values.

import { z } from 'zod';
import { AWS_SESSION_NAME } from '../aws-names.ts';
import {
  AccessLog as CrdAccessLog,
  Csrf as CrdCsrf,
  DirectResponse as CrdDirectResponse,
  ExtAuth as CrdExtAuth,
} from '../crd/gwpolicy.ts';
import {
  Authorization as CrdAuthorization,
  BackendTls as CrdBackendTls,
  BasicAuthentication as CrdBasicAuthentication,
  GlobalRateLimit as CrdGlobalRateLimit,
  Jwks as CrdJwks,
  JwtAuthentication as CrdJwtAuthentication,
  JwtProvider as CrdJwtProvider,
  Keepalive as CrdKeepalive,
  LocalRateLimit as CrdLocalRateLimit,
  KeyExchangeGroup,
  MCP_METHOD_PATTERN,
} from '../crd/policy-blocks.ts';
import {
  BYTE_SIZE_MESSAGE,
  CELExpression,
  HEADER_NAME_PATTERN as CRD_HEADER_NAME_PATTERN,
  ByteSize as CrdByteSize,
  CredentialLocation as CrdCredentialLocation,
  HeaderName as CrdHeaderName,
  HeaderValueText,
  ShortString,
  Url,
} from '../crd/types.ts';
import { parseByteSize, parseGoDuration } from '../duration.ts';
import { EXTPROC_ATTRIBUTES_NAMESPACE, EXTPROC_GRPC_METADATA_NAMESPACE } from '../ext-proc-names.ts';
import {
  LISTEN_ADDRESS_MESSAGE,
  LISTEN_ADDRESS_PATTERN,
  listenAddressValueProblem,
} from '../listen-address.ts';
import { LLM_PRESETS } from '../llm/presets.ts';
import { logLevelProblem } from '../log-level.ts';
import { CIPHER_SUITE_NAMES, KEY_EXCHANGE_GROUPS } from '../tls-names.ts';
import { conditionalEntry, conditionalForm, explicitOrConditional } from './conditional.ts';
import { ModelCatalogSource } from './model-catalog.ts';
import { observabilitySchemas } from './observability.ts';
import { Oidc } from './oidc.ts';
import { tcpRouteSchemas } from './tcp-routes.ts';
import { tokenAuthSchemas } from './token-auth.ts';
import { Transformations, TransformationsPolicy } from './transformations.ts';

const strict = z.strictObject;
// The description marks the field in the published JSON Schema (where it is otherwise `{}`), for
// editors and for hack/compat.ts, which counts such fields as "not supported" rather than accepted.
const notYetMessage = (what: string) => `${what} is not supported by this build of gw yet`;
const NotYet = (what: string) => {
  const message = notYetMessage(what);
  return z
    .unknown()
    .superRefine((v, ctx) => {
      // absent where required (one alternative of a union): a missing field, not the refusal, so the
      // error of the alternative the user meant is the one reported (config/source.ts)
      if (v === undefined)
        ctx.addIssue({ code: 'invalid_type', expected: 'unknown', input: v, message: 'Required' });
      else ctx.addIssue({ code: 'custom', message });
    })
    .meta({ description: message });
};
/**
 * Values of an agentgateway enum this build refuses by name, as an alternative beside the values it
 * implements (the marker in the description tells hack/compat.ts they are known, not missing).
 */
const NotYetValues = (values: readonly [string, ...string[]], what: string) => {
  const message = notYetMessage(what);
  return z
    .enum(values)
    .refine(() => false, { message })
    .meta({ description: message })
    .transform((v) => v as never);
};

/** agentgateway's Bytes: a string, or an array of byte values (UTF-8 text here, as bodies are sent as text). */
const Bytes = z.union([
  z.string(),
  z.array(z.number().int().min(0).max(255)).transform((bytes, ctx) => {
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
    } catch {
      ctx.issues.push({ code: 'custom', input: bytes, message: 'expected the bytes of UTF-8 text' });
      return z.NEVER;
    }
  }),
]);

/** Drops the keys whose value is undefined or null, for exactOptionalPropertyTypes. */
export function defined<T extends Record<string, unknown>>(
  o: T,
): { [K in keyof T]?: Exclude<T[K], undefined | null> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as never;
}

/** A list of `item` with the length limits of a CRD list, so the numbers are written once. */
function listLimitedLike<T extends z.ZodType>(crdList: z.ZodArray, item: T) {
  // length checks read only the length, so they apply to a list of any item
  return z.array(item).check(...((crdList.def.checks ?? []) as z.core.$ZodCheck<unknown[]>[]));
}

export const Duration = z
  .string()
  .refine((s) => parseGoDuration(s) !== undefined, {
    message: 'expected a duration such as "10s", "1m30s" or "500ms"',
  })
  .meta({ description: 'Duration: digits with units h, m, s, ms (e.g. 1m30s)' });

/**
 * The CRD's ByteSize (a Kubernetes quantity up to 4Gi) or, as agentgateway writes it, a plain number
 * of bytes. The quantity must also be one the data plane converts (no exponents or milli-units).
 */
export const ByteSize = z
  .union([z.number().int().nonnegative(), CrdByteSize])
  .refine((v) => parseByteSize(v) !== undefined, { message: BYTE_SIZE_MESSAGE });

const Cel = CELExpression;

/** RFC 7230 token: what a header name may contain (the CRDs' HeaderName pattern). */
export const HEADER_NAME_PATTERN = new RegExp(CRD_HEADER_NAME_PATTERN);
const HeaderName = CrdHeaderName;

const Port = z.number().int().min(0).max(65535);

const Address = z
  .string()
  .regex(LISTEN_ADDRESS_PATTERN, LISTEN_ADDRESS_MESSAGE)
  .superRefine((v, ctx) => {
    // of the shape, but not one to listen on (a port past 65535): refused here, not at start
    const problem = LISTEN_ADDRESS_PATTERN.test(v) ? listenAddressValueProblem(v) : undefined;
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

// ---------- matches ----------
const StringMatch = z.union([strict({ exact: z.string() }), strict({ regex: z.string() })]);
const PathMatch = z.union([
  strict({ exact: z.string().startsWith('/') }),
  strict({ pathPrefix: z.string().startsWith('/') }),
  strict({ regex: z.union([z.string(), z.tuple([z.string(), z.number()])]) }),
]);
export const RouteMatch = strict({
  path: PathMatch.optional(),
  method: z.string().min(1).optional(),
  headers: z.array(strict({ name: HeaderName, value: StringMatch })).optional(),
  query: z.array(strict({ name: z.string().min(1), value: StringMatch })).optional(),
});

// ---------- traffic policies ----------
const HeaderModifier = strict({
  add: z.record(HeaderName, HeaderValueText).optional(),
  set: z.record(HeaderName, HeaderValueText).optional(),
  remove: z.array(HeaderName).optional(),
});

const Authority = z.union([
  z.enum(['auto', 'none']),
  strict({ full: z.string().min(1) }),
  strict({ host: z.string().min(1) }),
  strict({ port: Port }),
]);
const PathRewrite = z.union([strict({ full: z.string().startsWith('/') }), strict({ prefix: z.string() })]);

const RequestRedirect = strict({
  scheme: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9+.-]*$/, 'expected a URL scheme such as http or https')
    .transform((s) => s.toLowerCase())
    .nullable()
    .optional(),
  authority: Authority.optional(),
  path: PathRewrite.optional(),
  status: z.number().int().min(300).max(399).optional(),
});
const UrlRewrite = strict({ authority: Authority.optional(), path: PathRewrite.optional() });

const DirectResponseBody = strict({
  status: CrdDirectResponse.shape.status.unwrap(),
  body: Bytes.optional(),
  bodyExpression: Cel.nullable()
    .optional()
    .meta({ description: 'CEL giving the body: a string or bytes as they are, another value as JSON' }),
  headers: z.record(HeaderName, Cel).optional().meta({
    description:
      'CEL per header, e.g. \'"text/plain"\'; a header whose expression fails or gives no string is left out',
  }),
}).superRefine((d, ctx) => {
  if (d.body !== undefined && d.bodyExpression != null)
    ctx.addIssue({ code: 'custom', path: ['bodyExpression'], message: 'set one of body and bodyExpression' });
});
/** A direct response, or the first of several whose condition holds (agentgateway's conditional form). */
export const DirectResponse = explicitOrConditional(DirectResponseBody);

const Cors = strict({
  allowCredentials: z.boolean().optional(),
  allowHeaders: z.array(z.string()).optional(),
  allowMethods: z.array(z.string()).optional(),
  allowOrigins: z.array(z.string()).optional(),
  exposeHeaders: z.array(z.string()).optional(),
  maxAge: Duration.optional(),
});

const Csrf = strict({ additionalOrigins: CrdCsrf.shape.additionalOrigins.optional() });

/**
 * agentgateway's ipAccessControl (newer than the schema gw follows): which client addresses may send
 * requests. Addresses and CIDRs are checked by checkTrafficPolicies.
 */
const IpAccessControl = strict({
  allow: z.array(z.string().min(1)).max(1024).optional().meta({
    description:
      'addresses or CIDRs (10.0.0.0/8, 2001:db8::/32) that may pass; when set, every other address is refused',
  }),
  deny: z.array(z.string().min(1)).max(1024).optional().meta({
    description: 'addresses or CIDRs that are refused, before allow is looked at',
  }),
  xffNumTrustedHops: z.number().int().min(0).max(64).optional().meta({
    description:
      'proxies in front that append to X-Forwarded-For: the client is the entry this many places from its right (default: the connection peer)',
  }),
  skipPrivateIps: z.boolean().optional().meta({
    description: 'loopback, private (RFC 1918, RFC 4193) and link-local addresses always pass',
  }),
  enforceFullChain: z.boolean().optional().meta({
    description: 'every address of X-Forwarded-For, and the connection peer, must pass, not the client alone',
  }),
  maxXffLength: z.number().int().min(1).max(1024).optional().meta({
    description: 'a request whose X-Forwarded-For lists more addresses is refused (default 30)',
  }),
});

const Timeout = strict({
  requestTimeout: Duration.optional(),
  backendRequestTimeout: Duration.optional(),
  responseIdleTimeout: Duration.nullable().optional().meta({
    description:
      'the longest the backend may leave a response body without sending more (a stalled stream is cut; time the client takes to read does not count); upgraded connections are never cut by it (agentgateway’s; unset or 0: no limit)',
  }),
});

const Retry = strict({
  attempts: z.number().int().min(1).max(255).optional(),
  backoff: Duration.optional(),
  codes: z.array(z.number().int().min(100).max(599)).meta({
    description: 'response statuses that are retried (may be empty when a condition decides)',
  }),
  condition: Cel.optional().meta({
    description:
      'CEL on each response (response.code, response.headers): true retries it, as a status in codes does',
  }),
  precondition: Cel.optional().meta({
    description:
      'CEL on the request before the first attempt: unless true, there are no retries (and no body is kept for them)',
  }),
});

// agentgateway's A2aPolicy: no fields; its presence marks traffic as agent-to-agent.
const A2aPolicy = strict({}).meta({
  description:
    'marks the traffic as A2A: agent cards are rewritten to point at the gateway, and JSON-RPC calls are read for telemetry (a2a.* in CEL, logs, metrics)',
});

const FailureMode = z.enum(['failClosed', 'failOpen', 'FailClosed', 'FailOpen']);
const BufferSide = strict({ maxBytes: ByteSize.optional(), failureMode: FailureMode.optional() });
const Buffer = strict({ request: BufferSide.optional(), response: BufferSide.optional() });

const DelayValue = z.union([Duration, Cel]);
const Delay = z.union([
  strict({ duration: DelayValue }),
  strict({ conditional: z.array(strict({ condition: Cel.optional(), duration: DelayValue })).min(1) }),
]);

// ---------- authentication, authorization, rate limits ----------
const Mode = z.enum(['strict', 'optional', 'permissive', 'Strict', 'Optional', 'Permissive']);
// The CRD's CredentialLocation as a union (one object per form); the header prefix stays a plain
// string, as an empty prefix means none.
const Location = CrdCredentialLocation.shape;
const TokenLocation = z.union([
  strict({ header: strict({ name: HeaderName, prefix: z.string().optional() }) }),
  strict({ queryParameter: Location.queryParameter.unwrap() }),
  strict({ cookie: Location.cookie.unwrap() }),
  // CEL over the request giving the credential, e.g. 'request.headers["x-token"].split(" ")[1]'.
  strict({ expression: Cel }),
]);
// The CRD's jwks.inline and jwks.remote.url; a file is read when the config loads.
const Jwks = z.union([
  // agentgateway's inline form: the JWKS document itself
  CrdJwks.shape.inline.unwrap().transform((inline) => ({ inline })),
  strict({ inline: CrdJwks.shape.inline.unwrap() }),
  strict({ file: z.string().min(1) }),
  strict({ url: Url }),
]);
const REQUIRED_CLAIMS = ['exp', 'nbf', 'aud', 'iss', 'sub'] as const;
type RequiredClaim = (typeof REQUIRED_CLAIMS)[number];
/** agentgateway's JWTValidationOptions: the registered claims a token must carry (default exp). */
const JwtValidationOptions = strict({
  // other claim names are accepted and ignored, as agentgateway ignores them
  requiredClaims: z
    .array(z.string())
    .transform((cs) =>
      cs.filter((c): c is RequiredClaim => (REQUIRED_CLAIMS as readonly string[]).includes(c)),
    )
    .optional()
    .meta({ description: 'of exp, nbf, aud, iss, sub (default [exp]; [] requires none)' }),
});
const JwtProvider = strict({
  issuer: CrdJwtProvider.shape.issuer,
  audiences: CrdJwtProvider.shape.audiences,
  jwks: Jwks,
  jwtValidationOptions: JwtValidationOptions.optional(),
});
export const JwtAuth = strict({
  mode: Mode.optional(),
  providers: listLimitedLike(CrdJwtAuthentication.shape.providers, JwtProvider).optional(),
  // agentgateway's single-provider form
  issuer: CrdJwtProvider.shape.issuer.optional(),
  audiences: CrdJwtProvider.shape.audiences,
  jwks: Jwks.optional(),
  location: TokenLocation.optional(),
  preserveToken: z.boolean().optional(),
  jwtValidationOptions: JwtValidationOptions.optional(),
});

// agentgateway's mcpAuthentication: the gateway as an OAuth 2.1 protected resource for MCP clients
// (RFC 9728 metadata, 401 with WWW-Authenticate, authorization-server metadata and client
// registration answered or proxied), tokens checked as jwtAuth checks them.
export const MCP_IDPS = ['auth0', 'keycloak', 'okta', 'descope', 'authentik', 'entra'] as const;
export type McpIdpName = (typeof MCP_IDPS)[number];
const McpIdp = strict({
  auth0: strict({}).optional(),
  keycloak: strict({}).optional(),
  okta: strict({}).optional(),
  descope: strict({}).optional(),
  authentik: strict({}).optional(),
  entra: strict({}).optional(),
}).refine((p) => Object.keys(p).length === 1, { message: 'name exactly one provider, e.g. {keycloak: {}}' });
export const McpAuthentication = strict({
  issuer: CrdJwtProvider.shape.issuer.meta({
    description: "the authorization server: matches the tokens' iss; clients are sent to it for tokens",
  }),
  audiences: CrdJwtProvider.shape.audiences.meta({
    description:
      'accepted aud values; when unset, the resource (resourceMetadata.resource, or the URL the client called)',
  }),
  provider: McpIdp.nullable().optional().meta({
    description:
      'an identity provider whose quirks the gateway smooths over: auth0, keycloak, okta, descope, authentik or entra',
  }),
  resourceMetadata: z.record(z.string().min(1), z.unknown()).optional().meta({
    description:
      'entries of the protected resource metadata (RFC 9728), camelCase keys sent in snake_case; `resource` fixes the resource URL',
  }),
  jwks: z
    .union([z.string().min(2), Jwks])
    .nullable()
    .optional()
    .meta({
      description: 'an inline JWKS, {file} or {url}; when unset, derived from the issuer and provider',
    }),
  mode: Mode.optional(),
  authorizationLocation: TokenLocation.optional(),
  jwtValidationOptions: JwtValidationOptions.optional(),
  clientId: z.string().min(1).nullable().optional().meta({
    description: 'a pre-registered client id: the gateway answers dynamic client registration with it',
  }),
  clientSecret: z.string().min(1).nullable().optional().meta({
    description:
      "with the entra provider: the secret of the clientId's app registration, added to the token requests of that client (authorization_code, refresh_token) that carry no credential of their own",
  }),
});

export const BasicAuth = strict({
  mode: z.enum(['strict', 'optional', 'Strict', 'Optional']).optional(),
  realm: ShortString.optional(),
  // htpasswd lines with a hash, as in the CRD; or a whole htpasswd text or file
  users: CrdBasicAuthentication.shape.users,
  htpasswd: z.union([z.string().min(1), strict({ file: z.string().min(1) })]).optional(),
  location: TokenLocation.optional(),
  // agentgateway's name for location
  authorizationLocation: TokenLocation.optional().meta({ description: 'the same as location' }),
}).transform(({ authorizationLocation, ...b }, ctx) => {
  if (authorizationLocation === undefined) return b;
  if (b.location !== undefined)
    ctx.issues.push({
      code: 'custom',
      input: b,
      path: ['authorizationLocation'],
      message: 'set one of location and authorizationLocation',
    });
  return { ...b, location: authorizationLocation };
});

const AllowedModels = z.array(z.string().min(1)).nullable().optional().meta({
  description:
    'the models this key may use on the LLM API (exact names, prefix* or *); unset: any, an empty list: none. The model list shows only these',
});
const ApiKeyEntry = z.union([
  z.string().min(1),
  strict({
    key: z.string().min(1),
    metadata: z.unknown().optional(),
    allowedModels: AllowedModels,
  }),
  strict({
    keyHash: z.string().regex(/^sha256:[0-9a-fA-F]{64}$/, 'expected sha256:<64 hex digits>'),
    metadata: z.unknown().optional(),
    allowedModels: AllowedModels,
  }),
]);
export const ApiKeyAuth = strict({
  mode: Mode.optional(),
  keys: z.union([z.array(ApiKeyEntry).min(1), z.record(z.string(), ApiKeyEntry)]),
  location: TokenLocation.optional(),
});

const AuthzRule = z.union([Cel, strict({ allow: Cel }), strict({ deny: Cel }), strict({ require: Cel })]);
export const Authorization = z.union([
  strict({ rules: z.array(AuthzRule).min(1) }),
  // The GwPolicy form: one action per block.
  CrdAuthorization,
]);

const FileOrInline = z.union([z.string(), strict({ file: z.string() })]);
export const BackendTLS = strict({
  spiffe: NotYet('backendTLS spiffe').optional(),
  cert: FileOrInline.optional(),
  key: FileOrInline.optional(),
  root: FileOrInline.optional(),
  hostname: z.string().min(1).max(253).optional(),
  insecure: z.boolean().optional(),
  insecureHost: z.boolean().optional(),
  alpn: CrdBackendTls.shape.alpnProtocols,
  subjectAltNames: CrdBackendTls.shape.verifySubjectAltNames,
  keyExchangeGroups: z.array(KeyExchangeGroup).min(1).nullable().optional().meta({
    description:
      "key exchange groups offered in the handshake, in order of preference (default: the TLS library's own list)",
  }),
});

const NamespacedHostname = z
  .string()
  .regex(/^[^/\s]+\/[^/\s]+$/, 'expected "<namespace>/<hostname>" of an entry of the top-level services')
  .meta({ description: 'namespace/hostname of an entry of the top-level services' });
const PortNumber = z.number().int().min(0).max(65535);
export const ServiceRef = strict({
  name: NamespacedHostname,
  port: PortNumber.meta({ description: "the Service's port (a key of its ports)" }),
});
/** A policy's service (ext_authz, ext_proc, rate limit, endpoint picker) by a Service of `services`. */
const PolicyServiceRef = (what: string) =>
  ServiceRef.meta({
    description: `${what}: a Service of the top-level services list, called by its name at its workloads' addresses (spread over them, at the port each maps the Service's to)`,
  });

/**
 * The problem with how a policy names its service (exactly one of host, backend and service), with
 * the field it is reported at; undefined when it names one.
 */
function serviceNamingProblem(
  e: { host?: unknown; backend?: unknown; service?: unknown },
  what: string,
): { message: string; path: string[] } | undefined {
  const given = (['host', 'backend', 'service'] as const).filter((k) => e[k] !== undefined);
  if (given.length === 1) return undefined;
  if (given.length === 0)
    return { message: `set host (host:port of ${what}), backend or service`, path: ['host'] };
  return {
    message: `set one of host, backend and service, not ${given.join(' and ')}`,
    path: [given[1] as string],
  };
}

// External authorization: Envoy ext_authz v3 over gRPC, or a plain HTTP call (2xx allows).
const CrdExtAuthHttp = CrdExtAuth.shape.http.unwrap().shape;
const AuthzHost = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}$/, 'expected "<host>:<port>"');
const atMost64 = (o: Record<string, unknown>) => Object.keys(o).length <= 64;
const CelByName = z
  .record(z.string().min(1).max(256), Cel)
  .refine(atMost64, 'at most 64 entries')
  .meta({ maxProperties: 64 });
const ExtAuthzGrpc = strict({
  host: AuthzHost,
  contextExtensions: z
    .record(z.string().min(1).max(256), z.string())
    .refine(atMost64, 'at most 64 entries')
    .meta({ maxProperties: 64 })
    .optional(),
  requestMetadata: CelByName.optional(),
  timeout: Duration.optional().meta({ description: 'deadline of the Check call (default 200ms)' }),
});
const ExtAuthzHttp = strict({
  host: AuthzHost,
  path: Cel.optional().meta({
    description: 'CEL: path and query of the check request (default the original)',
  }),
  redirect: Cel.optional().meta({ description: 'CEL: Location of a 302 sent instead of a 401/403 denial' }),
  body: Cel.optional().meta({ description: 'CEL: body of the check request (none by default)' }),
  allowedRequestHeaders: CrdExtAuthHttp.allowedRequestHeaders,
  addRequestHeaders: z
    .record(HeaderName, Cel)
    .refine(atMost64, 'at most 64 entries')
    .meta({ maxProperties: 64 })
    .optional(),
  allowedResponseHeaders: CrdExtAuthHttp.allowedResponseHeaders,
  responseMetadata: CelByName.optional(),
  timeout: Duration.optional().meta({ description: 'deadline of the check request (default 200ms)' }),
});
/** agentgateway's BodyOptions: the request body sent to the authorization service (Envoy's with_request_body). */
const ExtAuthzBody = strict({
  maxRequestBytes: z
    .number()
    .int()
    .min(0)
    .max(4294967295)
    .optional()
    .meta({ description: 'largest body sent (default 8192 bytes)' }),
  allowPartialMessage: z.boolean().optional().meta({
    description:
      'a larger body: send its first maxRequestBytes (x-envoy-auth-partial-body: true) instead of answering 413',
  }),
  packAsBytes: z.boolean().optional().meta({
    description: 'grpc: the body as raw_body (bytes) instead of body (UTF-8 text)',
  }),
});
/**
 * agentgateway's SimpleLocalBackendPolicies on a policy's own service (the extAuthz, extProc or
 * remoteRateLimit service): its TLS; the others are refused by name.
 */
const serviceTlsPolicies = (service: string) =>
  strict({
    backendTLS: BackendTLS.optional().meta({ description: `TLS to ${service}` }),
    backendAuth: NotYet(`backendAuth on ${service}`).optional(),
    requestHeaderModifier: NotYet(`requestHeaderModifier on ${service}`).optional(),
    transformations: NotYet(`transformations on ${service}`).optional(),
    http: NotYet(`http on ${service}`).optional(),
    tcp: NotYet(`tcp on ${service}`).optional(),
    backendTunnel: NotYet(`backendTunnel on ${service}`).optional(),
  });
/**
 * A policy's own service (extAuthz, extProc, remoteRateLimit): its TLS, a key sent with each call (a
 * service that wants an API key), headers set on each call and, in http, the deadline of each call
 * (serviceCallDeadline); the others are refused by name.
 */
const serviceCallPolicies = (service: string) =>
  strict({
    ...serviceTlsPolicies(service).shape,
    http: z
      .lazy(() => BackendHttp)
      .optional()
      .meta({
        description:
          "requestTimeout: the deadline of each call, as the policy's own timeout (set one of the two); version: gRPC calls are HTTP/2",
      }),
    backendAuth: z
      .lazy(() => serviceTokenAuth(` on ${service}`))
      .optional()
      .meta({
        description:
          "the credential each call carries: a key, or one obtained for the call's request (passthrough: the client's validated JWT; jwtSign; gcp, azure, oauthTokenExchange, crossAppAccess: a token), in the Authorization header with a Bearer prefix unless location.header says; credentials (or headers): more secrets in headers of their own; gRPC metadata over gRPC",
      }),
    requestHeaderModifier: strict({
      add: HeaderModifier.shape.add,
      set: HeaderModifier.shape.set,
      remove: NotYet(`requestHeaderModifier.remove on ${service}`).optional(),
    })
      .optional()
      .meta({ description: 'headers sent with each call (gRPC metadata over gRPC)' }),
  });
const ExtAuthzServicePolicies = serviceCallPolicies('the extAuthz service');
type ExtAuthzServicePolicies = z.output<typeof ExtAuthzServicePolicies>;
/** What both protocols share: the body sent along, TLS to the service, the failure mode. */
interface ExtAuthzCommonIR {
  failureMode?: z.output<typeof FailureMode>;
  /** The status of the denial when the service cannot decide and the mode is failClosed (default 403). */
  failureStatus?: number;
  /** A named host backend to call, resolved by the loader (never left in the IR it hands on). */
  backendRef?: string;
  /** A Service of `services` to call, resolved by the loader (never left in the IR it hands on). */
  serviceRef?: { name: string; port: number };
  includeRequestBody?: z.output<typeof ExtAuthzBody>;
  policies?: Pick<ExtAuthzServicePolicies, 'backendTLS' | 'backendAuth' | 'requestHeaderModifier'>;
  /** Allowed answers reused by key until their ttl ends. */
  cache?: { key: string[]; ttl: string; maxEntries?: number };
}
/** What the loader and the controller hand the extAuthz policy: gw's own form. */
type ExtAuthzIR =
  | ({ grpc: z.output<typeof ExtAuthzGrpc> } & ExtAuthzCommonIR)
  | ({
      http: z.output<typeof ExtAuthzHttp> & {
        /** A service given as a Service of `services`: its workloads (the loader's), dialled in turn. */
        endpoints?: { host: string; port: number }[];
      };
    } & ExtAuthzCommonIR);
// agentgateway's protocol blocks: the same settings as gw's grpc/http under its names.
const AgwExtAuthzGrpc = strict({
  context: ExtAuthzGrpc.shape.contextExtensions.nullable(),
  metadata: CelByName.nullable().optional(),
});
const AgwExtAuthzHttp = strict({
  path: Cel.nullable().optional(),
  redirect: Cel.nullable().optional(),
  body: Cel.nullable().optional(),
  includeResponseHeaders: CrdExtAuthHttp.allowedResponseHeaders,
  addRequestHeaders: ExtAuthzHttp.shape.addRequestHeaders,
  metadata: CelByName.optional(),
});
const EXT_AUTHZ_AGW_FIELDS = ['host', 'service', 'backend', 'protocol', 'includeRequestHeaders'] as const;
/**
 * agentgateway's ExtAuthz (`host` + `protocol: {grpc|http}`, gRPC by default; failureMode allow or
 * deny) and, as aliases, gw's `{grpc: {host, …}}` and `{http: {host, …}}`; both load as gw's form.
 */
const ExtAuthzFields = strict({
  host: AuthzHost.optional().meta({ description: 'host:port of the authorization service' }),
  service: PolicyServiceRef('the authorization service').optional(),
  backend: z.string().min(1).optional().meta({
    description:
      'the name of a host backend in the top-level backends list: its address and its backendTLS (unless policies.backendTLS is set)',
  }),
  protocol: z
    .union([strict({ grpc: AgwExtAuthzGrpc }), strict({ http: AgwExtAuthzHttp })])
    .optional()
    .meta({ description: 'grpc (Envoy ext_authz v3, the default) or http' }),
  failureMode: z
    .union([
      z.enum(['allow', 'deny']),
      FailureMode,
      strict({
        denyWithStatus: z.number().int().min(200).max(599).meta({
          description: 'deny with this HTTP status when the service cannot decide',
        }),
      }),
    ])
    .optional()
    .meta({
      description:
        'when the service cannot decide: deny (default, 403), allow, or {denyWithStatus: <status>}',
    }),
  includeRequestHeaders: z.array(HeaderName).optional().meta({
    description: 'with http: the request headers sent to the service (default authorization)',
  }),
  includeRequestBody: ExtAuthzBody.nullable().optional().meta({
    description:
      'the request body sent along (gRPC: attributes.request.http.body or raw_body; http: the check request body, unless http.body is set); the upstream still gets the whole body',
  }),
  cache: strict({
    key: z.array(Cel).meta({
      description:
        'CEL whose values together are the cache key (an empty list, or a key that fails to evaluate, is never cached)',
    }),
    ttl: z.string().min(1).meta({
      description:
        'how long to reuse an answer: a duration (1m), or CEL evaluated once the answer is applied giving a duration, a timestamp, or seconds since the Unix epoch (e.g. a token exp)',
    }),
    maxEntries: z
      .number()
      .int()
      .min(0)
      .optional()
      .meta({ description: 'results kept at most (default 10000; 0: no cache)' }),
  })
    .nullable()
    .optional()
    .meta({
      description:
        'allowed answers reused for requests with the same key until the ttl ends (the key must cover everything the service decides on); denials and failures are never cached',
    }),
  policies: ExtAuthzServicePolicies.nullable().optional().meta({
    description: 'settings of the connection to the authorization service: backendTLS',
  }),
  timeout: Duration.optional().meta({ description: 'gw addition: deadline of the check (default 200ms)' }),
  grpc: ExtAuthzGrpc.optional().meta({ description: "gw's form: the service and settings of a gRPC check" }),
  http: ExtAuthzHttp.optional().meta({ description: "gw's form: the service and settings of an HTTP check" }),
});
/**
 * agentgateway's `policies.http` on a policy's service, which has no deadline field of its own:
 * requestTimeout is the deadline of each call, gw's `timeout` (at `timeoutPath`); setting both is an
 * error, as is an HTTP version the call cannot speak (gRPC is HTTP/2; an HTTP extAuthz check is
 * sent as HTTP/1.1). Returns the deadline, undefined when neither sets one; reports on `ctx`.
 */
function serviceCallDeadline(
  e: {
    timeout?: string | undefined;
    policies?: { http?: z.output<typeof BackendHttp> | undefined } | null | undefined;
  },
  ctx: z.core.$RefinementCtx<unknown>,
  call: { grpc: boolean; timeoutPath: string[] },
): string | undefined {
  const http = e.policies?.http;
  if (http?.version && http.version !== (call.grpc ? 'HTTP2' : 'HTTP1'))
    ctx.issues.push({
      code: 'custom',
      input: http.version,
      message: call.grpc
        ? 'the calls of a gRPC service are HTTP/2: leave version out or set HTTP/2.0'
        : notYetMessage('HTTP/2 to an HTTP extAuthz service'),
      path: ['policies', 'http', 'version'],
    });
  const timeout = http?.requestTimeout;
  if (timeout !== undefined && e.timeout !== undefined)
    ctx.issues.push({
      code: 'custom',
      input: timeout,
      message: `set one deadline: ${call.timeoutPath.join('.')} or policies.http.requestTimeout, not both`,
      path: ['policies', 'http', 'requestTimeout'],
    });
  return e.timeout ?? timeout;
}

/** A gRPC policy service's call (extProc, remoteRateLimit) with policies.http taken into `timeout`. */
function withServiceDeadline<
  T extends {
    timeout?: string | undefined;
    policies?: { http?: z.output<typeof BackendHttp> | undefined } | undefined;
  },
>(e: T, ctx: z.core.$RefinementCtx<unknown>): T {
  if (!e.policies?.http) return e;
  const timeout = serviceCallDeadline(e, ctx, { grpc: true, timeoutPath: ['timeout'] });
  const { http: _http, ...policies } = e.policies;
  return { ...e, policies, ...(timeout !== undefined ? { timeout } : {}) };
}

function extAuthzIR(e: z.output<typeof ExtAuthzFields>, ctx: z.core.$RefinementCtx<unknown>): ExtAuthzIR {
  const issue = (message: string, path: string[] = []) => {
    ctx.issues.push({ code: 'custom', input: e, message, path });
    return z.NEVER;
  };
  const f = e.failureMode;
  const failureMode = f === 'allow' ? 'failOpen' : f === 'deny' || typeof f === 'object' ? 'failClosed' : f;
  const fm = {
    ...(failureMode ? { failureMode } : {}),
    ...(typeof f === 'object' ? { failureStatus: f.denyWithStatus } : {}),
    ...(e.includeRequestBody ? { includeRequestBody: e.includeRequestBody } : {}),
    ...(e.cache
      ? {
          cache: {
            key: e.cache.key,
            // a duration as written is the CEL of one
            ttl:
              parseGoDuration(e.cache.ttl) !== undefined
                ? `duration(${JSON.stringify(e.cache.ttl)})`
                : e.cache.ttl,
            ...(e.cache.maxEntries !== undefined ? { maxEntries: e.cache.maxEntries } : {}),
          },
        }
      : {}),
    ...(e.policies?.backendTLS || e.policies?.backendAuth || e.policies?.requestHeaderModifier
      ? {
          policies: defined({
            backendTLS: e.policies.backendTLS,
            backendAuth: e.policies.backendAuth,
            requestHeaderModifier: e.policies.requestHeaderModifier,
          }),
        }
      : {}),
    // a backend reference: the loader puts the named backend's address (and TLS) in its place
    ...(e.backend ? { backendRef: e.backend } : {}),
    // a Service: the loader puts its workloads' addresses in its place
    ...(e.service ? { serviceRef: e.service } : {}),
  };
  if (e.grpc || e.http) {
    const mixed = EXT_AUTHZ_AGW_FIELDS.filter((k) => e[k] !== undefined);
    if (e.grpc && e.http) return issue('set one of grpc and http');
    if (mixed.length > 0 || e.timeout)
      return issue(
        `use either host and protocol or gw's grpc/http form, not both (got ${[...mixed, ...(e.timeout ? ['timeout'] : [])].join(', ')} beside ${e.grpc ? 'grpc' : 'http'})`,
      );
    const block = (e.grpc ?? e.http) as { timeout?: string | undefined };
    const form = e.grpc ? 'grpc' : 'http';
    const t = serviceCallDeadline({ timeout: block.timeout, policies: e.policies }, ctx, {
      grpc: form === 'grpc',
      timeoutPath: [form, 'timeout'],
    });
    const deadline = t !== undefined ? { timeout: t } : {};
    return e.grpc
      ? { grpc: { ...e.grpc, ...deadline }, ...fm }
      : { http: { ...(e.http as z.output<typeof ExtAuthzHttp>), ...deadline }, ...fm };
  }
  const naming = serviceNamingProblem(e, 'the authorization service');
  if (naming) return issue(naming.message, naming.path);
  const host = e.host ?? '';
  const p = e.protocol ?? { grpc: {} };
  const t = serviceCallDeadline(e, ctx, { grpc: !('http' in p), timeoutPath: ['timeout'] });
  const timeout = t !== undefined ? { timeout: t } : {};
  if ('http' in p) {
    const h = p.http;
    return {
      http: {
        host,
        ...defined({
          path: h.path,
          redirect: h.redirect,
          body: h.body,
          allowedRequestHeaders: e.includeRequestHeaders,
          addRequestHeaders: h.addRequestHeaders,
          allowedResponseHeaders: h.includeResponseHeaders,
          responseMetadata: h.metadata,
        }),
        ...timeout,
      },
      ...fm,
    };
  }
  if (e.includeRequestHeaders)
    return issue(
      notYetMessage('includeRequestHeaders with the grpc protocol (all request headers are sent)'),
      ['includeRequestHeaders'],
    );
  return {
    grpc: {
      host,
      ...defined({ contextExtensions: p.grpc.context, requestMetadata: p.grpc.metadata }),
      ...timeout,
    },
    ...fm,
  };
}
export const ExtAuthz = ExtAuthzFields.transform(extAuthzIR);
/** An extAuthz check, or the first of several whose condition holds (agentgateway's conditional form). */
export const ExtAuthzPolicy = explicitOrConditional(ExtAuthzFields, extAuthzIR);

// agentgateway's ExtProc: Envoy ext_proc v3 over gRPC, one bidirectional stream per request.
export { EXTPROC_ATTRIBUTES_NAMESPACE, EXTPROC_GRPC_METADATA_NAMESPACE };

const ExtProcBodyMode = z
  .enum(['none', 'buffered', 'bufferedPartial', 'fullDuplexStreamed'])
  .optional()
  .meta({
    description:
      'none, buffered, bufferedPartial or fullDuplexStreamed (default: chunks streamed to the service and back as they come)',
  });
const ExtProcSendMode = z.enum(['send', 'skip']).optional();
export const ExtProc = strict({
  host: AuthzHost.optional().meta({ description: 'host:port of the external processing service' }),
  service: PolicyServiceRef('the external processing service').optional(),
  backend: z.string().min(1).optional().meta({
    description: 'the name of a host backend in the top-level backends list, whose address is the service',
  }),
  policies: serviceCallPolicies('the extProc service').optional(),
  failureMode: z.enum(['failClosed', 'failOpen']).optional().meta({
    description: 'when the service fails: failClosed (default, 500) or failOpen (continue unprocessed)',
  }),
  metadataContext: z
    .record(z.string().min(1), z.record(z.string().min(1), Cel))
    .optional()
    .meta({
      description: `namespace -> key -> CEL: sent as metadata_context.filter_metadata with every message of the stream; the namespace ${EXTPROC_GRPC_METADATA_NAMESPACE} goes as gRPC metadata of the stream instead; a key that fails to evaluate is left out`,
    }),
  requestAttributes: z
    .record(z.string().min(1), Cel)
    .optional()
    .meta({
      description: `name -> CEL: the request phase's first message carries them as attributes["${EXTPROC_ATTRIBUTES_NAMESPACE}"]; source.address, source.port, destination.address, destination.port and request.protocol, when named, carry the connection's own values; a name that fails to evaluate is left out`,
    }),
  responseAttributes: z.record(z.string().min(1), Cel).optional().meta({
    description: `name -> CEL: as requestAttributes, on the response phase's first message (response.* known)`,
  }),
  processingOptions: strict({
    requestBodyMode: ExtProcBodyMode,
    responseBodyMode: ExtProcBodyMode,
    requestHeaderMode: ExtProcSendMode,
    responseHeaderMode: ExtProcSendMode,
    // Trailers are not sent (gw's pipeline carries none; a streamed body ends with end_of_stream);
    // both values are accepted.
    requestTrailerMode: ExtProcSendMode,
    responseTrailerMode: ExtProcSendMode,
    allowModeOverride: z.boolean().optional().meta({
      description: "whether a headers answer's mode_override may change the body modes that follow",
    }),
  }).optional(),
  timeout: Duration.optional().meta({ description: 'gw addition: deadline of each answer (default 200ms)' }),
}).superRefine((e, ctx) => {
  const naming = serviceNamingProblem(e, 'the external processing service');
  if (naming) ctx.addIssue({ code: 'custom', ...naming });
});
/** An extProc service, or the first of several whose condition holds (agentgateway's conditional form). */
export const ExtProcPolicy = explicitOrConditional(ExtProc, withServiceDeadline);

// agentgateway's token bucket form
// (as agentgateway: both default to 0; a bucket of 0 tokens refuses everything, 0 per fill never refills)
const LocalRateLimitBucket = strict({
  maxTokens: z.number().int().min(0).default(0),
  tokensPerFill: z.number().int().min(0).default(0),
  fillInterval: Duration,
  type: z.enum(['requests', 'tokens']).optional(),
  key: Cel.nullable().optional().meta({
    description:
      'CEL giving the bucket a request draws from (jwt.sub: one bucket per user, with the limits above each); a string, number or bool as written; unset, failed or another value: one shared bucket. A proxy remembers up to 4,096 keys per limit and route (96 KiB of shared memory), in sets of 8 by hash: a key that finds its set full takes the place of a bucket that has refilled, else of the least recently used one, whose key then starts with a full bucket (so a bucket that never refills is no lifetime quota)',
  }),
}).refine((l) => l.tokensPerFill <= l.maxTokens, {
  message: 'maxTokens cannot be less than tokensPerFill',
  path: ['maxTokens'],
});
export const LocalRateLimit = z.union([
  LocalRateLimitBucket,
  // the spec's form: N requests or tokens per unit plus burst, as in GwPolicy
  CrdLocalRateLimit,
]);
/**
 * A list of limits, all applied, or agentgateway's conditional form: the bucket of the first entry
 * whose condition holds (each entry one bucket of its own).
 */
const LocalRateLimitPolicy = z.union([
  conditionalForm(conditionalEntry(LocalRateLimitBucket)),
  z.array(LocalRateLimit).min(1),
]);

/**
 * agentgateway's concurrencyLimit (newer than the schema gw follows): requests in flight at once, per
 * key. A list of limits, all applied, or the conditional form (each entry one limit).
 */
const ConcurrencyLimit = strict({
  maxConcurrent: z.number().int().min(1).max(1_000_000).meta({
    description: 'requests in flight at once per key; more get a 429',
  }),
  key: Cel.optional().meta({
    description:
      'CEL giving the counter a request counts on (jwt.sub, jwt.sub + "/" + llm.requestModel); a string, number or bool as written; unset, failed or another value: one counter',
  }),
  limitOverride: Cel.optional().meta({
    description:
      "CEL giving this request's limit instead of maxConcurrent (0 refuses it); not a whole number ≥ 0: maxConcurrent",
  }),
  shared: NotYet('concurrencyLimit shared (slots kept in Redis for every proxy)').optional(),
});
export type ConcurrencyLimit = z.infer<typeof ConcurrencyLimit>;
const ConcurrencyLimitPolicy = z.union([
  conditionalForm(conditionalEntry(ConcurrencyLimit)),
  z.array(ConcurrencyLimit).min(1),
]);

// Global rate limit: Envoy's rate limit service v3 (envoyproxy/ratelimit), agentgateway's field names.
const RemoteRateLimitDescriptor = strict({
  entries: z
    .array(
      strict({
        key: z.string().min(1).max(256),
        value: Cel.meta({ description: 'CEL: the entry value; a failed evaluation drops the descriptor' }),
      }),
    )
    .min(1)
    .max(64),
  type: z.enum(['requests', 'tokens']).optional().meta({
    description: 'requests (default) counts each request; tokens counts LLM usage once the response ends',
  }),
  cost: Cel.optional().meta({
    description:
      'CEL: what one request counts, a whole number (unset: 1 for requests; llm.totalTokens for tokens, evaluated once the response ends); a failed evaluation drops the descriptor',
  }),
  limitOverride: Cel.optional().meta({
    description:
      'CEL: the limit the service applies instead of its own, a map like {"unit": "minute", "requestsPerUnit": 5} (units: second, minute, hour, day, month, year); a failed evaluation drops the descriptor',
  }),
});
export const RemoteRateLimit = strict({
  host: AuthzHost.optional().meta({ description: 'gRPC address of the rate limit service' }),
  service: PolicyServiceRef('the rate limit service').optional(),
  backend: z.string().min(1).optional().meta({
    description: 'the name of a host backend in the top-level backends list, whose address is the service',
  }),
  policies: serviceCallPolicies('the remoteRateLimit service').optional(),
  domain: CrdGlobalRateLimit.shape.domain,
  descriptors: z.array(RemoteRateLimitDescriptor).min(1).max(64),
  failureMode: FailureMode.optional().meta({
    description:
      'failClosed (default, as agentgateway) answers 500 when the service fails; failOpen lets requests pass',
  }),
  timeout: Duration.optional().meta({ description: 'deadline of the ShouldRateLimit call (default 100ms)' }),
}).superRefine((e, ctx) => {
  const naming = serviceNamingProblem(e, 'the rate limit service');
  if (naming) ctx.addIssue({ code: 'custom', ...naming });
});
/** A rate limit service call, or the first of several whose condition holds (agentgateway's conditional form). */
const RemoteRateLimitPolicy = explicitOrConditional(RemoteRateLimit, withServiceDeadline);

// ---------- backend policies ----------
const Keepalives = strict({
  enabled: z.boolean().optional(),
  time: Duration.optional(),
  interval: Duration.optional(),
  retries: CrdKeepalive.shape.retries.unwrap().optional(),
});
// agentgateway writes versions as HTTP/1.1 (HTTP/1.0 too) and HTTP/2.0; HTTP1 and HTTP2 are gw's spellings.
const HTTP_VERSIONS: Record<string, 'HTTP1' | 'HTTP2'> = {
  'HTTP/1.0': 'HTTP1',
  'HTTP/1.1': 'HTTP1',
  'HTTP/2.0': 'HTTP2',
  HTTP1: 'HTTP1',
  HTTP2: 'HTTP2',
};
const BackendHttp = strict({
  version: z
    .string()
    .transform((v, ctx) => {
      const known = HTTP_VERSIONS[v];
      if (known) return known;
      ctx.issues.push({
        code: 'custom',
        input: v,
        message:
          v === 'HTTP/3.0' || v === 'HTTP/0.9'
            ? notYetMessage(v)
            : `expected HTTP/1.1 or HTTP/2.0 (or HTTP1, HTTP2), not ${JSON.stringify(v)}`,
      });
      return z.NEVER;
    })
    .nullable()
    .optional(),
  requestTimeout: Duration.optional(),
});
const BackendTcp = strict({ keepalives: Keepalives.optional(), connectTimeout: Duration.optional() });
/**
 * gw's active health check (the CRDs' health.active): one prober per endpoint per proxy sends GET
 * `path` every `interval`; `unhealthyThreshold` failed probes in a row take the endpoint out of the
 * balancing set, `healthyThreshold` passed ones in a row bring it back.
 */
export const ActiveHealth = strict({
  path: z.string().startsWith('/', 'path must start with /').max(1024).optional().meta({
    description: 'the path probed (default /)',
  }),
  interval: Duration.optional().meta({ description: 'time between probes (default 10s)' }),
  timeout: Duration.optional().meta({
    description: 'deadline of a probe, connection included (default 1s); no answer by then fails it',
  }),
  healthyThreshold: z.number().int().min(1).max(100).optional().meta({
    description: 'passed probes in a row that bring an unhealthy endpoint back (default 1)',
  }),
  unhealthyThreshold: z.number().int().min(1).max(100).optional().meta({
    description: 'failed probes in a row that take the endpoint out (default 3)',
  }),
  expectedStatuses: z.array(z.number().int().min(100).max(599)).min(1).max(64).optional().meta({
    description: 'statuses that pass (default: 200 to 399, as a Kubernetes httpGet probe)',
  }),
});
/** agentgateway's backend `health`: passive outlier detection (an endpoint answering badly is ejected). */
export const BackendHealth = strict({
  unhealthyExpression: Cel.nullable().optional().meta({
    description: 'CEL over the response: true marks it unhealthy (default: a 5xx, or no response at all)',
  }),
  eviction: strict({
    duration: Duration.nullable().optional().meta({
      description:
        'first ejection time (default 3s); the n-th ejection in a row lasts n times as long, at most 300s or this duration',
    }),
    consecutiveFailures: z.number().int().min(0).nullable().optional().meta({
      description:
        'unhealthy answers in a row that eject the endpoint (unset and 0: 1, or only healthThreshold when that is set)',
    }),
    healthThreshold: z.number().min(0).max(1).nullable().optional().meta({
      description:
        'eject when an unhealthy answer leaves the health score (an average of recent answers, 1 healthy and 0 unhealthy, a new endpoint at 1) below this, 0.0 to 1.0; with consecutiveFailures too, either ejects',
    }),
    restoreHealth: z.number().min(0).max(1).nullable().optional().meta({
      description:
        'the health score an endpoint comes back from an ejection with, 0.0 to 1.0 (unset: the one it had, so the next unhealthy answer may eject it again)',
    }),
  })
    .nullable()
    .optional(),
  active: ActiveHealth.optional().meta({
    description:
      'gw addition: active checks, an HTTP GET probe per endpoint (agentgateway has only passive ones). With active alone, answers to requests eject nothing',
  }),
});

// ---------- backendAuth: the credential the gateway presents to the upstream ----------
/** agentgateway's `backendAuth: copilot`: the GitHub token Copilot takes, from the environment or GitHub's tools. */
const CopilotAuth = z.literal('copilot').meta({
  description:
    "the GitHub token Copilot takes: GH_COPILOT_TOKEN / COPILOT_GITHUB_TOKEN, else GitHub Copilot's or the GitHub CLI's stored one",
});
/** Where backendAuth copilot is not built (a guard service, a token endpoint, …). */
const CopilotAuthRefused = NotYetValues(['copilot'], 'backendAuth copilot');
/** The algorithms jwtSign signs with: RSA (PKCS#1 v1.5 and PSS) and EC (P-256, P-384). */
export const JWT_SIGN_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'] as const;
/** Claims the signer sets itself on every token. */
export const JWT_SIGN_RESERVED_CLAIMS = ['iat', 'exp', 'nbf'] as const;
const AuthLocation = TokenLocation.nullable()
  .optional()
  .meta({ description: 'where the credential is written (default the Authorization header, Bearer prefix)' });
export const JwtSign = strict({
  signingKey: FileOrInline.meta({ description: 'PEM RSA or EC private key matching alg, inline or {file}' }),
  alg: z.enum(JWT_SIGN_ALGS).nullable().optional().meta({ description: 'default RS256' }),
  kid: z.string().min(1).nullable().optional(),
  claims: z.record(z.string().min(1), z.unknown()).optional().meta({
    description: 'static claims of every token (iss, sub, aud …); iat, exp and nbf are set by the signer',
  }),
  ttl: Duration.nullable().optional().meta({ description: 'lifetime of each token, for exp (default 300s)' }),
  location: AuthLocation,
});
const AwsRegionService = {
  region: z
    .string()
    .min(1)
    .nullable()
    .optional()
    .meta({ description: 'signing region (default AWS_REGION)' }),
  serviceName: z
    .string()
    .min(1)
    .nullable()
    .optional()
    .meta({ description: 'signing service (default execute-api)' }),
};
const AWS_SESSION_NAME_MESSAGE = 'a session name is 2 to 64 letters, digits or +=,.@_-';
/** agentgateway's aws.assumeRole: STS AssumeRole from the ambient credentials, before signing. */
const AwsAssumeRole = strict({
  roleArn: z.string().regex(/^arn:aws[a-z-]*:iam::[0-9]{12}:role\/.+$/, {
    message: 'expected an IAM role ARN (arn:aws:iam::<account>:role/<name>)',
  }),
  sessionName: z
    .union([
      z.string().regex(AWS_SESSION_NAME, { message: AWS_SESSION_NAME_MESSAGE }),
      strict({ expression: Cel }),
    ])
    .nullable()
    .optional()
    .meta({
      description:
        'RoleSessionName, for CloudTrail and cost reports: a name, or {expression} evaluated per request (unset: one of its own)',
    }),
  tags: z
    .array(
      strict({
        key: z.string().min(1).max(128),
        value: z.string().max(256).nullable().optional(),
        expression: Cel.nullable().optional(),
      }).refine((t) => (t.value == null) !== (t.expression == null), {
        message: 'set value or expression',
      }),
    )
    .max(50)
    .optional()
    .meta({ description: 'session tags, each a value or an expression evaluated per request' }),
  externalId: z
    .string()
    .regex(/^[\w+=,.@:/-]{2,1224}$/, {
      message: 'expected 2-1224 characters of letters, digits and +=,.@:/-_',
    })
    .nullable()
    .optional()
    .meta({ description: "sts:ExternalId, when the role's trust policy asks for one (agentgateway's)" }),
})
  .nullable()
  .optional()
  .meta({
    description:
      'an IAM role assumed with STS (from the ambient credentials) before signing; its credentials are cached per session name and tags until they near expiry',
  });
export const BackendAwsAuth = z.union([
  strict({
    accessKeyId: z.string().min(1),
    secretAccessKey: z.string().min(1),
    sessionToken: z.string().min(1).nullable().optional(),
    ...AwsRegionService,
  }),
  strict({
    ...AwsRegionService,
    assumeRole: AwsAssumeRole,
  }),
]);
// gcp, azure, oauthTokenExchange and crossAppAccess (token-auth.ts)
export const { GcpAuth, AzureAuth, OAuthTokenExchangeAuth, OAuthAuth, CrossAppAccessAuth, XaaAuth } =
  tokenAuthSchemas({
    fileOrInline: FileOrInline,
    backendTLS: BackendTLS,
    hostPort: AuthzHost,
    tokenLocation: TokenLocation,
    cel: Cel,
    duration: Duration,
    notYet: NotYet,
    serviceRef: ServiceRef,
  });
/**
 * backendAuth's forms beside `key`, each built at a backend (BackendAuth); a place that takes only
 * some (a guard service, an ai provider, a tunnel's proxy) refuses the others by name.
 * `credentials` (extra credentials beside the main one) may stand beside any form, as in
 * agentgateway's BackendAuthCompat.
 */
/**
 * The backendAuth forms a call to a policy's own service (extAuthz, extProc, remoteRateLimit) obtains
 * per call for its request, beside a key: what the loader resolves and the controller passes on.
 */
export const SERVICE_CALL_TOKEN_FORMS = [
  'passthrough',
  'jwtSign',
  'gcp',
  'azure',
  'oauthTokenExchange',
  'crossAppAccess',
] as const;
const AUTH_FORMS = [
  'passthrough',
  'jwtSign',
  'aws',
  'gcp',
  'azure',
  'oauthTokenExchange',
  'oauth',
  'crossAppAccess',
  'xaa',
] as const;
/**
 * agentgateway's `credentials`: more credentials written on the backend request beside the main one
 * (or alone), each a value and where it goes. Written before the main form, so the main form wins a
 * place both name and an AWS signature covers them.
 */
export const BackendAuthCredentials = z
  .array(
    strict({
      location: TokenLocation.meta({ description: 'a header (with its prefix), query parameter or cookie' }),
      key: FileOrInline.meta({
        description: 'the credential, inline or {file} (a trailing newline dropped)',
      }),
    }),
  )
  .min(1)
  .max(8)
  .meta({ description: 'extra credentials written on the backend request, beside the main one or alone' });
/**
 * agentgateway's earlier shape of `credentials`: headers only, each a name, an optional prefix
 * (`Bearer `) and the value; read as credentials in a header.
 */
const BackendAuthHeaders = z
  .array(
    strict({
      name: HeaderName,
      prefix: z
        .string()
        .nullable()
        .optional()
        .meta({ description: 'written before the value, e.g. "Bearer "' }),
      value: FileOrInline.refine((v) => typeof v !== 'string' || v.length > 0, {
        message: 'the value is empty',
      }).meta({ description: 'the secret, inline or {file} (a trailing newline dropped)' }),
    }),
  )
  .min(1)
  .max(8)
  .meta({
    description: 'extra secret headers written on the backend request (the earlier form of credentials)',
  });
type AuthHeaders = z.infer<typeof BackendAuthHeaders>;
type AuthCredentials = z.infer<typeof BackendAuthCredentials>;
type WithoutHeaders<T> = T extends object ? Omit<T, 'headers'> : T;
/** A form's `headers` moved into its `credentials`, after those already there. */
function headersAsCredentials<T>(form: T): WithoutHeaders<T> {
  if (typeof form !== 'object' || form === null || !('headers' in form)) return form as WithoutHeaders<T>;
  const { headers, ...rest } = form as { headers?: AuthHeaders; credentials?: AuthCredentials };
  if (!headers) return rest as WithoutHeaders<T>;
  const credentials: AuthCredentials = [
    ...(rest.credentials ?? []),
    ...headers.map((h) => ({
      location: { header: { name: h.name, ...(h.prefix ? { prefix: h.prefix } : {}) } },
      key: h.value,
    })),
  ];
  return { ...rest, credentials } as WithoutHeaders<T>;
}
/** Where `credentials` is not built (a guard service, a tunnel's proxy, …). */
const BackendAuthCredentialsRefused = NotYet('backendAuth credentials').transform((v) => v as never);
const BackendAuthHeadersRefused = NotYet('backendAuth headers').transform((v) => v as never);
/**
 * One form of backendAuth, with agentgateway's optional `credentials` (and its earlier `headers`)
 * beside it, built or refused.
 */
const authForm = <
  S extends z.core.$ZodLooseShape,
  C extends z.ZodType = typeof BackendAuthCredentialsRefused,
  H extends z.ZodType = typeof BackendAuthHeadersRefused,
>(
  shape: S,
  credentials?: C,
  headers?: H,
) =>
  strict({
    ...shape,
    credentials: (credentials ?? BackendAuthCredentialsRefused).optional() as z.ZodOptional<C>,
    headers: (headers ?? BackendAuthHeadersRefused).optional() as z.ZodOptional<H>,
  });
type AuthFormName = (typeof AUTH_FORMS)[number];
/**
 * The forms of backendAuth a place does not implement (`built` names those it does), each refused by
 * name (`where` tells the place), `credentials` alone, and copilot.
 */
const backendAuthRefused = (
  built: readonly AuthFormName[],
  where: string,
  credentialsBuilt = false,
): z.ZodType<never>[] => [
  ...AUTH_FORMS.filter((k) => !built.includes(k)).map((k) =>
    authForm({ [k]: NotYet(`backendAuth ${k}${where}`) }).transform((v) => v as never),
  ),
  ...(credentialsBuilt
    ? []
    : [
        strict({ credentials: BackendAuthCredentialsRefused }).transform((v) => v as never),
        strict({ headers: BackendAuthHeadersRefused }).transform((v) => v as never),
      ]),
  CopilotAuthRefused,
];
/** `key`: the key alone (agentgateway's older form, sent as a bearer token), or with where it goes. */
const KeyField = { key: z.union([FileOrInline, strict({ value: FileOrInline, location: AuthLocation })]) };
const KeyAuth = authForm(KeyField);
/** `credentials` on a call to a policy's own service: headers (gRPC metadata) only. */
const ServiceCredentials = BackendAuthCredentials.superRefine((cs, ctx) =>
  cs.forEach((c, i) => {
    if (!('header' in c.location))
      ctx.addIssue({
        code: 'custom',
        path: [i, 'location'],
        message: 'a call to a service carries its credentials in headers',
      });
  }),
);
/**
 * backendAuth on a call to a policy's own service (extAuthz, extProc, remoteRateLimit): a key, with
 * `credentials` (or the earlier `headers`) beside it or alone, each in a header; the other forms are
 * refused by name (`where`).
 */
const serviceKeyAuth = (where: string) =>
  z
    .union([
      authForm(KeyField, ServiceCredentials, BackendAuthHeaders),
      strict({ credentials: ServiceCredentials }),
      strict({ headers: BackendAuthHeaders, credentials: ServiceCredentials.optional() }),
      ...backendAuthRefused([], where, true),
    ])
    .transform(headersAsCredentials);
/** A form at a backend, an LLM provider or an MCP target, where `credentials` (and `headers`) are built. */
const backendForm = <S extends z.core.$ZodLooseShape>(shape: S) =>
  authForm(shape, BackendAuthCredentials, BackendAuthHeaders);
/**
 * The backendAuth forms a backend and a call to a policy's own service share (aws and copilot are a
 * backend's alone), each with `credentials` (`creds`: headers only for a service) and `headers`
 * beside it, and those alone; agentgateway's newer `oauth` and `xaa` load as oauthTokenExchange and
 * crossAppAccess.
 */
const sharedAuthForms = <O extends z.ZodType[]>(creds: typeof BackendAuthCredentials, ...own: O) => {
  const form = <S extends z.core.$ZodLooseShape>(shape: S) => authForm(shape, creds, BackendAuthHeaders);
  return [
    form(KeyField),
    form({ passthrough: strict({ location: AuthLocation }) }),
    form({ jwtSign: JwtSign }),
    // the caller's own forms here, so that errors list the forms in agentgateway's order
    ...own,
    form({ gcp: GcpAuth }),
    form({ azure: AzureAuth }),
    form({ oauthTokenExchange: OAuthTokenExchangeAuth }),
    form({ oauth: OAuthAuth }).transform(({ oauth, ...rest }) => ({ ...rest, oauthTokenExchange: oauth })),
    form({ crossAppAccess: CrossAppAccessAuth }),
    form({ xaa: XaaAuth }).transform(({ xaa, ...rest }) => ({ ...rest, crossAppAccess: xaa })),
    strict({ credentials: creds }),
    strict({ headers: BackendAuthHeaders, credentials: creds.optional() }),
  ] as const;
};
/**
 * backendAuth on a call to a policy's own service (extAuthz, extProc, remoteRateLimit): a key, or a
 * credential each call obtains for its request (the client's JWT, a signed JWT, a Google, Azure or
 * OAuth token), in a header, with `credentials` beside it or alone; aws (a signature over the body
 * the call does not have) and copilot are refused by name (`where`).
 */
const serviceTokenAuth = (where: string) =>
  z
    .union([
      ...sharedAuthForms(ServiceCredentials),
      ...backendAuthRefused(
        ['passthrough', 'jwtSign', 'gcp', 'azure', 'oauthTokenExchange', 'oauth', 'crossAppAccess', 'xaa'],
        where,
        true,
      ),
    ])
    .transform(headersAsCredentials);
export const BackendAuth = z
  .union([...sharedAuthForms(BackendAuthCredentials, backendForm({ aws: BackendAwsAuth })), CopilotAuth])
  .transform(headersAsCredentials);
/**
 * backendAuth on a call to a service that takes only an API key (`key`, and `forms` the service also
 * builds); `{key: {value}}` is the same key, a location is refused by name.
 */
const serviceBackendAuth = <F extends z.ZodType[]>(
  key: z.ZodType<string | { file: string }>,
  where: string,
  built: readonly AuthFormName[] = [],
  ...forms: F
) =>
  z
    .union([
      authForm(
        {
          key: z.union([
            key,
            strict({ value: key, location: NotYet(`backendAuth key.location${where}`).optional() }).transform(
              (k) => k.value,
            ),
          ]),
        },
        ServiceCredentials,
        BackendAuthHeaders,
      ),
      ...forms,
      // more secrets, each in a header of its own, beside the service's own credential
      strict({ credentials: ServiceCredentials }),
      strict({ headers: BackendAuthHeaders, credentials: ServiceCredentials.optional() }),
      ...backendAuthRefused(built, where, true),
    ])
    .transform(headersAsCredentials);

/**
 * agentgateway's backendTunnel: the backend is reached through an HTTP forward proxy, by CONNECT or,
 * for plaintext HTTP/1.1, by sending the request in absolute form to the proxy. `policies` are the
 * settings of the connection to the proxy itself: backendTLS (an https proxy) and backendAuth (a key,
 * sent to the proxy as Proxy-Authorization).
 */
export const BackendTunnel = strict({
  proxy: z
    .union([
      strict({ host: AuthzHost.meta({ description: 'host:port of the forward proxy' }) }),
      strict({
        backend: z.string().min(1).meta({ description: 'a host backend of the top-level backends list' }),
      }),
      strict({
        service: ServiceRef.meta({
          description:
            "a Service of the top-level services list: each connection to the proxy goes to the next of its workloads (round robin), named by the Service's hostname",
        }),
      }),
    ])
    .meta({ description: 'the forward proxy the backend is reached through' }),
  policies: strict({
    backendTLS: BackendTLS.optional().meta({ description: 'TLS to the proxy (an https proxy)' }),
    backendAuth: z
      .union([KeyAuth, ...backendAuthRefused([], ' on a backendTunnel proxy')])
      .optional()
      .meta({
        description:
          'the credential sent to the proxy: the Proxy-Authorization header, Bearer prefix (location.header.prefix changes it, e.g. "Basic ")',
      }),
    requestHeaderModifier: NotYet('requestHeaderModifier on a backendTunnel proxy').optional(),
    transformations: NotYet('transformations on a backendTunnel proxy').optional(),
    http: NotYet('http on a backendTunnel proxy').optional(),
    tcp: NotYet('tcp on a backendTunnel proxy').optional(),
    backendTunnel: NotYet('a backendTunnel through another backendTunnel').optional(),
  })
    .nullable()
    .optional(),
  mode: z
    .enum(['auto', 'connect', 'Auto', 'Connect'])
    .transform((m) => (m.toLowerCase() === 'connect' ? ('Connect' as const) : ('Auto' as const)))
    .optional()
    .meta({
      description:
        'auto (default) tunnels TLS and HTTP/2 by CONNECT and sends plaintext HTTP/1.1 in absolute form; connect always tunnels (Auto and Connect, gw’s earlier spellings, too)',
    }),
});
/** agentgateway's backend policies this build does not run at the backend, refused by name. */
const BACKEND_POLICIES_NOT_BUILT = {};
/**
 * agentgateway's inferenceRouting (the Gateway API Inference Extension's endpoint picker protocol): an
 * endpoint picker (EPP), called over ext_proc with the request streamed through it, chooses which
 * endpoint of a `service` backend gets the request and answers with its address in the
 * x-gateway-destination-endpoint header.
 */
export const InferenceRouting = strict({
  endpointPicker: z
    .union([
      strict({ host: AuthzHost.meta({ description: 'host:port of the endpoint picker' }) }),
      strict({
        backend: z.string().min(1).meta({
          description: 'a host backend of the top-level backends list: its address, and its backendTLS',
        }),
      }),
      strict({ service: PolicyServiceRef('the endpoint picker') }),
    ])
    .meta({ description: 'the endpoint picker (an Envoy ext_proc v3 gRPC service)' }),
  destinationMode: z.enum(['validated', 'passthrough']).optional().meta({
    description:
      "validated (default): the picked address must be one of the Service's endpoints (its workloads), else 503; passthrough: the picked address is dialled as it is (the picker owns endpoint discovery)",
  }),
  failureMode: z.enum(['failClosed', 'failOpen']).optional().meta({
    description:
      "failClosed (default): a picker that fails or cannot be reached fails the request (500); failOpen: the request goes on, balanced over the Service's endpoints (an InferencePool's FailOpen; gw's addition)",
  }),
});
/**
 * agentgateway's sessionAffinity: requests with the same value (a CEL expression over the request)
 * go to the same provider of an ai backend, as long as it stays in the balancing set.
 */
const SessionAffinity = strict({
  source: Cel.meta({
    description:
      'CEL over the request giving a string or bytes, e.g. request.headers["x-session-id"] or string(source.address); a request without one is balanced as usual',
  }),
});
/** Backend policies refused by name: no policy module builds them at the backend. */
export type NotBuiltBackendPolicy = keyof typeof BACKEND_POLICIES_NOT_BUILT;
export const NOT_BUILT_BACKEND_POLICIES: readonly string[] = Object.keys(BACKEND_POLICIES_NOT_BUILT);
/**
 * The backend policies an MCP target's calls take: its connection's, and the headers it is sent
 * (backendAuth key or passthrough, requestHeaderModifier); the loader and the controller refuse
 * the others by name.
 */
export const MCP_TARGET_POLICIES: ReadonlySet<string> = new Set([
  'backendTLS',
  'backendTunnel',
  'tcp',
  'http',
  'backendAuth',
  'requestHeaderModifier',
]);
/**
 * gw extension (GwPolicy traffic.hostRewrite's standalone form): which Host a host backend is sent.
 * Without it, a backend named by DNS name in a file sends its name and one by IP the client's Host.
 */
const HostRewrite = strict({
  mode: z.enum(['auto', 'none']).meta({
    description:
      "auto: the backend's own name (or address) as Host; none: the client's Host. A route's urlRewrite authority wins over both",
  }),
});
export const BackendPolicies = strict({
  hostRewrite: HostRewrite.optional(),
  requestHeaderModifier: HeaderModifier.optional(),
  responseHeaderModifier: HeaderModifier.optional(),
  requestRedirect: RequestRedirect.optional(),
  // The backend is an A2A agent (agentgateway's backend policy a2a); only on host backends.
  a2a: A2aPolicy.optional(),
  backendTLS: BackendTLS.optional(),
  http: BackendHttp.optional(),
  tcp: BackendTcp.optional(),
  health: BackendHealth.optional(),
  backendTunnel: BackendTunnel.optional(),
  // gw: GwPolicy backend.mcp.authentication (deprecated) lands here; on other backends a config error.
  mcpAuthentication: McpAuthentication.optional(),
  // The MCP backend's own rules (agentgateway's mcpAuthorization); on other backends a config error.
  mcpAuthorization: z.lazy(() => McpAuthorization).optional(),
  mcpGuardrails: z.lazy(() => McpGuardrails).optional(),
  // The credential sent to the upstream (host, dynamic and a2a backends).
  backendAuth: BackendAuth.optional(),
  // CEL transformations of what is sent to this backend and of its answer (no conditional form).
  transformations: Transformations.optional(),
  // An ai backend's policy for all its providers (each provider's own, field by field, wins).
  ai: z
    .lazy(() => AiPolicy)
    .optional()
    .meta({
      description:
        "the ai backend's LLM policy, for every provider of it; a provider's own policies.ai wins field by field. Only on ai backends",
    }),
  // agentgateway's backend authorization and extAuthz: checked for this backend, after it is chosen
  authorization: Authorization.optional().meta({
    description: "rules for requests sent to this backend, after the route's (a denial is 403)",
  }),
  extAuthz: ExtAuthzPolicy.optional().meta({
    description: "an external authorization check for requests sent to this backend, after the route's",
  }),
  sessionAffinity: SessionAffinity.optional().meta({
    description:
      "requests with the same value go to the same provider of the ai backend (a priority group's, a weighted choice's); only on ai backends",
  }),
  inferenceRouting: InferenceRouting.optional().meta({
    description:
      'an endpoint picker chooses the Service endpoint of each request (and may change the request and the response, as ext_proc); only on service backends. The picker failing fails the request (500), unless its failureMode is failOpen',
  }),
  ...BACKEND_POLICIES_NOT_BUILT,
});

/**
 * agentgateway's RequestMirror: a copy of each sampled request goes to `backend`, whose answer is
 * thrown away; the client's response never waits for it.
 */
export const RequestMirror = strict({
  backend: strict({
    host: AuthzHost.optional().meta({ description: 'host:port of the mirror (plain HTTP/1.1)' }),
    backend: z.string().min(1).optional().meta({
      description: 'the name of a host backend in the top-level backends list, whose address gets the copies',
    }),
    service: ServiceRef.optional().meta({
      description:
        'a Service of the top-level services list: called by its hostname, each connection dialled at the next of its workloads',
    }),
  })
    .transform(
      (
        b,
        ctx,
      ): {
        host?: string;
        backend?: string;
        service?: { name: string; port: number };
        /** A Service's workloads (the loader's), dialled in turn. */
        endpoints?: { host: string; port: number }[];
      } => {
        const naming = serviceNamingProblem(b, 'the mirror');
        if (naming) {
          ctx.issues.push({ code: 'custom', input: b, ...naming });
          return z.NEVER;
        }
        // a backend by name or a Service: the loader puts its address in `host` (config/load.ts
        // serviceBackends)
        if (b.host !== undefined) return { host: b.host };
        if (b.backend !== undefined) return { backend: b.backend };
        return { service: b.service as { name: string; port: number } };
      },
    )
    .meta({ description: 'the backend that receives the copies' }),
  percentage: z
    .number()
    .min(0)
    .max(1)
    .meta({ description: 'fraction of matching requests to mirror, from 0.0 to 1.0' }),
});

/** agentgateway's route policies this build does not have, refused by name. */
const TRAFFIC_POLICIES_NOT_BUILT = {};
/** Route policies refused by name: no policy module builds them. */
export type NotBuiltTrafficPolicy = keyof typeof TRAFFIC_POLICIES_NOT_BUILT;
export const TrafficPolicies = strict({
  timeout: Timeout.optional(),
  ipAccessControl: IpAccessControl.optional().meta({
    description:
      "client addresses that may send requests (a listener's and its route's add up: their lists join, the route's settings win)",
  }),
  cors: Cors.optional(),
  jwtAuth: JwtAuth.optional(),
  // browser login with OpenID Connect (oidc.ts)
  oidc: Oidc.optional(),
  basicAuth: BasicAuth.optional(),
  apiKey: ApiKeyAuth.optional(),
  extAuthz: ExtAuthzPolicy.optional(),
  extProc: ExtProcPolicy.optional(),
  // The LLM policy of the route's ai backends (theirs and their providers' win field by field).
  ai: z
    .lazy(() => AiPolicy)
    .optional()
    .meta({
      description:
        "the LLM policy of the route's ai backends; a backend's policies.ai and a provider's win field by field. Only on routes to ai backends",
    }),
  ...TRAFFIC_POLICIES_NOT_BUILT,
  authorization: z.union([Authorization, z.array(Authorization)]).optional(),
  localRateLimit: LocalRateLimitPolicy.optional(),
  remoteRateLimit: RemoteRateLimitPolicy.optional(),
  mcpRemoteRateLimit: RemoteRateLimit.transform(withServiceDeadline).optional().meta({
    description:
      "remoteRateLimit for the route's MCP backends, checked per MCP request with mcp.* in CEL (mcp.tool.name, …): after authorization for a call to one target, before the fan-out of a list; requests descriptors only; over the limit a JSON-RPC error with HTTP 429",
  }),
  concurrencyLimit: ConcurrencyLimitPolicy.optional().meta({
    description: 'requests in flight at once, per key (a slot is held until the response has been sent)',
  }),
  buffer: Buffer.optional(),
  csrf: Csrf.optional(),
  requestHeaderModifier: HeaderModifier.optional(),
  responseHeaderModifier: HeaderModifier.optional(),
  urlRewrite: UrlRewrite.optional(),
  requestRedirect: RequestRedirect.optional(),
  requestMirror: RequestMirror.optional(),
  transformations: TransformationsPolicy.optional(),
  delay: Delay.optional(),
  directResponse: DirectResponse.optional(),
  retry: Retry.optional(),
  // The route's host backends are A2A agents (agentgateway's route policy a2a).
  a2a: A2aPolicy.optional(),
  // Backend connection settings may also be set for every backend of a route.
  backendTLS: BackendTLS.optional(),
  // gw extension: the Host every host backend of the route is sent (over a backend's own hostRewrite).
  hostRewrite: HostRewrite.optional(),
  // The credential sent to every backend of the route that sets none itself.
  backendAuth: BackendAuth.optional(),
  // The forward proxy every backend of the route is reached through, unless it names its own.
  backendTunnel: BackendTunnel.optional(),
  // Rules for the route's MCP backends (they add to a backend's own mcpAuthorization).
  mcpAuthorization: z.lazy(() => McpAuthorization).optional(),
  mcpAuthentication: McpAuthentication.optional(),
  mcpGuardrails: z.lazy(() => McpGuardrails).optional(),
});

// ---------- backends ----------
const HostPort = z
  .string()
  .regex(
    /^((\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}|unix:\/.+)$/,
    'expected "<host>:<port>" or "unix:/path/to/socket"',
  );

/** agentgateway's backend kinds this build does not have, refused as a whole by name. */
const BACKEND_KINDS_NOT_BUILT = [] as const;
const BACKEND_KIND_NAMES: Record<string, string> = {
  service: 'a backend by service reference (use host)',
};
/** agentgateway's `internal` backend: gw's own admin API as a route's backend. */
const InternalBackend = z
  .string()
  .min(1)
  .refine((v) => v === 'forward' || !/[?#\s]/.test(v), {
    message: "expected forward or an admin path without a query (the request's own query is kept)",
  })
  .meta({
    description:
      "gw's admin API: forward (the request's path and query, as the route's policies leave them) or an admin path every request goes to (the query kept), e.g. /config_dump. The admin's own checks still apply (a browser request from another site or origin is refused), and so must the route's authentication: the admin has none",
  });
const refusedBackend = (kind: string, rest: z.core.$ZodLooseShape) =>
  strict({
    [kind]: NotYet(BACKEND_KIND_NAMES[kind] ?? kind),
    weight: z.unknown().optional(),
    policies: z.unknown().optional(),
    ...rest,
  }).transform((v) => v as never);
const DynamicBackend = strict({
  target: Cel.nullable().optional().meta({
    description:
      "CEL giving the host:port to dial for each request (e.g. from a header or metadata a policy before set); unset: the request's own Host",
  }),
});
/** agentgateway's `aws` backend: an Amazon Bedrock AgentCore runtime, called signed with SigV4. */
export const AwsBackend = strict({
  agentCore: strict({
    agentRuntimeArn: z.string().min(1).meta({
      description:
        'ARN of the AgentCore runtime (arn:aws:bedrock-agentcore:<region>:<account>:runtime/<id>); the region is the one called and signed for',
    }),
    qualifier: z
      .string()
      .min(1)
      .nullish()
      .meta({ description: "the runtime endpoint or version to invoke (AgentCore's default: DEFAULT)" }),
  }),
});
/** A Service of the top-level `services` list, by `namespace/hostname`. */
/** A port as the key of a map (YAML `8000: 8000` keys are text). */
const PortKey = z.string().regex(/^[0-9]{1,5}$/, 'expected a port number');
/** A Service the file declares: requests to `service` backends go to the workloads that name it. */
export const LocalService = strict({
  name: z.string().min(1),
  namespace: z.string().min(1),
  hostname: z.string().min(1),
  vips: z.array(z.string()).meta({ description: 'its virtual addresses (network/IP): not dialled here' }),
  ports: z.record(PortKey, PortNumber).meta({
    description: "service port -> the port its workloads listen on (0: each workload's own mapping says)",
  }),
  appProtocols: z
    .record(PortKey, z.enum(['Http11', 'Http2', 'Grpc']))
    .optional()
    .meta({ description: 'per service port: Http2 and Grpc are spoken as HTTP/2 (h2c), Http11 as HTTP/1.1' }),
  subjectAltNames: z.array(z.string()).optional(),
  waypoint: NotYet('a service waypoint').optional(),
  weightedWaypoints: NotYet('service weightedWaypoints').optional(),
  ingressUseWaypoint: NotYet('service ingressUseWaypoint').optional(),
  loadBalancer: NotYet('a service loadBalancer (locality-aware routing, health policy)').optional(),
  ipFamilies: NotYet('a service ipFamilies').optional(),
});
/** A workload the file declares: an instance (its IP) of the services it names. */
export const LocalWorkload = strict({
  workloadIps: z
    .array(z.union([z.ipv4(), z.ipv6()]))
    .min(1)
    .meta({ description: 'its addresses; the first is dialled' }),
  uid: z.string().optional(),
  name: z.string().optional(),
  namespace: z.string().min(1),
  protocol: z
    .union([
      z.literal('TCP'),
      NotYetValues(['HBONE', 'LegacyIstioMtls'], 'a workload protocol other than TCP'),
    ])
    .optional(),
  networkMode: z.enum(['Standard', 'HostNetwork']).optional(),
  trustDomain: z.string().optional(),
  serviceAccount: z.string().optional(),
  network: z.string().optional(),
  workloadName: z.string().optional(),
  workloadType: z.string().optional(),
  canonicalName: z.string().optional(),
  canonicalRevision: z.string().optional(),
  hostname: z.string().optional(),
  node: z.string().optional(),
  clusterId: z.string().optional(),
  authorizationPolicies: z.array(z.string()).optional(),
  status: z
    .enum(['Healthy', 'Unhealthy'])
    .optional()
    .meta({ description: 'Healthy (the default) or Unhealthy: an unhealthy workload gets no requests' }),
  locality: strict({ region: z.string(), zone: z.string(), subzone: z.string() }).optional(),
  capacity: z.number().int().min(0).optional().meta({
    description: "its share of its services' requests, relative to the others (default 1; 0: none)",
  }),
  waypoint: NotYet('a workload waypoint').optional(),
  networkGateway: NotYet('a workload networkGateway').optional(),
  services: z.record(NamespacedHostname, z.record(PortKey, PortNumber)).meta({
    description:
      'the services it is an instance of (namespace/hostname), each with service port -> the port it listens on',
  }),
});
export const RouteBackend = z.union([
  strict({
    ai: z.lazy(() => AiBackend),
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  strict({
    host: HostPort,
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  strict({
    backend: z.string().min(1),
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  strict({
    dynamic: DynamicBackend,
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  strict({
    service: ServiceRef.meta({
      description:
        "a Service of the top-level services list: each request goes to one of the workloads that name it (weighted by capacity), at the port they map the Service's to",
    }),
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  strict({
    mcp: z.lazy(() => McpBackend),
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  strict({
    aws: AwsBackend,
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  strict({
    routeGroup: z.string().min(1).meta({
      description:
        "the name of a routeGroup: the group's routes are matched next, and the first that matches serves the request",
    }),
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional().meta({
      description: "not used: set policies on the group's routes",
    }),
  }),

  strict({
    internal: InternalBackend,
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  strict({
    invalid: z.null().meta({
      description:
        'a backend that does not exist: the requests it is picked for (by its weight) are answered 500. What a Kubernetes route gets for a backendRef that does not resolve',
    }),
    weight: z.number().int().min(0).optional(),
    policies: BackendPolicies.optional(),
  }),
  ...BACKEND_KINDS_NOT_BUILT.map((k) => refusedBackend(k, {})),
]);

export const NamedBackend = z.union([
  strict({ name: z.string().min(1), host: HostPort, policies: BackendPolicies.optional() }),
  strict({ name: z.string().min(1), dynamic: DynamicBackend, policies: BackendPolicies.optional() }),
  strict({ name: z.string().min(1), ai: z.lazy(() => AiBackend), policies: BackendPolicies.optional() }),
  strict({
    name: z.string().min(1),
    llmModels: z.lazy(() => LlmModelsBackend),
    policies: BackendPolicies.optional(),
  }),
  strict({ name: z.string().min(1), mcp: z.lazy(() => McpBackend), policies: BackendPolicies.optional() }),
  strict({ name: z.string().min(1), aws: AwsBackend, policies: BackendPolicies.optional() }),
  strict({ name: z.string().min(1), internal: InternalBackend, policies: BackendPolicies.optional() }),
  ...BACKEND_KINDS_NOT_BUILT.map((k) => refusedBackend(k, { name: z.unknown().optional() })),
]);

// ---------- routes, listeners, gateways ----------
const routeFields = {
  name: z.string().min(1).optional(),
  namespace: z.string().optional(),
  ruleName: z.string().optional(),
  hostnames: z.array(z.string().min(1)).optional(),
  matches: z.array(RouteMatch).optional(),
  policies: TrafficPolicies.optional(),
  backends: z.array(RouteBackend).optional(),
};
export const Route = strict(routeFields);
export const AttachedRoute = strict({
  ...routeFields,
  gateways: z.union([z.string().min(1), z.array(z.string().min(1))]).optional(),
});

// agentgateway's schema lists TLS 1.0 and 1.1; agentgateway refuses them when it loads, and so does gw.
const TlsVersion = z.union([
  z.enum(['TLS_V1_2', 'TLS_V1_3']),
  NotYetValues(['TLS_V1_0', 'TLS_V1_1'], 'TLS 1.0 and 1.1'),
]);
/** A name out of `names`; any other string is refused with the list (agentgateway's schema says string). */
const NamedString = <N extends string>(names: readonly N[], what: string) =>
  z
    .string()
    .refine((v) => (names as readonly string[]).includes(v), {
      message: `unknown ${what} (expected one of ${names.join(', ')})`,
    })
    .transform((v) => v as N);
const CipherSuites = z
  .array(NamedString(CIPHER_SUITE_NAMES, 'cipher suite'))
  .min(1)
  .nullable()
  .optional()
  .meta({
    description: "the cipher suites the handshake may use (default: the TLS library's own list)",
  });
const ServerKeyExchangeGroups = z
  .array(
    NamedString(
      Object.keys(KEY_EXCHANGE_GROUPS) as (keyof typeof KEY_EXCHANGE_GROUPS)[],
      'key exchange group',
    ),
  )
  .min(1)
  .nullable()
  .optional()
  .meta({ description: "key exchange groups, in order of preference (default: the TLS library's own list)" });
/**
 * An ALPN protocol id as a string ("h2") or, as agentgateway's schema has it, its bytes
 * ([104, 50]); printable ASCII either way, and given to the handshake as a string.
 */
const AlpnId = z
  .union([
    z.string().regex(/^[\x21-\x7e]{1,255}$/, 'an ALPN protocol id is 1 to 255 printable ASCII characters'),
    z
      .array(
        z
          .int()
          .min(0x21, 'an ALPN protocol id byte is printable ASCII (33 to 126)')
          .max(0x7e, 'an ALPN protocol id byte is printable ASCII (33 to 126)'),
      )
      .min(1)
      .max(255)
      .transform((b) => String.fromCharCode(...b)),
  ])
  .meta({ description: 'a protocol id such as h2 or http/1.1 (or its bytes)' });
const ServerAlpn = z.array(AlpnId).min(1).max(16).nullable().optional().meta({
  description:
    'the ALPN protocols offered to clients, in order of preference (default: h2, http/1.1 on HTTPS listeners; none on TLS listeners)',
});
// cert and key are optional in agentgateway's schema (spiffe, not in this build, supplies them). The
// version fields have two spellings (minTLSVersion, minTlsVersion); one of each may be set.
const ListenerTLS = strict({
  mode: z
    .union([z.literal('static'), NotYetValues(['dynamicCa'], 'tls mode dynamicCa')])
    .nullable()
    .optional()
    .meta({ description: 'static (the default): the certificate is cert and key' }),
  cert: FileOrInline.nullable().optional(),
  key: FileOrInline.nullable().optional(),
  root: FileOrInline.nullable().optional().meta({
    description:
      'the CA that verifies client certificates (mTLS): a client without one it signed is refused (unset: no client certificate asked)',
  }),
  spiffe: NotYet('spiffe listener certificates').optional(),
  cipherSuites: CipherSuites,
  minTLSVersion: TlsVersion.nullable().optional(),
  minTlsVersion: TlsVersion.nullable().optional(),
  maxTLSVersion: TlsVersion.nullable().optional(),
  maxTlsVersion: TlsVersion.nullable().optional(),
  keyExchangeGroups: ServerKeyExchangeGroups,
}).transform((t, ctx) => {
  for (const k of ['cert', 'key'] as const)
    if (t[k] === undefined || t[k] === null)
      ctx.issues.push({ code: 'custom', input: t, path: [k], message: `${k} is required` });
  for (const [a, b] of [
    ['minTLSVersion', 'minTlsVersion'],
    ['maxTLSVersion', 'maxTlsVersion'],
  ] as const)
    if (t[a] != null && t[b] != null)
      ctx.issues.push({ code: 'custom', input: t, path: [b], message: `set one of ${a} and ${b}` });
  const { minTlsVersion, maxTlsVersion, mode: _mode, spiffe: _spiffe, ...rest } = t;
  return defined({
    ...rest,
    minTLSVersion: t.minTLSVersion ?? minTlsVersion,
    maxTLSVersion: t.maxTLSVersion ?? maxTlsVersion,
  }) as {
    cert: z.output<typeof FileOrInline>;
    key: z.output<typeof FileOrInline>;
    minTLSVersion?: 'TLS_V1_2' | 'TLS_V1_3';
    maxTLSVersion?: 'TLS_V1_2' | 'TLS_V1_3';
    root?: z.output<typeof FileOrInline>;
    cipherSuites?: (typeof CIPHER_SUITE_NAMES)[number][];
    keyExchangeGroups?: (keyof typeof KEY_EXCHANGE_GROUPS)[];
  };
});
const Protocol = z.union([
  z.enum(['HTTP', 'HTTPS', 'TCP', 'TLS']),
  NotYetValues(['HBONE'], 'the HBONE listener protocol'),
]);
// TCP and TLS listeners' routes (tcp-routes.ts)
export const { TcpRoute, AttachedTcpRoute } = tcpRouteSchemas({
  backendTLS: BackendTLS,
  backendTunnel: BackendTunnel,
  hostPort: HostPort,
  serviceRef: ServiceRef,
  notYet: NotYet,
  cel: Cel,
});

export const Listener = strict({
  name: z.string().min(1).optional(),
  namespace: z.string().optional(),
  gatewayName: z.string().optional(),
  hostname: z.string().min(1).optional(),
  protocol: Protocol.optional(),
  tls: ListenerTLS.optional(),
  routes: z.array(Route).optional(),
  tcpRoutes: z.array(TcpRoute).optional(),
  policies: TrafficPolicies.optional(),
});

export const Bind = strict({
  port: Port.nullable().optional().meta({
    description:
      'the port listened on; an internal bind without one takes CONNECT tunnels to any port no other bind takes',
  }),
  address: z.string().min(1).optional().meta({ description: 'gw extension: address to bind (default all)' }),
  listeners: z.array(Listener),
  mode: z.enum(['standard', 'internal']).optional().meta({
    description:
      'standard (the default): the bind listens on its port; internal: it opens no socket and is reached only through CONNECT tunnels (frontendPolicies.connect mode tunnel, tunnelProtocol connect) to its port, or, without a port, to any port no other bind takes',
  }),
  tunnelProtocol: z
    .union([
      z.enum(['direct', 'connect']),
      NotYetValues(['hboneWaypoint', 'hboneGateway', 'proxy'], 'tunnelProtocol hbone or proxy'),
    ])
    .optional()
    .meta({
      description:
        'direct (the default): clients connect to the port itself; connect: the port takes HTTP CONNECT tunnels only (other requests get 405), each a new connection to the bind on its port, as frontendPolicies.connect mode tunnel does',
    }),
}).superRefine((b, ctx) => {
  if ((b.port === undefined || b.port === null) && b.mode !== 'internal')
    ctx.addIssue({
      code: 'custom',
      path: ['port'],
      message: 'port is required (only an internal bind goes without one)',
    });
});

/**
 * The policies that run in agentgateway's gateway phase (`policies[].phase: gateway`, GwPolicy
 * `phase: PreRouting`): before a route is chosen, on every request to a listener.
 */
/**
 * What an expression of the gateway phase cannot read on the request's way in: no route, backend,
 * LLM, MCP or A2A call is known before a route is chosen (a response transformation runs after it).
 */
export const GATEWAY_PHASE_UNKNOWN = ['route', 'backend', 'llm', 'llmRequest', 'mcp', 'a2a'] as const;
/** Whether an expression at `path` runs on the request's way in (not a response transformation). */
export const gatewayPhaseReadsRequest = (path: readonly (string | number)[]): boolean =>
  !path.some(
    (k, i) => k === 'response' && (path[i - 1] === 'transformations' || path[i - 1] === 'transformation'),
  );
export const GATEWAY_PHASE_WHY = 'the gateway phase runs before a route is chosen';
export const GATEWAY_PHASE_POLICY_NAMES = [
  'cors',
  'oidc',
  'jwtAuth',
  'basicAuth',
  'apiKey',
  'extAuthz',
  'authorization',
  'extProc',
  'transformations',
] as const;
/**
 * agentgateway's policies written on a gateway or a gateway's listener itself (LocalGatewayPolicy):
 * each is what `policies.<name>` there means, for every route attached to it.
 */
export const GATEWAY_POLICY_NAMES = [
  'oidc',
  'jwtAuth',
  'authorization',
  'extAuthz',
  'extProc',
  'cors',
  'basicAuth',
  'apiKey',
] as const;
const GatewayPolicyFields = (({
  oidc,
  jwtAuth,
  authorization,
  extAuthz,
  extProc,
  cors,
  basicAuth,
  apiKey,
}) => ({
  oidc,
  jwtAuth,
  authorization,
  extAuthz,
  extProc,
  cors,
  basicAuth,
  apiKey,
}))(TrafficPolicies.shape) satisfies Record<(typeof GATEWAY_POLICY_NAMES)[number], z.ZodType>;
export const Gateway = strict({
  port: Port.optional(),
  address: z.string().min(1).optional(),
  bindAddress: z.union([z.ipv4(), z.ipv6()]).nullable().optional().meta({
    description:
      'the IP address to listen on (agentgateway’s name of address): 127.0.0.1 or ::1 for loopback; unset: every interface',
  }),
  protocol: Protocol.optional(),
  tls: ListenerTLS.optional(),
  listeners: z
    .array(
      Listener.omit({ routes: true, tcpRoutes: true }).extend({
        transformations: TransformationsPolicy.optional(),
        ...GatewayPolicyFields,
      }),
    )
    .optional(),
  policies: TrafficPolicies.optional(),
  ...GatewayPolicyFields,
  // agentgateway's gateway-level policy field (only without listeners: then it is each listener's)
  transformations: TransformationsPolicy.optional(),
});

/**
 * agentgateway's SimpleLocalBackendPolicies on an OTLP collector (tracing, accessLog.otlp): the TLS of
 * the export connection (a private CA, a client certificate, the name checked), a key sent in a header
 * and headers set on each export; the others are refused by name.
 */
const collectorPolicies = (what: string) =>
  strict({
    backendTLS: BackendTLS.optional().meta({
      description: `TLS to ${what}: the export goes over TLS (https), with this CA, client certificate and name check`,
    }),
    backendAuth: z
      .union([KeyAuth, ...backendAuthRefused([], ` on ${what}`)])
      .optional()
      .meta({
        description: `a key sent with every export: the Authorization header, Bearer prefix (location.header changes both)`,
      }),
    requestHeaderModifier: strict({
      add: HeaderModifier.shape.add,
      set: HeaderModifier.shape.set,
      remove: NotYet(`requestHeaderModifier.remove on ${what}`).optional(),
    })
      .optional()
      .meta({ description: 'headers sent with every export' }),
    transformations: NotYet(`transformations on ${what}`).optional(),
    http: NotYet(`http on ${what}`).optional(),
    tcp: NotYet(`tcp on ${what}`).optional(),
    backendTunnel: NotYet(`backendTunnel on ${what}`).optional(),
  });
export type CollectorPolicies = z.output<ReturnType<typeof collectorPolicies>>;
const CollectorBackend = z.string().min(1).meta({
  description: 'a host backend of the top-level backends list (its backendTLS and backendAuth apply)',
});

const AccessLog = strict({
  preset: z.enum(['otel']).optional().meta({
    description:
      "the record's field names: otel, OpenTelemetry's semantic conventions (client.address, http.request.method, server.address and server.port, url.scheme, url.path, url.query, network.protocol.version, http.response.status_code), for the log and its otlp export; unset: gw's (src.addr, http.method, http.host, http.path, http.version, http.status). add and remove name the preset's fields",
  }),
  filter: Cel.optional(),
  add: z.record(z.string().min(1).max(256), Cel).optional(),
  remove: CrdAccessLog.shape.attributes.unwrap().shape.remove,
  otlp: strict({
    host: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'the OTLP collector: host:port (http:// is assumed) or a URL (or set backend)' }),
    service: ServiceRef.optional().meta({
      description:
        'the collector as a Service: its hostname and port, resolved by DNS (as agentgateway does)',
    }),
    backend: CollectorBackend.optional(),
    policies: collectorPolicies('the accessLog otlp collector').nullable().optional(),
    filter: Cel.nullable().optional().meta({
      description: 'CEL: only requests for which it is true are exported (unset: the access log filter)',
    }),
    fields: strict({
      remove: z.array(z.string().min(1)).optional(),
      add: z.record(z.string().min(1), Cel).optional(),
    })
      .nullable()
      .optional()
      .meta({ description: "the records' fields to remove and to add by CEL (unset: the access log's)" }),
    protocol: z.enum(['grpc', 'http']).optional().meta({ description: 'OTLP over grpc (default) or http' }),
    path: z.string().min(1).optional().meta({ description: 'the OTLP/HTTP path (default /v1/logs)' }),
  })
    .optional()
    .meta({
      description:
        'each access log record also sent as an OpenTelemetry log record to an OTLP collector, in batches',
    }),
  database: NotYet('accessLog database').optional(),
});
const Observability = observabilitySchemas(
  collectorPolicies('the tracing collector'),
  CollectorBackend,
  ServiceRef,
);
/** networkExtAuthz, and agentgateway's frontend policies this build does not have (refused by name). */
const FRONTEND_NOT_BUILT = {
  networkExtAuthz: ExtAuthz.optional().meta({
    description:
      'an ext_authz gRPC Check of each new connection (its client address, after any PROXY header, and the address it reached) before any byte of it is read: OK lets it on, anything else closes it; failureMode decides when the service does not answer',
  }),
};
/** What an HTTP CONNECT request (a client asking for a tunnel) gets. */
const ConnectPolicy = strict({
  mode: z.enum(['deny', 'route', 'tunnel']).meta({
    description:
      "deny (the default without this policy): 405; route: the CONNECT is routed by its authority like any request, its route policies run, and its backend gets a TCP connection (host or unix backends: their address; dynamic: the authority asked for) that the client's bytes flow over after a 200; other kinds refuse it; tunnel: a 200, then the client's bytes are a new connection to the gateway's own bind on the authority's port (one listening on all addresses, else an internal bind for that port, else an internal bind without a port), whose listeners and routes serve it (no such bind: 404; no port: 400; a CONNECT inside the tunnel: 405); other requests are served as usual",
  }),
}).meta({ description: 'how HTTP CONNECT requests (HTTP/1.1, and HTTP/2 without :protocol) are handled' });
/** The PROXY protocol header downstream connections start with (an L4 load balancer in front). */
const ProxyProtocol = strict({
  version: z.enum(['v1', 'v2', 'all']).optional().meta({ description: 'v1, v2 (default) or all' }),
  mode: z.enum(['strict', 'optional']).optional().meta({
    description:
      'strict (default): a connection without the header is closed; optional: it is taken as it is',
  }),
}).meta({
  description:
    "the client's address from a PROXY header before TLS or HTTP: source.*, networkAuthorization and the logs see it",
});
const H2_WINDOW = z.number().int().min(0).max(2_147_483_647).nullable().optional();

export const FrontendPolicies = strict({
  accessLog: AccessLog.optional(),
  logging: AccessLog.optional().meta({ description: 'another name of accessLog (set one)' }),
  tracing: Observability.TracingPolicy.optional().meta({
    description: 'OpenTelemetry spans of each sampled request, exported over OTLP',
  }),
  metrics: strict({
    fields: strict({ add: z.record(z.string().min(1), Cel).optional() }).optional(),
  })
    .optional()
    .meta({
      description:
        'gw addition (what GwPolicy frontend.metrics translates to): labels added by CEL to the request metrics, as config.metrics.fields.add, which wins for a label both set',
    }),
  networkAuthorization: Authorization.optional(),
  proxyProtocol: ProxyProtocol.optional(),
  proxy: ProxyProtocol.optional().meta({ description: 'another name of proxyProtocol (set one)' }),
  ...FRONTEND_NOT_BUILT,
  connect: ConnectPolicy.optional(),
  // the handshake settings of every TLS listener that does not set its own
  tls: strict({
    minVersion: TlsVersion.nullable().optional(),
    maxVersion: TlsVersion.nullable().optional(),
    cipherSuites: CipherSuites,
    keyExchangeGroups: ServerKeyExchangeGroups,
    handshakeTimeout: Duration.nullable().optional().meta({
      description:
        'how long a client has to finish the TLS handshake before its connection is closed (default: http.firstRequestTimeout, 60s)',
    }),
    alpn: ServerAlpn,
  }).optional(),
  tcp: strict({
    keepalives: Keepalives.optional().meta({
      description:
        'TCP keepalive probes on each client connection: after time idle (default 180s), every interval (default 180s), closed after retries unanswered (default 9)',
    }),
    maxConnections: z.number().int().min(1).max(1_000_000).optional().meta({
      description:
        'gw extension: open connections per bind across the workers of a replica; more are closed at once (default 10000)',
    }),
  }).optional(),
  http: strict({
    requestHeadersTimeout: Duration.optional().meta({
      description:
        'gw extension: time from the first byte of an HTTP/1 request (of a new connection: from its start) to the end of its headers; answered with 408 (default 10s, 0s: off)',
    }),
    firstRequestTimeout: Duration.optional().meta({
      description:
        'gw extension: how long a new connection may send nothing (plain text), or an HTTP/2 connection open no stream, before it is closed; TLS handshakes get the same time (default 60s, 0s: off)',
    }),
    requestBodyIdleTimeout: Duration.optional().meta({
      description:
        'gw extension: how long a request body may stall on a route without timeout.requestTimeout; answered with 408 (default 60s, 0s: off)',
    }),
    maxConcurrentRequests: z.number().int().min(1).max(4_294_967_295).nullable().optional().meta({
      description:
        'requests in flight per bind across the workers of a replica (HTTP/1 requests and HTTP/2 streams, each until its response is sent); one more is answered 503 at once (gRPC: status 14); unset: no limit',
    }),
    http2MaxConcurrentStreams: z.number().int().min(1).max(2_147_483_647).optional().meta({
      description: 'gw extension: SETTINGS_MAX_CONCURRENT_STREAMS advertised to HTTP/2 clients (default 100)',
    }),
    maxBufferSize: ByteSize.optional(),
    http1IdleTimeout: Duration.optional(),
    http1MaxHeaders: z.number().int().min(1).max(10_000).nullable().optional().meta({
      description: 'the most headers an HTTP/1 request may have; more is answered 431 (unset: 2000)',
    }),
    http2KeepaliveInterval: Duration.optional().meta({
      description: 'a PING to each HTTP/2 client this often (unset: none)',
    }),
    http2KeepaliveTimeout: Duration.optional().meta({
      description: 'how long a PING may go unanswered before the connection is closed (default 20s)',
    }),
    mergeSlashes: z
      .boolean()
      .optional()
      .meta({ description: 'merge runs of / in request paths before routing (default true)' }),
    pathWithEscapedSlashes: z
      .enum(['KeepUnchanged', 'RejectRequest', 'UnescapeAndForward'])
      .optional()
      .meta({ description: 'what to do with %2F and %5C in request paths (default KeepUnchanged)' }),
    trustedProxies: z.array(z.string().min(1)).max(64).optional().meta({
      description: 'peers (IP or CIDR) whose X-Forwarded-For/-Proto are kept; from others they are replaced',
    }),
    maxConnectionDuration: Duration.nullable().optional().meta({
      description:
        'how long a client connection may live: then it is closed once its request in flight is answered (HTTP/1; an upgraded one, WebSocket or CONNECT, once it ends) or told GOAWAY (HTTP/2); unset: no limit',
    }),
    http2WindowSize: H2_WINDOW.meta({
      description: "each stream's receive window, SETTINGS_INITIAL_WINDOW_SIZE (default 65535)",
    }),
    http2ConnectionWindowSize: H2_WINDOW.meta({
      description: "each HTTP/2 connection's receive window across its streams (default 65535)",
    }),
    http2FrameSize: z.number().int().min(16_384).max(16_777_215).nullable().optional().meta({
      description:
        'the largest frame payload HTTP/2 clients may send, SETTINGS_MAX_FRAME_SIZE (default 16384)',
    }),
    http2MaxHeaderSize: z.number().int().min(0).max(4_294_967_295).nullable().optional().meta({
      description: 'the largest header list an HTTP/2 client may send, SETTINGS_MAX_HEADER_LIST_SIZE',
    }),
    http1HeaderCase: z.enum(['lowercase', 'preserve']).optional().meta({
      description:
        "lowercase (default): header names go upstream in lowercase; preserve: an HTTP/1 client's request header names go to an HTTP/1 backend as the client spelled them, and the backend's response header names back to the client as the backend spelled them (for peers that read names case-sensitively); Host, names a policy adds, and HTTP/2 on either side are lowercase",
    }),
  }).optional(),
});

// agentgateway's object forms name a gateway (and listener), a route (<namespace>/<name>[/<rule>]) or a
// backend; they load as gw's names.
const GatewayTarget = strict({
  gatewayName: z.string().min(1),
  gatewayNamespace: z.string().meta({ description: 'not read: standalone gateways have no namespace' }),
  listenerName: z.string().min(1).nullable().optional(),
  port: z.number().int().min(0).max(65535).nullable().optional().meta({
    description: "the gateway's listeners on this port (instead of listenerName)",
  }),
});
const RouteTarget = strict({
  name: z.string().min(1),
  namespace: z.string().min(1),
  ruleName: z.string().min(1).nullable().optional(),
  kind: z.string().nullable().optional(),
});
const BackendTargetRef = z.union([
  strict({
    backend: strict({
      name: z.string().min(1),
      namespace: z.string().meta({ description: 'not read: backends are named by name alone' }),
      section: z.string().min(1).nullable().optional().meta({
        description:
          "one part of the backend: an mcp backend's target or an ai backend's provider, by name (its own policies win over the policy's)",
      }),
    }),
  }),
  strict({
    service: strict({
      hostname: z.string().min(1),
      namespace: z.string().min(1),
      port: z.number().int().min(1).max(65535).nullable().optional().meta({
        description: 'the Service port whose calls take the policy (unset: every port)',
      }),
    }).meta({ description: 'a Service of the top-level services list, as route backends name it' }),
  }),
]);
/**
 * The backend name a policy targeting a backend is looked up by: a named backend's name; for a
 * Service, `<namespace>/<hostname>:<port>` (what a route's service backend is named) or, for every
 * port, `<namespace>/<hostname>`.
 */
function backendTargetName(b: string | z.output<typeof BackendTargetRef>): string {
  if (typeof b === 'string') return b;
  if ('backend' in b) return b.backend.name;
  const { hostname, namespace, port } = b.service;
  return `${namespace}/${hostname}${port != null ? `:${port}` : ''}`;
}
export const PolicyTarget = z.union([
  strict({ gateway: z.union([z.string().min(1), GatewayTarget]) }).transform(({ gateway: g }, ctx) => {
    if (typeof g === 'string') return { gateway: g };
    if (g.listenerName && g.port != null) {
      ctx.issues.push({
        code: 'custom',
        input: g,
        message: 'set one of listenerName and port',
        path: ['gateway', 'port'],
      });
      return z.NEVER;
    }
    if (g.listenerName) return { listener: `${g.gatewayName}/${g.listenerName}` };
    // the loader finds the gateway's listeners on the port (gatewayPort: <gateway>:<port>)
    if (g.port != null) return { gatewayPort: `${g.gatewayName}:${g.port}` };
    return { gateway: g.gatewayName };
  }),
  strict({ listener: z.string().min(1) }),
  strict({ route: z.union([z.string().min(1), RouteTarget]) }).transform(({ route: r }) => ({
    route: typeof r === 'string' ? r : [r.namespace, r.name, ...(r.ruleName ? [r.ruleName] : [])].join('/'),
  })),
  strict({ backend: z.union([z.string().min(1), BackendTargetRef]) }).transform(({ backend: b }) => {
    const section = typeof b === 'object' && 'backend' in b ? b.backend.section : undefined;
    return { backend: backendTargetName(b), ...(section ? { section } : {}) };
  }),
  strict({ listenerSet: NotYet('a policy target by listenerSet') }).transform((v) => v as never),
]);
export const TargetedPolicy = strict({
  name: z.union([z.string(), strict({ name: z.string(), namespace: z.string().optional() })]).optional(),
  target: PolicyTarget,
  phase: z
    .enum(['route', 'gateway'])
    .optional()
    .meta({
      description: `route (the default): the policy runs once the route is selected, merged with the route's own. gateway: it runs before a route is chosen, on every request to the gateway, listener or port it targets, even one no route matches, and what it changes (transformations, extProc) can change the route chosen; it runs in addition to the route's policies, not merged with them. The gateway phase takes ${GATEWAY_PHASE_POLICY_NAMES.join(', ')}`,
    }),
  inheritance: z.enum(['default', 'override']).optional().meta({
    description:
      "gw extension (GwPolicy strategy.inheritance): default: a more specific policy (a listener's over its gateway's, a route's, a rule's, the route's own) wins a field both set; override: the fields this policy sets keep its value for everything below its target (an accumulating field, authorization, keeps the rules gathered down to it). Gateway, listener and route targets",
  }),
  policy: TrafficPolicies,
});

/**
 * A level filter the logger takes (`info`, `info,proxy=debug`), refused here rather than at start.
 * (A new schema for each use, so the published JSON Schema spells each out rather than sharing one.)
 */
const levelFilter = () =>
  z
    .string()
    .min(1)
    .superRefine((v, ctx) => {
      const problem = logLevelProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });
export const LogLevel = z.union([levelFilter(), z.array(levelFilter())]);

/** agentgateway's startup settings this build has no counterpart for, refused by name. */
const CONFIG_NOT_BUILT_KEYS = [
  'localXdsPath',
  'database',
  'storage',
  'caAddress',
  'caAuthToken',
  'xdsAddress',
  'xdsAuthToken',
  'spiffe',
  'namespace',
  'gateway',
  'trustDomain',
  'additionalTrustDomains',
  'skipValidateTrustDomain',
  'serviceAccount',
  'clusterId',
  'network',
  'standardAttributes',
  'hbone',
] as const;
const CONFIG_NOT_BUILT = Object.fromEntries(
  CONFIG_NOT_BUILT_KEYS.map((k) => [k, NotYet(`config.${k}`).optional()]),
) as { [K in (typeof CONFIG_NOT_BUILT_KEYS)[number]]: z.ZodOptional<ReturnType<typeof NotYet>> };
export const GlobalConfig = strict({
  adminAddr: Address.optional(),
  statsAddr: Address.optional(),
  readinessAddr: Address.optional(),
  sensitiveHeaders: z.array(z.string()).optional(),
  workerThreads: z
    .union([z.literal('auto'), z.number().int().min(1).max(256), z.string().regex(/^[0-9]+$/)])
    .optional(),
  connectionTerminationDeadline: Duration.optional(),
  connectionMinTerminationDeadline: Duration.optional(),
  logging: strict({
    level: LogLevel.optional(),
    format: z.enum(['text', 'json']).optional(),
    filter: Observability.GlobalLoggingFilter,
    fields: Observability.GlobalLoggingFields,
    database: NotYet('config.logging.database').optional(),
  }).optional(),
  ...CONFIG_NOT_BUILT,
  customFunctions: z.string().optional().meta({
    description:
      'CEL functions every expression of this config may call, as a block of definitions: `isInternal() { request.headers["x-env"] == "internal" }`, or a method, `this.joined(prefix, parts...) { prefix + this + parts.join("") }` (`this` is the value it is called on; `parts...` collects the remaining arguments as a list). A body sees its parameters and the calling expression\'s variables (request, jwt, llm, …); arguments are evaluated once. A function may call another, but not itself. A line starting with # is a comment. Bodies are compiled at load: an error in one is a config error naming its line',
  }),
  session: strict({
    key: z.string().min(1).meta({
      description:
        'the secret MCP session ids and oidc cookies are sealed with (AES-256-GCM, the key derived from it), e.g. `openssl rand -hex 32`; replicas that share it serve each other’s sessions. Read at start; SESSION_KEY when unset',
    }),
  })
    .nullable()
    .optional()
    .meta({ description: 'how sessions are sealed' }),
  mcp: strict({
    sessionTtl: Duration.nullable().optional().meta({
      description:
        'how long an MCP session lasts from its initialize: later requests with its id are answered 404, and the client starts a new session (default: no limit)',
    }),
  })
    .nullable()
    .optional()
    .meta({ description: 'MCP gateway settings' }),
  enableIpv6: z.boolean().nullable().optional().meta({
    description:
      'resolve backend names to IPv6 addresses too (default true); false: IPv4 only. Listeners bind where their address says',
  }),
  dns: strict({
    lookupFamily: z.enum(['All', 'Auto', 'V4Preferred', 'V4Only', 'V6Only']).nullable().optional().meta({
      description:
        'the address families a backend name resolves to: Auto (default: both, or IPv4 only when enableIpv6 is false), All, V4Preferred (IPv4 first), V4Only, V6Only',
    }),
    edns0: NotYet('config.dns.edns0 (gw resolves with the system resolver, getaddrinfo)').optional(),
  })
    .nullable()
    .optional()
    .meta({ description: 'how backend names are resolved' }),
  modelCatalog: z.array(ModelCatalogSource).nullable().optional().meta({
    description:
      'what models cost (per million tokens, by provider and model), from files or inline, merged in order (a later model entry replaces an earlier one): each LLM request is priced (llm.cost)',
  }),
  tracing: Observability.GlobalTracing.optional().meta({
    description: 'the older, global form of frontendPolicies.tracing (set one)',
  }),
  metrics: Observability.Metrics.optional(),
  histograms: z
    .union([
      z.literal('classic'),
      NotYetValues(['native', 'both'], 'config.histograms native (gw serves the Prometheus text format)'),
    ])
    .optional()
    .meta({ description: 'classic: the histograms of the Prometheus text format (the default)' }),
  backend: strict({
    connectTimeout: Duration.optional(),
    poolIdleTimeout: Duration.optional(),
    poolMaxSize: z.number().int().min(1).nullable().optional().meta({
      description:
        'connections to each backend endpoint, shared by the workers of a replica; requests beyond wait for one (default 1024, null: unbounded)',
    }),
    keepalives: Keepalives.optional(),
  }).optional(),
});

// ---------- LLM gateway (agentgateway's LocalLLMConfig) ----------
// Every field agentgateway accepts is accepted here; those this build does not implement are refused
// by name (NotYet), so a file never silently means less than it says.
const LlmHeaderModifier = HeaderModifier;
const LlmFieldMap = z.record(z.string().min(1), z.unknown());
const LlmCelMap = z.record(z.string().min(1), Cel);
const LlmApiKey = z.union([z.string().min(1), strict({ file: z.string().min(1) })]);

export const LLM_PROVIDER_FORMATS = [
  'completions',
  'messages',
  'responses',
  'embeddings',
  'anthropicTokenCount',
  'generateContent',
  'geminiCountTokens',
  'realtime',
  'rerank',
] as const;

export const LlmParams = strict({
  model: z
    .string()
    .min(1)
    .optional()
    .meta({ description: 'The model sent to the provider instead of the requested one' }),
  apiKey: LlmApiKey.optional().meta({
    description: "The provider's API key, inline or {file}; unset: the client's own credential is passed on",
  }),
  awsRegion: z.string().min(1).optional(),
  vertexRegion: z.string().min(1).optional(),
  vertexProject: z.string().min(1).optional(),
  azureResourceName: z.string().min(1).optional(),
  azureResourceType: z.enum(['openAI', 'foundry', 'aiServices']).optional(),
  azureApiVersion: z.string().min(1).optional(),
  azureProjectName: z.string().min(1).optional(),
  baseUrl: z
    .string()
    .regex(
      /^https?:\/\/[^/?#@]+(\/[^?#]*)?$/,
      'expected http(s)://host[:port][/path], without query or fragment',
    )
    .optional()
    .meta({ description: 'Where the provider is: sets the host, port, TLS (https) and path prefix' }),
  hostOverride: z
    .string()
    .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(:[0-9]{1,5})?$/, 'expected "<host>:<port>"')
    .optional(),
  pathOverride: z.string().startsWith('/').optional(),
  pathPrefix: z.string().optional(),
  tokenize: z.boolean().optional(),
});

const LlmCustomProvider = strict({
  model: z.string().min(1).optional(),
  providerOverride: z.string().min(1).optional(),
  formats: z
    .array(strict({ type: z.enum(LLM_PROVIDER_FORMATS), path: z.string().startsWith('/').optional() }))
    .min(1),
});

/** Provider names agentgateway's standalone config knows (built-ins, then named presets). */
export const LLM_PROVIDER_NAMES = [
  'openai',
  'openAI',
  'gemini',
  'vertex',
  'anthropic',
  'bedrock',
  'azure',
  'copilot',
  'cohere',
  'ollama',
  'baseten',
  'cerebras',
  'deepinfra',
  'deepseek',
  'groq',
  'huggingface',
  'mistral',
  'openrouter',
  'togetherai',
  'xai',
  'fireworks',
] as const;
/** The providers this build serves; the others are refused by name when a file uses them. */
export const LLM_SUPPORTED_PROVIDERS: readonly string[] = [
  'openai',
  'openAI',
  'azure',
  'mistral',
  'anthropic',
  'bedrock',
  'gemini',
  'vertex',
  'copilot',
  ...Object.keys(LLM_PRESETS),
];

export const LlmProvider = z.union([
  z.string().superRefine((v, ctx) => {
    if (LLM_SUPPORTED_PROVIDERS.includes(v)) return;
    ctx.addIssue({
      code: 'custom',
      message: (LLM_PROVIDER_NAMES as readonly string[]).includes(v)
        ? `provider ${v} is not supported by this build of gw yet (supported: ${LLM_SUPPORTED_PROVIDERS.join(', ')}, custom, reference)`
        : `unknown provider ${JSON.stringify(v)} (expected one of ${LLM_PROVIDER_NAMES.join(', ')}, {custom: …} or {reference: …})`,
    });
  }),
  strict({ reference: z.string().min(1) }),
  strict({ custom: LlmCustomProvider }),
]);

/** agentgateway's PromptCachingConfig: where the gateway adds cache breakpoints (Anthropic, Bedrock). */
export const PromptCaching = strict({
  cacheSystem: z
    .boolean()
    .optional()
    .meta({ description: 'mark the end of the system prompt (default true)' }),
  cacheMessages: z.boolean().optional().meta({
    description: "mark the end of the conversation's history, the second-to-last message (default true)",
  }),
  cacheTools: z.boolean().optional().meta({ description: 'mark the end of the tools (default false)' }),
  minTokens: z.number().int().min(0).nullable().optional().meta({
    description: 'the estimated size a system prompt needs before it is marked (default 1024; null: any)',
  }),
  cacheMessageOffset: z
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: 'how many messages further back the history marker goes (default 0)' }),
});

const llmConnection = {
  requestHeaders: LlmHeaderModifier.optional(),
  responseHeaders: LlmHeaderModifier.optional(),
  backendTLS: BackendTLS.optional(),
  tls: BackendTLS.optional().meta({ description: 'the same as backendTLS' }),
  auth: BackendAuth.optional().meta({
    description:
      "the provider's credential as a backendAuth form: {key} is params.apiKey, sent the provider's way; the others (gcp, azure, aws, oauthTokenExchange, jwtSign, passthrough, a key with a location) replace it",
  }),
  health: BackendHealth.optional().meta({
    description:
      "outlier detection: unhealthy answers eject the model for a while, and a virtual model's weighted or failover routing passes it by",
  }),
  backendTunnel: BackendTunnel.optional(),
  promptCaching: PromptCaching.optional(),
};
const llmBody = {
  defaults: LlmFieldMap.optional().meta({ description: 'request fields set when the request has none' }),
  overrides: LlmFieldMap.optional().meta({ description: "request fields set, replacing the request's" }),
  transformation: LlmCelMap.optional().meta({
    description:
      'request fields set from CEL over llmRequest, e.g. model: \'llmRequest.model.stripPrefix("openai/")\'',
  }),
};

// ---------- prompt guards and enrichment (agentgateway's PromptGuard and PromptEnrichment) ----------
export const GUARD_BUILTINS = ['ssn', 'creditCard', 'phoneNumber', 'email', 'caSin'] as const;
export const GuardRegexRule = z.union([
  strict({ builtin: z.enum(GUARD_BUILTINS) }),
  strict({
    pattern: z.string().min(1).meta({ description: 'a JavaScript regular expression' }),
    name: z
      .string()
      .min(1)
      .optional()
      .meta({ description: 'how logs, traces and metrics name a match (default: the pattern)' }),
  }),
]);
export const GuardRegex = strict({
  action: z.enum(['mask', 'reject', 'audit']).optional().meta({
    description:
      'mask (default) replaces each match, reject answers the rejection, audit records the would-be action and passes content on',
  }),
  rules: z.array(GuardRegexRule).min(1),
});
export const GuardRejection = strict({
  body: Bytes.optional().meta({
    description: "the message in the client's error object (default: a generic inappropriate-content text)",
  }),
  status: z.number().int().min(200).max(599).optional().meta({ description: 'default 403' }),
  headers: HeaderModifier.optional(),
});
export const GuardContentScope = z.enum(['systemPrompt', 'messages', 'toolOutput', 'toolInput']);
/** The guard kinds of a request guard; one of them per entry. */
export const REQUEST_GUARD_KINDS = [
  'regex',
  'webhook',
  'openAIModeration',
  'bedrockGuardrails',
  'googleModelArmor',
  'azureContentSafety',
  'promptInjection',
] as const;
const oneGuardKind =
  (kinds: readonly string[]) =>
  (g: Record<string, unknown>, ctx: z.core.$RefinementCtx): void => {
    const set = kinds.filter((k) => g[k] !== undefined);
    if (set.length !== 1)
      ctx.addIssue({
        code: 'custom',
        message: `set exactly one of ${kinds.join(', ')}${set.length > 1 ? ` (set: ${set.join(', ')})` : ''}`,
      });
  };
/** A webhook guard's `target`: agentgateway's SimpleLocalBackend, a `host` or a named host backend. */
/** agentgateway's policies on a webhook target: how the calls to it connect. */
const WebhookTargetPolicies = strict({
  backendTLS: BackendTLS.optional().meta({ description: 'TLS to the webhook: the call goes over HTTPS' }),
  requestHeaderModifier: HeaderModifier.optional().meta({
    description: 'headers added, set or removed on each call to the webhook',
  }),
  http: BackendHttp.optional().meta({
    description:
      'version HTTP2: the calls over HTTP/2; requestTimeout: how long a verdict may take (default 10s)',
  }),
  tcp: BackendTcp.optional(),
  backendAuth: NotYet('backendAuth on a webhook target (set a header from CEL in headers)').optional(),
  backendTunnel: NotYet('backendTunnel on a webhook target').optional(),
  transformations: NotYet('transformations on a webhook target').optional(),
})
  .nullable()
  .optional()
  .meta({
    description:
      'the calls’ connection (agentgateway’s): backendTLS, requestHeaderModifier, http and tcp; over a named backend’s, field by field',
  });
const GuardWebhookTarget = z.union([
  strict({
    host: z.string().min(1).meta({
      description:
        'host:port (or host, port 80) of the webhook, over HTTP; https://host[:port] calls it over TLS with the system’s roots (port 443)',
    }),
    policies: WebhookTargetPolicies,
  }),
  strict({
    service: ServiceRef.meta({
      description:
        'a Service of the top-level services list: called by its hostname, each connection dialled at the next of its workloads',
    }),
    policies: WebhookTargetPolicies,
  }),
  strict({
    backend: z.string().min(1).meta({
      description:
        'the name of a host backend in the top-level backends list: its address, and its backendTLS (the webhook is then called over HTTPS) and requestHeaderModifier',
    }),
    policies: WebhookTargetPolicies,
  }),
]);
/**
 * agentgateway's Webhook guard (the guardrail webhook contract of @gw/guardrail-sdk). `action` and
 * `timeout` are gw additions: agentgateway always enforces a verdict and waits up to 10 s.
 */
export const GuardWebhook = strict({
  target: GuardWebhookTarget,
  headers: z.record(z.string().min(1), Cel).optional().meta({
    description:
      'headers set on the webhook call, each a CEL expression on the original request (request.*, jwt.*, llmRequest.* in the request phase); keys may be :path, :method or :authority; an expression that cannot be evaluated leaves its header out',
  }),
  forwardHeaderMatches: z
    .array(strict({ name: HeaderName, value: StringMatch }))
    .optional()
    .meta({
      description: "the client's request headers to forward to the webhook: those matching any entry",
    }),
  failureMode: z.enum(['failClosed', 'failOpen']).optional().meta({
    description:
      'when the webhook fails (unreachable, timeout, an answer that is not a verdict): failClosed (default) answers the client an error, failOpen passes the content on',
  }),
  action: z
    .enum(['reject', 'enforce', 'audit'])
    .transform((a) => (a === 'audit' ? ('audit' as const) : ('enforce' as const)))
    .optional()
    .meta({
      description:
        'reject (default; enforce, gw’s earlier name) applies the verdict; audit calls the webhook, records the verdict and never applies it',
    }),
  timeout: Duration.optional().meta({
    description: 'gw addition: how long to wait for a verdict (default 10s)',
  }),
  messageFormat: z.enum(['guardrail', 'raw']).optional().meta({
    description:
      "guardrail (default): the guardrail webhook contract; raw (request guards only): the request's own messages, in the client's format, are posted as {messages, model} and a {messages} answer replaces them (absent or null: unchanged), tool calls and cache markers kept",
  }),
  path: z
    .string()
    .regex(/^\//, { message: 'expected a path starting with /' })
    .optional()
    .meta({ description: 'the path called (default /request or /response); a :path header expression wins' }),
  minSizeBytes: z.number().int().min(0).optional().meta({
    description:
      'the webhook is called only when what it would be sent is at least this many bytes (default 0: always)',
  }),
});
/** gw addition on the cloud guards: where tests and local stand-ins are reached instead. */
const GuardHostOverride = LlmParams.shape.hostOverride.meta({
  description:
    "gw addition: host:port called over plain HTTP instead of the service's own host (a local stand-in or a sidecar)",
});
/**
 * agentgateway's SimpleLocalBackendPolicies on a call to a guard service: the credential (`auth`, by
 * service), the TLS of the connection (a private CA, a client certificate; with `hostOverride`, the
 * stand-in is then called over HTTPS), headers set on the call, and the connection's HTTP version,
 * timeouts and keepalives; the others are refused by name.
 */
const guardServicePolicies = <A extends z.ZodType>(auth: A) =>
  strict({
    backendAuth: auth.optional(),
    requestHeaderModifier: HeaderModifier.optional().meta({
      description: 'headers added, set or removed on each call to the service (before it is signed)',
    }),
    transformations: NotYet('transformations on a guard service').optional(),
    backendTLS: BackendTLS.optional(),
    http: BackendHttp.optional().meta({
      description:
        'version HTTP2: the calls over HTTP/2 (h2 over TLS, h2c to a plain stand-in); requestTimeout: how long a verdict may take (default 10s)',
    }),
    tcp: BackendTcp.optional().meta({
      description:
        'the connect timeout and TCP keepalives of the connections to the service (unset: the global ones)',
    }),
    backendTunnel: BackendTunnel.optional().meta({
      description: 'the forward proxy the service is reached through (CONNECT), as a backend’s',
    }),
  });
/** agentgateway's action of a cloud guard: reject (default) enforces what it finds, audit only records it. */
const CloudGuardAction = z.enum(['reject', 'audit']).optional().meta({
  description:
    'reject (default) applies what the guard finds; audit calls it and records what it found (access log, trace, metrics), never applying it, and a failed call never stops traffic',
});
/** agentgateway's Moderation: OpenAI's moderation endpoint on the request (a flagged text is rejected). */
export const GuardOpenAIModeration = strict({
  model: z.string().min(1).nullable().optional().meta({ description: 'default omni-moderation-latest' }),
  action: CloudGuardAction,
  policies: guardServicePolicies(
    serviceBackendAuth(LlmApiKey, ' on a guard service').meta({
      description: "the OpenAI API key, inline or {file}; unset: the client's own Authorization is passed on",
    }),
  )
    .nullable()
    .optional(),
  hostOverride: GuardHostOverride,
});
/** agentgateway's AwsAuth on a guard: explicit credentials, or `{}` for the environment and the SDK's chain. */
const GuardAwsAuth = z.union([
  strict({
    accessKeyId: z.string().min(1),
    secretAccessKey: z.string().min(1),
    sessionToken: z.string().min(1).nullable().optional(),
    region: NotYet('aws.region on a guard (the guard names its region)').optional(),
    serviceName: NotYet('aws.serviceName on a guard (the service is bedrock)').optional(),
  }),
  strict({
    region: NotYet('aws.region on a guard (the guard names its region)').optional(),
    serviceName: NotYet('aws.serviceName on a guard (the service is bedrock)').optional(),
    assumeRole: AwsAssumeRole,
  }),
]);
/** agentgateway's BedrockGuardrails: Amazon Bedrock's ApplyGuardrail on the request or the answer. */
export const GuardBedrockGuardrails = strict({
  guardrailIdentifier: z
    .string()
    .min(1)
    .max(2048)
    .regex(/^(([a-z0-9]+)|(arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail\/[a-z0-9]+))$/, {
      message: 'expected a guardrail id or ARN',
    }),
  guardrailVersion: z
    .string()
    .regex(/^(([1-9][0-9]{0,7})|(DRAFT))$/, { message: 'expected a version number or DRAFT' }),
  region: z.string().regex(/^[a-z0-9-]{1,20}$/, { message: 'expected an AWS region such as us-east-1' }),
  policies: guardServicePolicies(
    serviceBackendAuth(
      LlmApiKey,
      ' on a guard service',
      ['aws'],
      authForm({ aws: GuardAwsAuth }, ServiceCredentials, BackendAuthHeaders),
    ).meta({
      description:
        "aws: explicit credentials, or {} for AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY then the SDK's default chain (the default); key: a Bedrock API key",
    }),
  )
    .nullable()
    .optional(),
  action: z
    .enum(['reject', 'audit', 'Reject', 'Audit'])
    .transform((a) => (a.toLowerCase() === 'audit' ? ('Audit' as const) : ('Reject' as const)))
    .optional()
    .meta({
      description:
        'reject (default) applies the verdict; audit calls the guardrail and records what it found, never applying it (Reject and Audit, as the GwPolicy field, too)',
    }),
  hostOverride: GuardHostOverride,
});
/** agentgateway's GoogleModelArmor: a Model Armor template's sanitize calls on the request or the answer. */
export const GuardGoogleModelArmor = strict({
  action: CloudGuardAction,
  templateId: z.string().regex(/^[A-Za-z0-9_-]{1,63}$/, { message: 'expected a template id' }),
  projectId: z.string().regex(/^[a-z0-9-]{1,63}$/, { message: 'expected a project id' }),
  location: z
    .string()
    .regex(/^[a-z0-9-]{1,30}$/, { message: 'expected a location such as us-central1' })
    .nullable()
    .optional()
    .meta({ description: 'default us-central1' }),
  policies: guardServicePolicies(
    serviceBackendAuth(
      LlmApiKey,
      ' on a guard service',
      ['gcp'],
      authForm(
        {
          gcp: strict({
            type: z
              .union([
                z.literal('accessToken'),
                NotYetValues(['idToken'], 'gcp idToken credentials on a guard'),
              ])
              .nullable()
              .optional(),
            credential: NotYet('gcp.credential on a guard (use GOOGLE_APPLICATION_CREDENTIALS)').optional(),
            audience: NotYet('gcp.audience on a guard (idToken credentials)').optional(),
          }),
        },
        ServiceCredentials,
        BackendAuthHeaders,
      ),
    ).meta({
      description:
        'key: a Google access token, inline or {file}; gcp: {} or unset: Application Default Credentials',
    }),
  )
    .nullable()
    .optional(),
  hostOverride: GuardHostOverride,
});
/** agentgateway's AzureContentSafety: Azure AI Content Safety's text analysis and jailbreak detection. */
export const GuardAzureContentSafety = strict({
  action: CloudGuardAction,
  endpoint: z
    .string()
    .regex(/^[A-Za-z0-9.-]+$/, {
      message: 'expected a host name such as my-resource.cognitiveservices.azure.com',
    })
    .meta({ description: 'the resource host, e.g. <resource>.cognitiveservices.azure.com' }),
  policies: guardServicePolicies(
    serviceBackendAuth(
      LlmApiKey,
      ' on a guard service',
      ['azure'],
      authForm({ azure: AzureAuth }, ServiceCredentials, BackendAuthHeaders),
    ).meta({
      description:
        "key: the resource's subscription key (Ocp-Apim-Subscription-Key), inline or {file}; azure: an Entra ID token; unset: Azure's implicit credential chain",
    }),
  )
    .nullable()
    .optional(),
  analyzeText: strict({
    severityThreshold: z.number().int().min(0).max(7).nullable().optional().meta({
      description:
        'a category at or above this severity (FourSeverityLevels: 0, 2, 4, 6) is rejected; default 2',
    }),
    apiVersion: z.string().min(1).nullable().optional().meta({ description: 'default 2024-09-01' }),
    blocklistNames: z.array(z.string().min(1)).nullable().optional().meta({
      description: "the resource's blocklists the text is checked against: an item found rejects",
    }),
    haltOnBlocklistHit: z.boolean().nullable().optional().meta({
      description: 'the service stops analysing once a blocklist matched',
    }),
  })
    .nullable()
    .optional()
    .meta({ description: 'harm categories (Hate, SelfHarm, Sexual, Violence) and blocklists; the default' }),
  detectJailbreak: strict({
    apiVersion: z.string().min(1).nullable().optional().meta({ description: 'default 2024-02-15-preview' }),
  })
    .nullable()
    .optional()
    .meta({ description: 'jailbreak attempts in the request (request guards only)' }),
  hostOverride: GuardHostOverride,
});
/**
 * agentgateway's PromptInjection: a local heuristic, no service called. Each text in scope is matched
 * against gw's families of injection phrasing (instruction overrides, role hijacks, system-prompt
 * extraction, chat-template delimiters, safety bypasses, encoded instructions); its score is the
 * families matched over 3, capped at 1.
 */
export const GuardPromptInjection = strict({
  threshold: z.number().min(0).max(1).optional().meta({
    description:
      'the score (families of injection phrasing matched in one text, over 3, at most 1) at which a text is flagged; default 0.33: one match flags',
  }),
  action: z.enum(['reject', 'audit']).optional().meta({
    description:
      'reject (default) answers the rejection; audit records the finding and passes the request on',
  }),
});
const guardKinds = {
  regex: GuardRegex.optional(),
  webhook: GuardWebhook.optional(),
  bedrockGuardrails: GuardBedrockGuardrails.optional(),
  googleModelArmor: GuardGoogleModelArmor.optional(),
  azureContentSafety: GuardAzureContentSafety.optional(),
};
export const RequestGuard = strict({
  ...guardKinds,
  openAIModeration: GuardOpenAIModeration.optional(),
  promptInjection: GuardPromptInjection.optional().meta({
    description:
      'request guards only; gw addition: its scope may be set (toolOutput finds injections in what tools returned)',
  }),
  rejection: GuardRejection.optional(),
  scope: z.array(GuardContentScope).min(1).optional().meta({
    description: 'what the guard reads of a request (default systemPrompt and messages)',
  }),
})
  .superRefine(oneGuardKind(REQUEST_GUARD_KINDS))
  .superRefine((g, ctx) => {
    if (g.promptInjection && g.scope?.includes('toolInput'))
      ctx.addIssue({
        code: 'custom',
        path: ['scope'],
        message: "promptInjection does not read toolInput: tool call arguments are the model's own output",
      });
  });
/** A kind that reads requests only, set on a response guard: refused by name. */
const RequestOnly = (kind: string) =>
  z
    .unknown()
    .superRefine((_, ctx) =>
      ctx.addIssue({ code: 'custom', message: `${kind} reads requests only: set it under request` }),
    )
    .meta({ description: `refused: ${kind} is a request guard` })
    .transform((v) => v as never);
export const ResponseGuard = strict({
  ...guardKinds,
  openAIModeration: RequestOnly('openAIModeration').optional(),
  promptInjection: RequestOnly('promptInjection').optional(),
  rejection: GuardRejection.optional(),
})
  .superRefine(oneGuardKind(REQUEST_GUARD_KINDS))
  .superRefine((g, ctx) => {
    if (g.webhook?.messageFormat === 'raw')
      ctx.addIssue({
        code: 'custom',
        path: ['webhook', 'messageFormat'],
        message: "messageFormat raw replaces a request's messages: it works on request guards only",
      });
  });
export const PromptGuard = strict({
  streaming: z
    .union([z.boolean(), z.enum(['Enabled', 'Disabled'])])
    .optional()
    .meta({
      description:
        'response guards read streamed answers too (default off): regex guards as the text passes, guard services (webhook, bedrockGuardrails, googleModelArmor) in windows of 256 characters; Mask is not applied',
    }),
  request: z.array(RequestGuard).min(1).max(8).optional(),
  response: z.array(ResponseGuard).min(1).max(8).optional(),
});
const PromptMessage = strict({ role: z.string().min(1), content: z.string() });
export const PromptEnrichment = strict({
  prepend: z.array(PromptMessage).optional(),
  append: z.array(PromptMessage).optional(),
});
/** agentgateway's route types, the values of an ai policy's `routes`. */
export const AI_ROUTE_TYPES = [
  'completions',
  'messages',
  'models',
  'passthrough',
  'detect',
  'responses',
  'embeddings',
  'realtime',
  'anthropicTokenCount',
  'generateContent',
  'geminiCountTokens',
  'rerank',
] as const;
export type AiRouteType = (typeof AI_ROUTE_TYPES)[number];
const UNSERVED_AI_ROUTE_TYPES: readonly AiRouteType[] = ['rerank'];
/** The route types this build serves; the others are refused by checkAiPolicy. */
export const SERVED_AI_ROUTE_TYPES: readonly AiRouteType[] = AI_ROUTE_TYPES.filter(
  (t) => !UNSERVED_AI_ROUTE_TYPES.includes(t),
);
/** A route type as agentgateway names it (completions), or as its CRDs do (Completions). */
const AiRouteTypeName = z.union([
  z.enum(AI_ROUTE_TYPES),
  z
    .enum(AI_ROUTE_TYPES.map((t) => `${t[0]?.toUpperCase()}${t.slice(1)}`) as [string, ...string[]])
    .transform((t) => `${t[0]?.toLowerCase()}${t.slice(1)}` as AiRouteType),
]);
/** agentgateway's `ai` backend policy (its Policy): what this build implements of it. */
export const AiPolicy = strict({
  promptGuard: PromptGuard.optional(),
  prompts: PromptEnrichment.optional(),
  defaults: LlmFieldMap.optional(),
  overrides: LlmFieldMap.optional(),
  transformations: LlmCelMap.optional().meta({
    description: "request fields set from CEL over llmRequest (a model's transformation)",
  }),
  finalTransformations: LlmCelMap.optional().meta({
    description:
      "fields of the request in the provider's format, set from CEL once converted (a model's finalTransformation)",
  }),
  modelAliases: z.record(z.string().min(1), z.string().min(1)).optional().meta({
    description:
      'requested model name → the model to send: an exact name first, then patterns with * (the longest first); applied after the provider model, defaults, overrides and transformations',
  }),
  promptCaching: PromptCaching.optional(),
  routes: z.record(z.string().min(1), AiRouteTypeName).optional().meta({
    description:
      'which API a request is, by the end of its path ("*" for any other path; the longest suffix first). Unset: the API is told by its standard path (/v1/chat/completions, /v1/messages, …). passthrough forwards any request as it is, with the credential; detect forwards it and reads the usage',
  }),
  models: z
    .array(
      strict({
        id: z.string().min(1),
        ownedBy: z.string().min(1).optional().meta({ description: 'owned_by (default: the provider)' }),
        created: z
          .number()
          .int()
          .min(0)
          .optional()
          .meta({ description: 'created, in seconds since 1970 (default 0)' }),
      }),
    )
    .min(1)
    .max(1024)
    .optional()
    .meta({
      description:
        "newer agentgateway: what GET /v1/models lists for a route's ai backend (whose providers serve any name, so it lists none by itself)",
    }),
});

// ---------- a route's ai backend (agentgateway's LocalAIBackend) ----------
/** score: OpenAI reports what it finds in the answer's `moderation`; block: it also refuses flagged content. */
const OpenAIModerationRule = strict({ mode: z.enum(['score', 'block']) })
  .nullable()
  .optional();
/**
 * agentgateway's OpenAIModeration: OpenAI's inline `moderation` request parameter, written into every
 * chat completions and responses request sent to the provider (in place of one the client sent).
 */
export const OpenAIInlineModeration = strict({
  model: z.string().min(1).max(256).optional().meta({ description: 'default omni-moderation-latest' }),
  policy: strict({
    input: OpenAIModerationRule.meta({ description: "the request's input" }),
    output: OpenAIModerationRule.meta({ description: 'the generated output' }),
  })
    .nullable()
    .optional()
    .meta({ description: "unset: OpenAI's own default policy" }),
}).meta({
  description:
    "OpenAI's inline moderation: the `moderation` parameter written into each chat completions and responses request to this provider (replacing the client's), translated ones included; passthrough routes send the client's body as it is",
});
const AiModel = { model: z.string().min(1).optional() };
/** The provider of a route's ai backend: agentgateway's AIProvider, plus `mistral` (a gw provider). */
export const AiProviderKind = z.union([
  strict({
    openAI: strict({
      ...AiModel,
      moderation: OpenAIInlineModeration.nullable().optional(),
    }),
  }),
  strict({ anthropic: strict(AiModel) }),
  strict({ gemini: strict(AiModel) }),
  strict({ mistral: strict(AiModel) }),
  strict({
    vertex: strict({ ...AiModel, region: z.string().min(1).optional(), projectId: z.string().min(1) }),
  }),
  strict({
    bedrock: strict({
      ...AiModel,
      region: z.string().min(1),
      guardrailIdentifier: z.string().min(1).optional(),
      guardrailVersion: z.string().min(1).optional(),
      requestMetadata: z
        .array(
          strict({
            key: z.string().regex(/^[a-zA-Z0-9\s:_@$#=/+,.-]{1,256}$/, {
              message: 'a Bedrock metadata key: 1 to 256 letters, digits, spaces or :_@$#=/+,.-',
            }),
            value: z.string().max(256).optional(),
            expression: Cel.optional().meta({
              description: 'CEL over the request (jwt.sub, request.headers[…])',
            }),
          }).refine((m) => (m.value === undefined) !== (m.expression === undefined), {
            message: 'set value or expression',
          }),
        )
        .max(16)
        .optional()
        .meta({
          description:
            "Converse's requestMetadata, recorded in Bedrock's model invocation logs: each key's value, or its expression's (an expression with no value leaves its key out)",
        }),
    }),
  }),
  strict({
    azure: strict({
      ...AiModel,
      resourceName: z.string().min(1),
      resourceType: z.enum(['openAI', 'foundry', 'aiServices']),
      apiVersion: z.string().min(1).optional(),
      projectName: z.string().min(1).optional(),
    }),
  }),
  strict({ custom: LlmCustomProvider }),
  strict({ copilot: strict(AiModel) }),
]);
export const AiNamedProvider = strict({
  name: z.string().min(1),
  provider: AiProviderKind,
  hostOverride: LlmParams.shape.hostOverride,
  pathOverride: LlmParams.shape.pathOverride,
  pathPrefix: LlmParams.shape.pathPrefix,
  tokenize: z.boolean().optional(),
  policies: BackendPolicies.extend({
    backendAuth: BackendAuth.optional().meta({
      description:
        "the provider's credential: {key} (inline or {file}) is its API key, sent the provider's way; another form (gcp, azure, aws, oauthTokenExchange, jwtSign, passthrough, a key with a location) replaces it; unset: the client's own is passed on",
    }),
    ai: AiPolicy.optional().meta({ description: 'prompt guards, prompt enrichment, defaults and overrides' }),
  }).optional(),
});
/** One provider, or priority groups: a group that fails or answers 429/5xx passes to the next. */
export const AiBackend = z.union([
  AiNamedProvider,
  strict({ groups: z.array(strict({ providers: z.array(AiNamedProvider).min(1) })).min(1) }),
]);

// ---------- a backend serving a list of models (gw's own shape; what the controller sends for GwModels) ----------
const ModelPattern = z
  .string()
  .min(1)
  .regex(/^[^*]*\*?$/, 'expected an exact model name, prefix* or *')
  .meta({ description: 'the requested model it serves: exact, prefix* or *' });
/** One model: an ai backend provider (`name` identifies it for virtual models and telemetry). */
export const LlmModelsEntry = AiNamedProvider.extend({
  match: ModelPattern,
  visibility: z.enum(['public', 'internal']).optional(),
  requestHeaders: LlmHeaderModifier.optional().meta({ description: "headers of this model's requests" }),
  responseHeaders: LlmHeaderModifier.optional().meta({ description: "headers of this model's answers" }),
  authorization: Authorization.optional().meta({
    description: 'rules a request must pass to be sent to this model (a GwModel policies.authorization)',
  }),
});
const LlmModelsTarget = {
  model: z.string().min(1).meta({ description: 'the name of an entry of models' }),
  as: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "the model asked of it; unset: the client's requested model" }),
};
export const LlmModelsVirtual = strict({
  name: z.string().min(1),
  match: z.string().min(1),
  routing: z.union([
    strict({
      weighted: z
        .array(strict({ ...LlmModelsTarget, weight: z.number().int().min(0) }))
        .min(1)
        .max(64),
    }),
    strict({
      failover: z.array(strict(LlmModelsTarget)).min(1).max(64).meta({ description: 'tried in order' }),
    }),
    strict({
      conditional: z
        .array(strict({ ...LlmModelsTarget, when: Cel.optional() }))
        .min(1)
        .max(64),
    }),
  ]),
});
/**
 * Models and virtual models served on a route, matched on the requested model like the llm block's.
 * Each model is a provider in the ai backend's shape; virtual model targets name a model entry.
 */
export const LlmModelsBackend = strict({
  models: z.array(LlmModelsEntry),
  virtualModels: z.array(LlmModelsVirtual).optional(),
});

export const LlmProviderDefaults = strict({ ...llmBody, ...llmConnection });

export const LlmNamedProvider = strict({
  name: z.string().min(1),
  params: LlmParams.optional(),
  provider: LlmProvider,
  defaults: LlmProviderDefaults.optional(),
});

/** When a model entry serves a request besides its name: every header of one entry of `matches` holds. */
export const LlmModelMatch = strict({
  headers: z.array(strict({ name: HeaderName, value: StringMatch })).optional(),
});

export const LlmModel = strict({
  id: z.string().min(1).optional(),
  name: z.string().min(1).meta({ description: 'the requested model it serves: exact, prefix* or *' }),
  visibility: z.enum(['public', 'internal']).optional(),
  params: LlmParams.optional(),
  provider: LlmProvider,
  passthrough: z.enum(['detect', 'opaque']).nullable().optional().meta({
    description:
      "the client's request sent unchanged, in its own format (which the provider must speak): detect reads the answer for usage, opaque leaves it alone",
  }),
  authorization: Authorization.optional().meta({
    description: 'rules (CEL, llmRequest included) a request must pass to be sent to this model; else 403',
  }),
  ...llmBody,
  finalTransformation: LlmCelMap.optional().meta({
    description:
      "fields of the request in the provider's own format, set from CEL over it (llmRequest) once it is converted",
  }),
  ...llmConnection,
  guardrails: z
    .union([PromptGuard, z.string().min(1).meta({ description: 'the name of a set in llm.guardrails' })])
    .optional(),
  matches: z.array(LlmModelMatch).optional().meta({
    description:
      'request headers that must match, besides the name, for this entry to serve (any one entry of the list); entries of one name without matches serve the rest',
  }),
});

const LlmTargetModel = z.string().min(1);
const LlmWeighted = strict({
  targets: z
    .array(strict({ model: LlmTargetModel, weight: z.number().int().min(0).optional() }))
    .min(1)
    .max(64),
});
const LlmFailover = strict({
  targets: z
    .array(strict({ model: LlmTargetModel, priority: z.number().int().min(0) }))
    .min(1)
    .max(64),
});
const LlmConditional = strict({
  targets: z
    .array(strict({ model: LlmTargetModel, when: Cel.optional() }))
    .min(1)
    .max(64),
});
type LlmRouting =
  | { weighted: z.output<typeof LlmWeighted> }
  | { failover: z.output<typeof LlmFailover> }
  | { conditional: z.output<typeof LlmConditional> };
export const LlmVirtualModel = strict({
  name: z.string().min(1),
  // one of the three, as agentgateway's LocalLLMVirtualModelRouting (an object of optional keys)
  routing: strict({
    weighted: LlmWeighted.nullable().optional(),
    failover: LlmFailover.nullable().optional(),
    conditional: LlmConditional.nullable().optional(),
  }).transform((r, ctx): LlmRouting => {
    const set = (['weighted', 'failover', 'conditional'] as const).filter((k) => r[k] != null);
    if (set.length !== 1) {
      ctx.issues.push({
        code: 'custom',
        input: r,
        message: `set exactly one of weighted, failover, conditional${set.length ? ` (set: ${set.join(', ')})` : ''}`,
      });
      return z.NEVER;
    }
    if (r.weighted) return { weighted: r.weighted };
    if (r.failover) return { failover: r.failover };
    return { conditional: r.conditional as z.output<typeof LlmConditional> };
  }),
});

export const LlmPolicies = strict({
  timeout: Timeout.optional().meta({
    description:
      'requestTimeout: the whole request, streamed answers included; backendRequestTimeout: each call to a provider',
  }),
  jwtAuth: JwtAuth.optional(),
  basicAuth: BasicAuth.optional(),
  apiKey: ApiKeyAuth.optional(),
  authorization: Authorization.optional(),
  extAuthz: ExtAuthzPolicy.optional(),
  cors: Cors.optional(),
  localRateLimit: z.array(LocalRateLimit).min(1).optional(),
  remoteRateLimit: RemoteRateLimit.optional(),
  concurrencyLimit: ConcurrencyLimitPolicy.optional().meta({
    description: 'requests in flight at once on the LLM API, per key (jwt.sub, llm.requestModel, …)',
  }),
  ipAccessControl: IpAccessControl.optional().meta({
    description: 'client addresses that may use the LLM API',
  }),
  // browser login in front of the LLM API; its callback and logout paths reach the llm route too
  oidc: Oidc.optional(),
  extProc: ExtProcPolicy.optional(),
  transformations: TransformationsPolicy.optional(),
  guardrails: PromptGuard.optional().meta({
    description: "guardrails of every model (a model's own guardrails replace them)",
  }),
});

/** Where the llm and mcp blocks attach: `<gateway>` or `<gateway>/<listener>`, one or a list. */
const GatewayRefs = z.union([z.string().min(1), z.array(z.string().min(1))]);
export const LlmConfig = strict({
  gateways: GatewayRefs.optional().meta({
    description:
      'gateways (<name> or <name>/<listener>) to serve the LLM API on (default: the gateway named default)',
  }),
  port: Port.optional().meta({
    description:
      'a port of its own to serve the LLM API on; without it, gateways and a gateway named default, 4000',
  }),
  tls: ListenerTLS.optional(),
  providers: z.array(LlmNamedProvider).optional(),
  models: z.array(LlmModel),
  virtualModels: z.array(LlmVirtualModel).optional(),
  policies: LlmPolicies.optional(),
  guardrails: z.record(z.string().min(1), PromptGuard).optional().meta({
    description: "named sets of guardrails, which a model's guardrails may name (guardrails: <name>)",
  }),
});

// ---------- MCP gateway (agentgateway's LocalMcpBackend) ----------
// The modes are accepted in agentgateway's spelling (failClosed) and in the CRD's (FailClosed).

/** A remote target: a URL in `host`, or host, port and path; or a top-level host backend and a path. */
const McpRemote = z.union([
  strict({
    host: z.string().min(1).meta({ description: 'http(s)://host:port/path, host:port, or a host name' }),
    port: Port.optional(),
    path: z.string().optional(),
  }),
  strict({
    backend: z.string().min(1).meta({
      description:
        "a top-level host backend: its host, and its policies the target takes (backendTLS, backendAuth, …; the target's own win)",
    }),
    path: z.string().nullable().optional().meta({ description: 'the path on it (default /mcp, or /sse)' }),
  }),
]);
export const McpTarget = strict({
  name: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$/,
      'a target name is 1 to 63 letters, digits, "." and "-", starting with a letter or digit (no "_": it separates the prefix)',
    )
    .meta({ description: 'prefixes tool and prompt names (<name>_<tool>) when several targets are served' }),
  stdio: strict({
    cmd: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    clear_env: z.boolean().optional(),
  }).optional(),
  sse: McpRemote.optional(),
  mcp: McpRemote.optional(),
  openapi: strict({
    schema: z
      .union([
        z.string().min(1),
        strict({ file: z.string().min(1) }),
        strict({
          url: z
            .string()
            .regex(/^https?:\/\//i, 'an http:// or https:// URL')
            .refine((u) => URL.canParse(u) && new URL(u).hostname !== '', 'not a URL with a host')
            .meta({ description: 'fetched on first use, then kept while the config is' }),
        }),
      ])
      .meta({
        description: 'the OpenAPI 3 document (JSON or YAML): {file: path}, {url}, or the document inline',
      }),
    host: z.string().min(1).optional().meta({
      description: 'where the API is: http(s)://host:port/prefix, host:port, or a host name',
    }),
    port: Port.optional(),
    path: z.string().optional().meta({
      description:
        "a path put before every operation's path (default: the path of the document's server URL)",
    }),
    backend: z.string().min(1).optional().meta({
      description:
        "instead of host: a top-level host backend, whose policies the target takes (the target's own win)",
    }),
  })
    .optional()
    .meta({
      description:
        'an HTTP API described by OpenAPI, served as MCP tools: one per operation (named by operationId), input {path, query, header, body}',
    }),
  policies: BackendPolicies.optional(),
});
export const McpAuthorization = strict({ rules: z.array(AuthzRule).min(1) });
const METHOD_KEY = new RegExp(MCP_METHOD_PATTERN);
/** The JSON-RPC methods a processor sees, and in which phase. */
const McpMethods = z
  .record(z.string(), z.enum(['off', 'request', 'response', 'full', 'Off', 'Request', 'Response', 'Full']))
  .superRefine((m, ctx) => {
    const keys = Object.keys(m);
    if (keys.length > 64) ctx.addIssue({ code: 'custom', message: 'methods must have at most 64 entries' });
    for (const k of keys)
      if (!METHOD_KEY.test(k))
        ctx.addIssue({
          code: 'custom',
          path: [k],
          message: `method keys are exact names, a prefix wildcard like tools/*, a suffix wildcard like */list, or *`,
        });
  })
  .meta({
    description:
      'the JSON-RPC methods this processor sees, and in which phase; the most specific key wins (exact, then the longest prefix or suffix wildcard, then *); other methods bypass it (unset: all do)',
  })
  .optional()
  .default({});
/**
 * agentgateway's MCP guardrail processor. gw calls it over HTTP with @gw/guardrail-sdk's MCP
 * processor contract (agentgateway speaks gRPC to its processors); the shape is the same.
 */
const McpRemoteProcessor = strict({
  kind: z.literal('remote').optional().meta({ description: 'a remote processor (the default)' }),
  host: z.string().min(1).optional().meta({
    description:
      'the processor: host:port (plain HTTP), or gw addition, an http(s)://host[:port][/base] URL; calls go to <base>/mcp/request and <base>/mcp/response',
  }),
  backend: z.string().min(1).optional().meta({ description: 'a top-level backend (with a host) to call' }),
  service: ServiceRef.optional().meta({
    description:
      'a Service of the top-level services list: called by its hostname, each connection dialled at the next of its workloads',
  }),
  policies: guardServicePolicies(
    serviceKeyAuth(' on an MCP guardrail processor').meta({
      description:
        'a key sent with every call: the Authorization header, Bearer prefix (location.header changes both); credentials (or headers): more secrets, each in a header of its own, beside the key or alone',
    }),
  )
    .nullable()
    .optional()
    .meta({
      description:
        "the calls' connection: backendTLS (the call goes https), backendAuth key, requestHeaderModifier, tcp, http (version HTTP2; requestTimeout when timeout is unset), backendTunnel",
    }),
  failureMode: z.enum(['failClosed', 'failOpen', 'FailClosed', 'FailOpen']).optional().meta({
    description:
      'when the processor fails (unreachable, timeout, an answer that is not a verdict): failClosed (default) answers the client a JSON-RPC error, failOpen lets the message through',
  }),
  metadata: z.record(z.string().min(1), Cel).optional().meta({
    description:
      'sent to the processor as metadata: each a CEL expression on the request (request.*, jwt.*, mcp.*); one that cannot be evaluated is left out',
  }),
  requestHeaders: strict({
    allowed: z.array(HeaderName).optional(),
    disallowed: z.array(HeaderName).optional(),
  })
    .optional()
    .meta({
      description:
        'the client request headers sent to the processor: allowed empty or unset sends all (pseudo-headers too); disallowed always wins',
    }),
  methods: McpMethods,
  timeout: Duration.optional().meta({
    description: 'gw addition: how long to wait for a verdict (default 10s)',
  }),
}).superRefine((p, ctx) => {
  const where = ['host', 'backend', 'service'].filter((k) => p[k as keyof typeof p] !== undefined);
  if (where.length !== 1)
    ctx.addIssue({
      code: 'custom',
      message: `a processor takes exactly one of host, backend, service${where.length ? ` (got ${where.join(', ')})` : ''}`,
    });
});
/**
 * agentgateway's CEL processor (`kind: cel`, or `expression`; newer than the schema gw follows): in
 * the methods and phases it names, when `when` holds (or always), rejects the message with a JSON-RPC
 * error, or replaces it with what `transform` gives (mcp.params in the request phase, mcp.result in
 * the response phase).
 */
const McpCelProcessor = strict({
  kind: z
    .enum(['cel', 'expression'])
    .meta({ description: 'a processor of CEL expressions run by gw itself' }),
  methods: McpMethods.refine((m) => Object.keys(m).length > 0, {
    message:
      'a cel processor sees only the methods it names: name at least one ({"tools/call": request}, {"*": full})',
  }),
  when: Cel.optional().meta({
    description:
      'CEL over the request and the message (mcp.method, mcp.params, mcp.result): true applies it; unset: always; an error fails the processor (failureMode)',
  }),
  reject: z.string().min(1).max(4096).optional().meta({
    description: 'the message is refused, with this as the JSON-RPC error message',
  }),
  transform: Cel.optional().meta({
    description: 'CEL giving the new params (request phase) or result (response phase), an object',
  }),
  failureMode: z.enum(['failClosed', 'failOpen', 'FailClosed', 'FailOpen']).optional().meta({
    description:
      'when `when` fails to evaluate, or transform fails or gives no object: failClosed (default) answers the client a JSON-RPC error, failOpen lets the message through',
  }),
}).superRefine((p, ctx) => {
  if ((p.reject === undefined) === (p.transform === undefined))
    ctx.addIssue({ code: 'custom', message: 'a cel processor takes exactly one of reject and transform' });
});
export const McpProcessor = z.union([McpRemoteProcessor, McpCelProcessor]);
export type McpRemoteProcessor = z.output<typeof McpRemoteProcessor>;
export const McpGuardrails = strict({ processors: z.array(McpProcessor).min(1).max(16) });
export const McpBackend = strict({
  targets: z.array(McpTarget).min(1).max(128),
  statefulMode: z.enum(['stateful', 'stateless', 'Stateful', 'Stateless']).optional(),
  sessionRouting: z
    .enum(['Stateful', 'Stateless'])
    .optional()
    .meta({ description: 'the CRD name of statefulMode' }),
  prefixMode: z
    .enum(['conditional', 'always', 'never', 'Conditional', 'Always', 'Never'])
    .nullable()
    .optional(),
  failureMode: z.enum(['failClosed', 'failOpen', 'FailClosed', 'FailOpen']).nullable().optional(),
  dnsRebindingProtection: z.boolean().optional(),
  sseKeepAlive: Duration.nullable().optional().meta({
    description:
      'how often a comment is sent on a long-lived MCP stream (the GET stream, the older transport’s SSE stream) that carries nothing else, so a load balancer in front does not reap it (default 25s; 0s: never)',
  }),
  server: strict({
    name: z
      .string()
      .min(1)
      .nullable()
      .optional()
      .meta({ description: 'serverInfo.name (set with version; default gw)' }),
    version: z
      .string()
      .min(1)
      .nullable()
      .optional()
      .meta({ description: 'serverInfo.version (set with name; default gw’s version)' }),
    title: z.string().min(1).nullable().optional().meta({ description: 'serverInfo.title (default: none)' }),
    instructions: z.string().nullable().optional().meta({
      description: 'put before the targets’ own instructions in the answer to initialize (default: nothing)',
    }),
  })
    .refine((v) => (v.name == null) === (v.version == null), {
      message: 'name and version go together: set both or neither',
    })
    .nullable()
    .optional()
    .meta({
      description:
        "what a client is told of the server at initialize when it federates several targets: serverInfo's name, version and title, and instructions put before the targets' own",
    }),
});
/**
 * agentgateway's top-level `mcp` block: one virtual MCP server of these targets, served at /mcp (and
 * /sse, /message for the older transport) on a port of its own or on the gateways it names.
 */
export const McpConfig = McpBackend.extend({
  gateways: GatewayRefs.optional().meta({
    description:
      'gateways (<name> or <name>/<listener>) to serve the MCP server on (default: the gateway named default)',
  }),
  port: Port.optional().meta({
    description:
      'a port of its own to serve the MCP server on; without it, gateways and a gateway named default, 3000',
  }),
  policies: TrafficPolicies.optional().meta({
    description: "the MCP route's policies (mcpAuthentication, mcpAuthorization, cors, rate limits, …)",
  }),
});
export type McpConfig = z.infer<typeof McpConfig>;

// The output types of these sections, worked out in statements of their own: TypeScript caps the
// type instantiations of one statement, and the whole file's type at once goes over it.
const GlobalConfigTyped: z.ZodType<z.output<typeof GlobalConfig>> = GlobalConfig;
const FrontendPoliciesTyped: z.ZodType<z.output<typeof FrontendPolicies>> = FrontendPolicies;
const BindTyped: z.ZodType<z.output<typeof Bind>> = Bind;
const GatewayTyped: z.ZodType<z.output<typeof Gateway>> = Gateway;
const AttachedRouteTyped: z.ZodType<z.output<typeof AttachedRoute>> = AttachedRoute;
const NamedBackendTyped: z.ZodType<z.output<typeof NamedBackend>> = NamedBackend;
const TargetedPolicyTyped: z.ZodType<z.output<typeof TargetedPolicy>> = TargetedPolicy;
const LlmConfigTyped: z.ZodType<z.output<typeof LlmConfig>> = LlmConfig;
const McpConfigTyped: z.ZodType<z.output<typeof McpConfig>> = McpConfig;
export const ConfigFile = strict({
  config: GlobalConfigTyped.optional(),
  binds: z.array(BindTyped).optional(),
  gateways: z.record(z.string().min(1), GatewayTyped).optional(),
  routes: z.array(AttachedRouteTyped).optional(),
  backends: z.array(NamedBackendTyped).optional(),
  policies: z.array(TargetedPolicyTyped).optional(),
  frontendPolicies: FrontendPoliciesTyped.optional(),
  ui: strict({
    gateways: z.union([z.string(), z.array(z.string())]).optional(),
    policies: NotYet('ui policies').optional(),
  }).optional(),
  workloads: z.array(LocalWorkload).optional().meta({
    description:
      'instances of the Services below (agentgateway: mostly for testing; host backends are the usual way)',
  }),
  services: z.array(LocalService).optional().meta({
    description: 'Services that `service` route backends name; their endpoints are the workloads above',
  }),
  llm: LlmConfigTyped.optional(),
  mcp: McpConfigTyped.optional(),
  tcpRoutes: z.array(AttachedTcpRoute).optional(),
  routeGroups: z
    .array(
      strict({
        name: z.string().min(1).meta({ description: 'the name a routeGroup backend refers to' }),
        routes: z
          .array(Route)
          .meta({ description: 'the routes a request delegated to the group is matched against' }),
      }),
    )
    .optional()
    .meta({
      description:
        "groups of routes a route delegates to with a routeGroup backend: once that route matches, the group's routes are matched next (their own matches, hostnames and precedence); their policies add to and override the delegating route's",
    }),
});

export type ConfigFile = z.infer<typeof ConfigFile>;
/**
 * ConfigFile as a plain ZodType of its output: the schema's own type is too deep for TypeScript to
 * relate to ZodType where a function takes one (validateSource).
 */
export const ConfigFileSchema = ConfigFile as unknown as z.ZodType<ConfigFile>;
export type TrafficPolicies = z.infer<typeof TrafficPolicies>;
export type BackendPolicies = z.infer<typeof BackendPolicies>;
export type InferenceRouting = z.infer<typeof InferenceRouting>;
export type BackendAuth = z.infer<typeof BackendAuth>;
export type RouteMatch = z.infer<typeof RouteMatch>;
export type RouteBackend = z.infer<typeof RouteBackend>;
export type Listener = z.infer<typeof Listener>;
export type TcpRoute = z.infer<typeof TcpRoute>;
export type Gateway = z.infer<typeof Gateway>;
export type BackendTLS = z.infer<typeof BackendTLS>;
export type GlobalConfig = z.infer<typeof GlobalConfig>;
export type ListenerTLS = z.infer<typeof ListenerTLS>;
export type AccessLog = z.infer<typeof AccessLog>;
export type Authorization = z.infer<typeof Authorization>;
export type JwtAuth = z.infer<typeof JwtAuth>;
export type McpAuthentication = z.infer<typeof McpAuthentication>;
export type ExtAuthz = z.infer<typeof ExtAuthz>;
export type ExtProc = z.infer<typeof ExtProc>;
export type LocalRateLimit = z.infer<typeof LocalRateLimit>;
export type RemoteRateLimit = z.infer<typeof RemoteRateLimit>;
export type RequestMirror = z.infer<typeof RequestMirror>;
export type LlmConfig = z.infer<typeof LlmConfig>;
export type McpBackend = z.infer<typeof McpBackend>;
export type AwsBackend = z.infer<typeof AwsBackend>;
export type McpGuardrails = z.infer<typeof McpGuardrails>;
export type McpTarget = z.infer<typeof McpTarget>;
export type McpAuthorization = z.infer<typeof McpAuthorization>;
export type PromptGuard = z.infer<typeof PromptGuard>;
export type GuardWebhook = z.infer<typeof GuardWebhook>;
export type PromptEnrichment = z.infer<typeof PromptEnrichment>;
export type AiPolicy = z.infer<typeof AiPolicy>;
export type LlmModel = z.infer<typeof LlmModel>;
export type LlmParams = z.infer<typeof LlmParams>;
export type LlmNamedProvider = z.infer<typeof LlmNamedProvider>;
export type LlmVirtualModel = z.infer<typeof LlmVirtualModel>;
export type LlmProviderRef = z.infer<typeof LlmProvider>;
export type AiBackend = z.infer<typeof AiBackend>;
export type LlmModelsBackend = z.infer<typeof LlmModelsBackend>;
export type AiNamedProvider = z.infer<typeof AiNamedProvider>;
