// GwPolicy: policies attached to Gateways, listeners, routes and backends by targetRefs (or a label
// selector), in three sections: traffic (per request), frontend (per downstream connection) and
// backend (per upstream connection). Spec: "GwPolicy", "Limits".
import { z } from 'zod';
import {
  alone,
  atLeastOne,
  atMostOne,
  exactlyOne,
  mapList,
  maxEntries,
  obj,
  rules,
  setList,
} from './kube.ts';
import {
  ApiKeyAuthentication,
  Authorization,
  BackendFull,
  BackendTcp,
  BasicAuthentication,
  Buffer,
  conditional,
  ExtAuth,
  FailureMode,
  HeaderModifier,
  JwtAuthentication,
  KeyExchangeGroup,
  RateLimit,
  Transformation,
  urlWithoutPath,
} from './policy-blocks.ts';
import {
  CELExpression,
  Conditions,
  Duration,
  Group,
  HeaderName,
  IntOrByteSize,
  Kind,
  LocalBackendObjectReference,
  LongString,
  ObjectName,
  ParentReference,
  Port,
  remoteEndpoint,
  SectionName,
  ShortString,
  TinyString,
} from './types.ts';

const sectionXorPort = atMostOne(['sectionName', 'port'], 'at most one of sectionName or port may be set');

const TARGET_GROUP = "API group of the target: gateway.networking.k8s.io, gw.dev, or '' for a Service.";
const TARGET_KIND = 'Kind of the target: Gateway, ListenerSet, HTTPRoute, GRPCRoute, GwBackend, Service, ...';
const TARGET_SECTION =
  'A part of the target only: a listener of a Gateway or ListenerSet, a rule name of a route, a port of a Service, or a provider or MCP target name of a GwBackend.';
export const PolicyTargetReference = rules(
  obj({
    group: Group.meta({ description: TARGET_GROUP }),
    kind: Kind.meta({ description: TARGET_KIND }),
    name: ObjectName.meta({ description: "Name of the target, in the policy's namespace." }),
    sectionName: SectionName.optional().meta({ description: TARGET_SECTION }),
    port: Port.optional().meta({
      description: 'A Gateway port; only for frontend policies targeting a Gateway.',
    }),
  }),
  sectionXorPort,
);
export const PolicyTargetSelector = rules(
  obj({
    group: Group.meta({ description: TARGET_GROUP }),
    kind: Kind.meta({ description: TARGET_KIND }),
    matchLabels: z.record(z.string().min(1).max(317), z.string().max(63)).meta({
      maxProperties: 64,
      description:
        "Labels an object of this group and kind in the policy's namespace must carry to be a target.",
    }),
    sectionName: SectionName.optional().meta({ description: TARGET_SECTION }),
    port: Port.optional().meta({
      description: 'A Gateway port; only for frontend policies targeting a Gateway.',
    }),
  }),
  sectionXorPort,
);

// ---------- traffic ----------
export { ExtAuth };
export const BodySendMode = z.enum(['None', 'Buffered', 'BufferedPartial', 'FullDuplexStreamed']);
const SendMode = z.enum(['Send', 'Skip']);
const BODY_MODE_DESCRIPTION =
  'How the body is sent to the processor: None, Buffered (whole), BufferedPartial (up to the buffer limit) or FullDuplexStreamed (in chunks as it arrives).';
const extProcFields = {
  backendRef: LocalBackendObjectReference.optional().meta({
    description: 'The external processing service (a Service and its port, gRPC); set this or url.',
  }),
  url: urlWithoutPath.optional().meta({
    description:
      'The service by URL instead of backendRef: http://host[:port], or https://host[:port] for TLS with the system roots.',
  }),
  failureMode: FailureMode.optional().meta({ description: 'FailClosed (default) or FailOpen.' }),
  requestBodyMode: BodySendMode.optional().meta({
    description: 'gw spelling of processingOptions.requestBodyMode (default None when neither is set).',
  }),
  responseBodyMode: BodySendMode.optional().meta({
    description: 'gw spelling of processingOptions.responseBodyMode (default None when neither is set).',
  }),
  processingOptions: obj({
    allowModeOverride: z.boolean().default(false).meta({
      description: "Whether a headers answer's mode_override may change the body modes that follow.",
    }),
    requestBodyMode: BodySendMode.default('FullDuplexStreamed').meta({
      description: `Request body: ${BODY_MODE_DESCRIPTION} Default: FullDuplexStreamed.`,
    }),
    requestHeaderMode: SendMode.default('Send').meta({
      description: 'Send (default) or Skip the request headers.',
    }),
    requestTrailerMode: SendMode.default('Send').meta({
      description: 'Send (default) or Skip the request trailers.',
    }),
    responseBodyMode: BodySendMode.default('FullDuplexStreamed').meta({
      description: `Response body: ${BODY_MODE_DESCRIPTION} Default: FullDuplexStreamed.`,
    }),
    responseHeaderMode: SendMode.default('Send').meta({
      description: 'Send (default) or Skip the response headers.',
    }),
    responseTrailerMode: SendMode.default('Send').meta({
      description: 'Send (default) or Skip the response trailers.',
    }),
  })
    .optional()
    .meta({
      description: 'Which parts of the request and response are sent to the processor, and how.',
    }),
  metadataContext: maxEntries(
    z.record(z.string().min(1).max(256), z.record(z.string().min(1).max(256), CELExpression)),
    64,
  )
    .optional()
    .meta({
      description:
        'Namespace to key to CEL: sent as metadata_context.filter_metadata with every message of the stream. The namespace agentgateway.dev.grpc_initial_metadata goes as gRPC metadata of the stream instead. A key that fails to evaluate is left out.',
    }),
  requestAttributes: maxEntries(z.record(z.string().min(1).max(256), CELExpression), 64)
    .optional()
    .meta({
      description:
        'Name to CEL: the first message of the request side carries them as attributes["envoy.filters.http.ext_proc"]. source.address, source.port, destination.address, destination.port and request.protocol, when named, carry the connection’s own values.',
    }),
  responseAttributes: maxEntries(z.record(z.string().min(1).max(256), CELExpression), 64)
    .optional()
    .meta({
      description: 'Name to CEL: as requestAttributes, on the first message of the response side.',
    }),
};
const extProcRules = [
  {
    rule: '!has(self.processingOptions) || (!has(self.requestBodyMode) && !has(self.responseBodyMode))',
    message: 'requestBodyMode and responseBodyMode go in processingOptions when it is set',
  },
];
export const ExtProcPolicy = rules(obj(extProcFields), exactlyOne(['backendRef', 'url']), ...extProcRules);
export const ExtProc = rules(
  obj({ ...extProcFields, conditional: conditional(ExtProcPolicy, 'extProc') }),
  {
    rule: 'has(self.conditional) || [has(self.backendRef), has(self.url)].filter(x, x).size() == 1',
    message: 'exactly one of backendRef or url must be set unless conditional is set',
  },
  ...extProcRules,
  alone('conditional', Object.keys(extProcFields)),
);
export const ORIGIN_PATTERN = '^[a-z][a-z0-9+.-]*://[^/:]+(:[0-9]{1,5})?$';
export const Csrf = obj({
  additionalOrigins: z
    .array(
      rules(ShortString, {
        rule: `self.matches('${ORIGIN_PATTERN}')`,
        message: 'must be an origin <scheme>://<host>[:<port>]',
      }),
    )
    .min(1)
    .max(16)
    .meta({
      description:
        'Origins (<scheme>://<host>[:<port>]) whose state-changing requests are accepted besides same-origin ones.',
    }),
});
export const Cors = obj({
  allowOrigins: z.array(ShortString).min(1).max(64).optional().meta({
    description:
      'Origins allowed to make cross-origin requests, e.g. https://app.example.com; * matches any characters within the host (https://*.example.com), * alone any origin.',
  }),
  allowMethods: z.array(TinyString).max(16).optional().meta({
    description: 'HTTP methods a cross-origin request may use (Access-Control-Allow-Methods).',
  }),
  allowHeaders: z.array(HeaderName).max(64).optional().meta({
    description: 'Request headers a cross-origin request may send (Access-Control-Allow-Headers).',
  }),
  exposeHeaders: z.array(HeaderName).max(64).optional().meta({
    description: 'Response headers the browser lets the page read (Access-Control-Expose-Headers).',
  }),
  allowCredentials: z.boolean().optional().meta({
    description: 'Whether the browser may send cookies and credentials (Access-Control-Allow-Credentials).',
  }),
  maxAge: z.int().min(1).max(2147483647).optional().meta({
    description: 'Seconds a browser may cache the preflight answer.',
  }),
});
const directResponseFields = {
  status: z.int().min(200).max(599).optional().meta({ description: 'HTTP status code (required).' }),
  body: z.string().max(65536).optional().meta({ description: 'The response body, as written; unset: none.' }),
  bodyExpression: CELExpression.optional().meta({
    description: 'CEL giving the body: a string or bytes as they are, another value as JSON.',
  }),
  headers: mapList(
    z
      .array(
        obj({
          name: HeaderName.meta({ description: 'The header name.' }),
          value: CELExpression.meta({ description: 'CEL giving the value.' }),
        }),
      )
      .min(1)
      .max(16),
    ['name'],
  )
    .optional()
    .meta({ description: 'Headers of the response, each name once.' }),
};
const notBoth = {
  rule: '!(has(self.body) && has(self.bodyExpression))',
  message: 'body and bodyExpression may not both be set',
};
export const DirectResponsePolicy = rules(obj(directResponseFields), notBoth, {
  rule: 'has(self.status)',
  message: 'status is required',
});
export const DirectResponse = rules(
  obj({ ...directResponseFields, conditional: conditional(DirectResponsePolicy, 'directResponse') }),
  notBoth,
  alone('conditional', Object.keys(directResponseFields)),
  { rule: 'has(self.conditional) || has(self.status)', message: 'status is required' },
);
export const Retry = obj({
  attempts: z.int().min(1).max(255).default(1).meta({
    description: 'How many times a request may be retried after its first attempt. Default: 1.',
  }),
  backoff: Duration.optional().meta({
    description:
      'The wait before the first retry, doubled for each next one, a duration such as 100ms. Default: 25ms.',
  }),
  codes: z.array(z.int().min(400).max(599)).min(1).max(16).optional().meta({
    description:
      'Response statuses that are retried. Unset: only failed connections, resets and what condition says.',
  }),
  condition: CELExpression.optional().meta({
    description:
      'CEL on each response (response.code, response.headers): true retries it, as a status in codes does.',
  }),
  precondition: CELExpression.optional().meta({
    description:
      'CEL on the request before the first attempt: unless it is true there are no retries, and no request body is kept in memory for them (e.g. request.method == "GET").',
  }),
});
export const IpAccessControl = obj({
  allow: z.array(ShortString).min(1).max(256).optional().meta({
    description:
      'IP addresses or CIDRs (10.0.0.0/8, 2001:db8::/32) that may send requests; when set, every other address is refused.',
  }),
  deny: z.array(ShortString).min(1).max(256).optional().meta({
    description: 'IP addresses or CIDRs that are refused, before allow is looked at.',
  }),
  xffNumTrustedHops: z.int().min(0).max(64).optional().meta({
    description:
      'Proxies in front that append to X-Forwarded-For: the client is the entry this many places from its right. Unset: the connection peer.',
  }),
  skipPrivateIps: z.boolean().optional().meta({
    description: 'Loopback, private (RFC 1918, RFC 4193) and link-local addresses always pass.',
  }),
  enforceFullChain: z.boolean().optional().meta({
    description: 'Every address of X-Forwarded-For, and the connection peer, must pass.',
  }),
  maxXffLength: z.int().min(1).max(1024).optional().meta({
    description: 'A request whose X-Forwarded-For lists more addresses is refused (default 30).',
  }),
});
export const ConcurrencyLimit = obj({
  maxConcurrent: z.int().min(1).max(1000000).meta({
    description: 'Requests in flight at once per key; more get a 429.',
  }),
  key: CELExpression.optional().meta({
    description:
      'CEL giving the counter a request counts on (jwt.sub, jwt.sub + "/" + llm.requestModel): a string, number or bool as written. Unset, failed or another value: one counter.',
  }),
  limitOverride: CELExpression.optional().meta({
    description: "CEL giving this request's limit instead of maxConcurrent (0 refuses it).",
  }),
});
/** The traffic fields that do not run before routing (agentgateway's list, with gw's own added). */
export const POST_ROUTING_ONLY = [
  'timeouts',
  'retry',
  'csrf',
  'rateLimit',
  'ipAccessControl',
  'concurrencyLimit',
  'buffer',
  'headerModifiers',
  'directResponse',
  'hostRewrite',
  'delay',
] as const;
export const Traffic = rules(
  obj({
    phase: z.enum(['PreRouting', 'PostRouting']).default('PostRouting').meta({
      description:
        'PostRouting (the default): the policy runs once a route is chosen, merged with the policies of more specific targets. PreRouting (a Gateway or ListenerSet target): it runs on every routed request to its listeners (or the one sectionName names) before a route is chosen, so what it changes (transformation, extProc) can pick the route and what it refuses is refused even where no route matches; it runs in addition to PostRouting policies. PreRouting takes cors, jwtAuthentication, basicAuthentication, apiKeyAuthentication, extAuth, authorization, extProc and transformation.',
    }),
    timeouts: obj({
      request: Duration.optional().meta({
        description:
          'Time for the whole request, including retries and a streamed response; then 504 (or the response is cut). A duration such as 30s.',
      }),
      backendRequest: Duration.optional().meta({
        description: 'Time for each attempt sent to a backend; then 504. A duration such as 10s.',
      }),
    })
      .optional()
      .meta({ description: 'Timeouts of the whole request and of each attempt sent to a backend.' }),
    retry: Retry.optional().meta({
      description:
        'Retry a request whose connection failed or was reset, or whose response matches codes or condition.',
    }),
    cors: Cors.optional().meta({
      description:
        'CORS: the gateway answers preflights from allowed origins and adds the Access-Control-* headers.',
    }),
    csrf: Csrf.optional().meta({
      description:
        'Refuse state-changing browser requests (not GET, HEAD, OPTIONS, TRACE) from other origins; non-browser requests pass.',
    }),
    jwtAuthentication: JwtAuthentication.optional().meta({
      description: 'Validate a JWT on each request; its claims are then readable in CEL as jwt.<claim>.',
    }),
    basicAuthentication: BasicAuthentication.optional().meta({
      description: 'HTTP Basic authentication against htpasswd entries.',
    }),
    apiKeyAuthentication: ApiKeyAuthentication.optional().meta({
      description:
        'API keys kept in Secrets (or hashed in ConfigMaps); a key’s metadata is readable in CEL as apiKey.<field>.',
    }),
    extAuth: ExtAuth.optional().meta({
      description:
        'Ask an external authorization service (gRPC ext_authz or HTTP) whether each request may pass.',
    }),
    extProc: ExtProc.optional().meta({
      description:
        "Send the request and response to an external processor (Envoy's ext_proc gRPC protocol) that may read and change them.",
    }),
    authorization: Authorization.optional().meta({
      description:
        'CEL rules a request must pass, after authentication; a refused request gets 403. Policies on the same target are combined.',
    }),
    rateLimit: RateLimit.optional().meta({
      description: 'Request or LLM token rate limits, local to each proxy or kept by a rate limit service.',
    }),
    ipAccessControl: IpAccessControl.optional().meta({
      description:
        'Which client addresses may send requests: checked before anything else, with a 403 naming the address.',
    }),
    concurrencyLimit: z.array(ConcurrencyLimit).min(1).max(16).optional().meta({
      description:
        'Requests in flight at once, all limits applied: a slot is held until the response has been sent. Counted per proxy, across its workers.',
    }),
    buffer: Buffer.optional().meta({
      description: 'Read whole request or response bodies into memory before they are passed on.',
    }),
    transformation: Transformation.optional().meta({
      description: 'Change headers and bodies of requests and responses with CEL.',
    }),
    headerModifiers: obj({
      request: HeaderModifier.optional().meta({
        description: 'Header changes to the request sent upstream.',
      }),
      response: HeaderModifier.optional().meta({
        description: 'Header changes to the response returned to the client.',
      }),
    })
      .optional()
      .meta({ description: 'Set, add or remove fixed headers on requests and responses.' }),
    directResponse: DirectResponse.optional().meta({
      description:
        'Answer the request from the gateway with a fixed status, body and headers; no backend is called.',
    }),
    hostRewrite: obj({
      mode: z.enum(['Auto', 'None']).meta({
        description:
          'Auto: each host backend gets its own name as Host; None: the client’s Host. A Service or an IP backend keeps the client’s Host by default, a GwBackend static hostname gets its name. An HTTPRoute urlRewrite hostname wins.',
      }),
    })
      .optional()
      .meta({ description: 'How to rewrite the Host header sent to the backends.' }),
    delay: obj({
      duration: z.string().min(1).max(16384).meta({
        description:
          'A duration or a CEL expression giving a duration or milliseconds; non-positive adds none.',
      }),
    })
      .optional()
      .meta({
        description:
          'Wait before the request is sent on (fault injection); the wait counts against the request timeout.',
      }),
  }),
  {
    rule: `!has(self.phase) || self.phase != 'PreRouting' || [${POST_ROUTING_ONLY.map((k) => `has(self.${k})`).join(', ')}].all(x, !x)`,
    message:
      'phase PreRouting takes cors, jwtAuthentication, basicAuthentication, apiKeyAuthentication, extAuth, authorization, extProc and transformation only',
  },
);

// ---------- frontend ----------
const NamedExpression = obj({
  name: ShortString.meta({ description: 'The attribute name.' }),
  expression: CELExpression.meta({ description: 'CEL giving its value.' }),
});
const Attributes = rules(
  obj({
    add: z
      .array(NamedExpression)
      .min(1)
      .max(32)
      .optional()
      .meta({ description: 'Attributes added, each from CEL.' }),
    remove: z
      .array(TinyString)
      .min(1)
      .max(32)
      .optional()
      .meta({ description: 'Names of attributes removed.' }),
  }),
  atLeastOne(['add', 'remove']),
);
/** An OTLP collector: backendRef xor url, over gRPC (default) or HTTP (then at `path`). */
function otlpEndpoint<S extends z.ZodRawShape>(extra: S) {
  return remoteEndpoint(
    {
      protocol: z
        .enum(['GRPC', 'HTTP'])
        .default('GRPC')
        .meta({ description: 'The OTLP transport: GRPC (default) or HTTP.' }),
      path: LongString.optional().meta({ description: 'The OTLP/HTTP path (protocol HTTP only).' }),
      ...extra,
    },
    [
      {
        rule: "!has(self.path) || self.protocol == 'HTTP'",
        message: 'path is only valid with protocol HTTP',
      },
      { rule: "!has(self.path) || self.path.startsWith('/')", message: 'path must start with /' },
      {
        rule: "!has(self.url) || !self.url.matches('^https?://[^/?#]+/') || self.protocol == 'HTTP'",
        message: 'url path is only valid with protocol HTTP',
      },
    ],
  );
}
export const AccessLog = obj({
  preset: z.enum(['Otel']).optional().meta({
    description:
      "The record's field names: Otel, OpenTelemetry's semantic conventions (client.address, http.request.method, server.address, url.path, http.response.status_code, ...), in the log and its OTLP export. Unset: gw's (src.addr, http.method, http.path, http.status, ...).",
  }),
  filter: CELExpression.optional().meta({ description: 'Logs only when true.' }),
  attributes: obj({
    remove: z
      .array(TinyString)
      .max(32)
      .optional()
      .meta({ description: 'Names of fields left out of the record.' }),
    add: z.array(NamedExpression).max(32).optional().meta({
      description: 'Fields added to the record, each from CEL; a failed evaluation leaves the field out.',
    }),
  })
    .optional()
    .meta({ description: 'Fields added to and removed from each access log record.' }),
  otlp: otlpEndpoint({
    filter: CELExpression.optional().meta({
      description: 'Exports only when true (unset: the access log filter).',
    }),
    attributes: Attributes.optional().meta({
      description: "The exported records' attributes to add and remove (unset: the access log's).",
    }),
  })
    .optional()
    .meta({
      description:
        'Each access log record also exported as an OpenTelemetry log record over OTLP to backendRef (a Service) or url.',
    }),
});
export const CipherSuite = z.enum([
  'TLS13_AES_256_GCM_SHA384',
  'TLS13_AES_128_GCM_SHA256',
  'TLS13_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
]);
const TlsVersion = z.enum(['TLS12', 'TLS13']);
const UINT32_SIZE_MESSAGE = 'must be a number of bytes or a quantity such as 64Ki, from 1 to 4294967295';
/** A size in bytes up to 2^32-1: a number or a quantity. */
const Uint32Size = rules(
  z.union([z.int(), z.string().min(1).max(32)]).meta({
    'x-kubernetes-int-or-string': true,
    maxLength: 32,
  }),
  {
    rule: "type(self) == string ? (isQuantity(self) && !quantity(self).isLessThan(quantity('1')) && !quantity(self).isGreaterThan(quantity('4294967295'))) : (self >= 1 && self <= 4294967295)",
    message: UINT32_SIZE_MESSAGE,
  },
);
const FrameSize = rules(
  z.union([z.int(), z.string().min(1).max(32)]).meta({
    'x-kubernetes-int-or-string': true,
    maxLength: 32,
    description:
      'The largest HTTP/2 frame payload a client may send (SETTINGS_MAX_FRAME_SIZE), 16384 to 16777215 bytes (the HTTP/2 range).',
  }),
  {
    rule: "type(self) == string ? (isQuantity(self) && !quantity(self).isLessThan(quantity('16384')) && !quantity(self).isGreaterThan(quantity('16777215'))) : (self >= 16384 && self <= 16777215)",
    message: 'http2FrameSize must be from 16384 to 16777215 bytes',
  },
);
export const Frontend = rules(
  obj({
    networkAuthorization: Authorization.optional().meta({
      description:
        'CEL rules on each client connection (source.address is its peer, perhaps a proxy in front); a refused connection is closed.',
    }),
    accessLog: AccessLog.optional().meta({
      description: 'The access log of requests: which are logged, their fields, and an optional OTLP export.',
    }),
    tcp: BackendTcp.omit({ connectTimeout: true })
      .extend({
        maxConnections: z.int().min(1).max(1_000_000).optional().meta({
          description:
            'Open client connections per port of the Gateway across the workers of a replica; more are closed at once (default 10000).',
        }),
      })
      .optional()
      .meta({
        description: 'TCP settings of client connections: keepalive probes and the connection limit.',
      }),
    tls: rules(
      obj({
        handshakeTimeout: Duration.optional().meta({
          description:
            'How long a client has to finish the TLS handshake (default: http.firstRequestTimeout).',
        }),
        alpnProtocols: z.array(z.string().min(1).max(64)).min(1).max(16).optional().meta({
          description:
            'The ALPN protocols offered to clients, in order of preference (default: h2, http/1.1 on HTTPS listeners; none on TLS listeners).',
        }),
        minProtocolVersion: TlsVersion.optional().meta({
          description: 'The oldest TLS version accepted from clients: TLS12 or TLS13.',
        }),
        maxProtocolVersion: TlsVersion.optional().meta({
          description: 'The newest TLS version offered to clients: TLS12 or TLS13.',
        }),
        cipherSuites: setList(z.array(CipherSuite).min(1).max(9))
          .optional()
          .meta({ description: 'The cipher suites accepted, in order of preference.' }),
        keyExchangeGroups: setList(z.array(KeyExchangeGroup).min(1).max(4))
          .optional()
          .meta({ description: 'Key exchange groups of the handshake, in order of preference.' }),
      }),
      {
        rule: '!has(self.minProtocolVersion) || !has(self.maxProtocolVersion) || self.minProtocolVersion <= self.maxProtocolVersion',
        message: 'minProtocolVersion must not be above maxProtocolVersion',
      },
    )
      .optional()
      .meta({
        description:
          'TLS settings of the HTTPS and TLS listeners: versions, ciphers, ALPN, handshake timeout.',
      }),
    http: obj({
      maxBufferSize: IntOrByteSize.optional().meta({
        description:
          'The most bytes of a body the proxy keeps in memory when a policy needs it whole: a number or a quantity. Default: 2Mi.',
      }),
      http1MaxHeaders: z.int().min(1).max(4096).optional().meta({
        description: 'The most headers an HTTP/1 request may have; more are answered 431. Default: 2000.',
      }),
      http1IdleTimeout: Duration.optional().meta({
        description: 'How long an HTTP/1 connection may stay idle before it is closed. Default: 10m.',
      }),
      http1HeaderCase: z.enum(['Lowercase', 'Preserve']).optional().meta({
        description:
          "Lowercase (default): header names go upstream in lowercase. Preserve: an HTTP/1 client's request header names go to an HTTP/1 backend as the client spelled them, and the backend's response header names back to the client as it spelled them; Host, names a policy adds, and HTTP/2 on either side are lowercase.",
      }),
      http2KeepaliveInterval: Duration.optional().meta({
        description: 'Send a PING to each HTTP/2 client this often, a duration such as 30s; unset: none.',
      }),
      http2KeepaliveTimeout: Duration.optional().meta({
        description: 'How long a PING may go unanswered before the connection is closed. Default: 20s.',
      }),
      http2WindowSize: Uint32Size.optional().meta({
        description:
          "Each HTTP/2 stream's receive window (SETTINGS_INITIAL_WINDOW_SIZE): bytes or a quantity.",
      }),
      http2ConnectionWindowSize: Uint32Size.optional().meta({
        description: "Each HTTP/2 connection's receive window across its streams: bytes or a quantity.",
      }),
      http2FrameSize: FrameSize.optional(),
      http2MaxHeaderSize: Uint32Size.optional().meta({
        description: 'The largest HTTP/2 header list a client may send (SETTINGS_MAX_HEADER_LIST_SIZE).',
      }),
      maxConnectionDuration: Duration.optional().meta({
        description:
          'How long a client connection may live: then it is closed once its request in flight is answered (HTTP/1) or told GOAWAY (HTTP/2).',
      }),
      maxConcurrentRequests: z.int().min(1).max(4_294_967_295).optional().meta({
        description:
          'Requests in flight per port of the Gateway across the workers of a replica (HTTP/1 requests and HTTP/2 streams, each until its response is sent); one more is answered 503 at once (gRPC: status 14). Unset: no limit.',
      }),
    })
      .optional()
      .meta({
        description: 'HTTP settings of client connections: buffering, HTTP/1 and HTTP/2 limits and timeouts.',
      }),
    tracing: otlpEndpoint({
      randomSampling: CELExpression.optional().meta({
        description:
          'Which requests without a traceparent start a trace: CEL giving true/false or a fraction 0.0-1.0 (e.g. "0.1"); default false.',
      }),
      clientSampling: CELExpression.optional().meta({
        description:
          'Which requests whose client sent a sampled traceparent continue it: CEL giving true/false or a fraction; default true.',
      }),
      filter: CELExpression.optional().meta({
        description: 'CEL: only requests for which it is true have their spans exported.',
      }),
      resources: z.array(NamedExpression).max(32).optional().meta({
        description: 'Resource attributes of every span (CEL evaluated once, without a request).',
      }),
      attributes: Attributes.optional().meta({
        description: 'Span attributes to remove, and to add by CEL evaluated when the request ends.',
      }),
    })
      .optional()
      .meta({
        description:
          'OpenTelemetry tracing: spans of each sampled request exported over OTLP to backendRef (a Service) or url.',
      }),
    metrics: obj({
      attributes: rules(
        obj({
          add: mapList(z.array(NamedExpression).min(1).max(16), ['name']).optional().meta({
            description:
              'Labels added to the request metrics, each a CEL expression evaluated per request; every distinct value is a new series, so keep them few (a team, an environment), never a user id.',
          }),
        }),
        atLeastOne(['add']),
      ).meta({ description: 'The labels to add.' }),
    })
      .optional()
      .meta({
        description: 'Labels added by CEL to the request metrics (gw_requests_total and its duration).',
      }),
    proxyProtocol: obj({
      mode: z.enum(['Optional', 'Strict']).default('Strict').meta({
        description: 'Strict: a connection without the header is closed; Optional: it is taken as it is.',
      }),
      version: z
        .enum(['All', 'V1', 'V2'])
        .default('V2')
        .meta({ description: 'The PROXY versions accepted.' }),
    })
      .optional()
      .meta({
        description:
          "The PROXY protocol header (an L4 load balancer's) connections start with, before TLS or HTTP: its client address is the one source.*, networkAuthorization and the logs see.",
      }),
    connect: obj({
      mode: z.enum(['Deny', 'Route', 'Tunnel']).meta({
        description:
          "Deny (the default without this policy): CONNECT is answered 405. Route: a CONNECT is routed by its authority like any request, its route policies run, and its backend gets a TCP connection the client's bytes flow over after a 200. Tunnel: a CONNECT is answered 200 with no route run for it, and its bytes re-enter the Gateway as a new connection from the same client to the listener port the CONNECT names (no listener on that port: 404), whose listeners, TLS and routes serve it; a CONNECT inside the tunnel is answered 405.",
      }),
    })
      .optional()
      .meta({ description: 'How HTTP CONNECT requests (a client asking for a tunnel) are handled.' }),
  }),
  atLeastOne(
    [
      'networkAuthorization',
      'accessLog',
      'tcp',
      'tls',
      'http',
      'tracing',
      'metrics',
      'proxyProtocol',
      'connect',
    ],
    'frontend must set at least one policy',
  ),
);

// ---------- spec ----------
/** A condition every target must meet, whichever form names the targets. */
const everyTarget = (cond: string) =>
  `(!has(self.targetRefs) || self.targetRefs.all(t, ${cond})) && (!has(self.targetSelectors) || self.targetSelectors.all(t, ${cond}))`;
export const GwPolicySpec = rules(
  obj({
    targetRefs: z.array(PolicyTargetReference).min(1).max(16).optional().meta({
      description:
        "The objects this policy applies to, by name, in the policy's namespace; set this or targetSelectors. Prefer it when reconciliation latency matters.",
    }),
    targetSelectors: z.array(PolicyTargetSelector).min(1).max(16).optional().meta({
      description:
        "The objects this policy applies to, by label, in the policy's namespace; set this or targetRefs.",
    }),
    traffic: Traffic.optional().meta({
      description:
        'Policies run on each request: authentication, authorization, rate limits, CORS, timeouts, retries, transformations, ...',
    }),
    frontend: Frontend.optional().meta({
      description:
        'Policies of the client side of a Gateway (targets must be Gateways): connections, TLS, HTTP limits, access log, tracing, metrics.',
    }),
    backend: BackendFull.optional().meta({
      description:
        'Policies of the connections to backends (a Service, GwBackend, ...): TLS, TCP, HTTP, tunnel, credentials, health, AI and MCP settings. A GwBackend’s own policies win a field both set.',
    }),
    strategy: obj({
      inheritance: z.enum(['Default', 'Override']).optional().meta({
        description:
          "Default (unset): a policy on a more specific target (a listener over its Gateway, a route, a route rule, the route's own filters) wins a field both set. Override: the fields this policy's traffic sets keep its value for every target below its own (authorization keeps the rules gathered down to it); between two Override policies the less specific wins. Traffic policies only.",
      }),
    })
      .optional()
      .meta({ description: 'How this policy merges with policies on more specific targets.' }),
  }),
  exactlyOne(['targetRefs', 'targetSelectors']),
  atLeastOne(['traffic', 'frontend', 'backend'], 'at least one of traffic, frontend or backend must be set'),
  {
    rule: '!has(self.strategy) || !has(self.strategy.inheritance) || (has(self.traffic) && !has(self.frontend) && !has(self.backend))',
    message: 'strategy.inheritance may only be set on traffic policies',
  },
  {
    rule: `!has(self.traffic) || !has(self.traffic.phase) || self.traffic.phase != 'PreRouting' || (${everyTarget("t.kind in ['Gateway', 'ListenerSet']")})`,
    message:
      'traffic.phase PreRouting runs before a route is chosen: every target must be a Gateway or a ListenerSet',
  },
  {
    rule: `!has(self.frontend) || (${everyTarget("t.kind == 'Gateway'")})`,
    message: 'frontend policies apply to Gateways: every target must be a Gateway',
  },
  {
    rule: everyTarget(
      "!has(t.port) || (t.kind == 'Gateway' && has(self.frontend) && !has(self.traffic) && !has(self.backend))",
    ),
    message: 'port may only be set on a policy with only a frontend section that targets a Gateway',
  },
);

export const PolicyAncestorStatus = obj({
  ancestorRef: ParentReference,
  controllerName: z.string().min(1).max(253),
  conditions: Conditions,
});
export const GwPolicyStatus = obj({
  ancestors: z.array(PolicyAncestorStatus).max(16).optional(),
});

export type GwPolicySpec = z.output<typeof GwPolicySpec>;
export type GwPolicyStatus = z.output<typeof GwPolicyStatus>;
