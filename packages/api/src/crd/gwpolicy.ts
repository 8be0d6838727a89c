// GwPolicy: policies attached to Gateways, listeners, routes and backends by targetRefs (or a label
// selector), in three sections: traffic (per request), frontend (per downstream connection) and
// backend (per upstream connection). Spec: "GwPolicy", "Limits".
import { z } from 'zod';
import { atLeastOne, atMostOne, exactlyOne, obj, rules, setList } from './kube.ts';
import {
  ApiKeyAuthentication,
  Authorization,
  BackendFull,
  BackendTcp,
  BasicAuthentication,
  Buffer,
  FailureMode,
  HeaderModifier,
  JwtAuthentication,
  RateLimit,
  Transformation,
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

export const PolicyTargetReference = rules(
  obj({
    group: Group,
    kind: Kind,
    name: ObjectName,
    sectionName: SectionName.optional(),
    port: Port.optional().meta({
      description: 'A Gateway port; only for frontend policies targeting a Gateway.',
    }),
  }),
  sectionXorPort,
);
export const PolicyTargetSelector = rules(
  obj({
    group: Group,
    kind: Kind,
    matchLabels: z.record(z.string().min(1).max(317), z.string().max(63)).meta({ maxProperties: 64 }),
    sectionName: SectionName.optional(),
    port: Port.optional(),
  }),
  sectionXorPort,
);

// ---------- traffic ----------
const ExtAuthGrpc = obj({
  contextExtensions: z.record(z.string().min(1).max(256), LongString).meta({ maxProperties: 64 }).optional(),
  requestMetadata: z.record(z.string().min(1).max(256), CELExpression).meta({ maxProperties: 64 }).optional(),
});
const ExtAuthHttp = obj({
  path: CELExpression.optional().meta({ description: 'CEL; default the original path.' }),
  redirect: CELExpression.optional(),
  body: CELExpression.optional(),
  allowedRequestHeaders: z.array(HeaderName).max(64).optional(),
  addRequestHeaders: z.record(HeaderName, CELExpression).meta({ maxProperties: 64 }).optional(),
  allowedResponseHeaders: z.array(HeaderName).max(64).optional(),
  responseMetadata: z
    .record(z.string().min(1).max(256), CELExpression)
    .meta({ maxProperties: 64 })
    .optional(),
});
export const ExtAuth = rules(
  obj({
    backendRef: LocalBackendObjectReference,
    grpc: ExtAuthGrpc.optional(),
    http: ExtAuthHttp.optional(),
    failureMode: FailureMode.default('FailClosed'),
    timeout: Duration.optional(),
  }),
  exactlyOne(['grpc', 'http']),
);
export const BodySendMode = z.enum(['None', 'Buffered', 'BufferedPartial', 'FullDuplexStreamed']);
export const ExtProc = obj({
  backendRef: LocalBackendObjectReference,
  failureMode: FailureMode.default('FailClosed'),
  requestBodyMode: BodySendMode.default('None'),
  responseBodyMode: BodySendMode.default('None'),
});
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
    .max(16),
});
export const Cors = obj({
  allowOrigins: z.array(ShortString).min(1).max(64).optional(),
  allowMethods: z.array(TinyString).max(16).optional(),
  allowHeaders: z.array(HeaderName).max(64).optional(),
  exposeHeaders: z.array(HeaderName).max(64).optional(),
  allowCredentials: z.boolean().optional(),
  maxAge: z.int().min(1).max(2147483647).optional().meta({
    description: 'Seconds a browser may cache the preflight answer.',
  }),
});
export const DirectResponse = obj({
  status: z.int().min(200).max(599),
  body: z.string().max(65536).optional(),
});
export const Retry = obj({
  attempts: z.int().min(1).max(10).default(1),
  backoff: Duration.optional(),
  codes: z.array(z.int().min(400).max(599)).min(1).max(16),
});
export const Traffic = obj({
  phase: z.enum(['PreRouting', 'PostRouting']).default('PostRouting'),
  timeouts: obj({ request: Duration.optional(), backendRequest: Duration.optional() }).optional(),
  retry: Retry.optional(),
  cors: Cors.optional(),
  csrf: Csrf.optional(),
  jwtAuthentication: JwtAuthentication.optional(),
  basicAuthentication: BasicAuthentication.optional(),
  apiKeyAuthentication: ApiKeyAuthentication.optional(),
  extAuth: ExtAuth.optional(),
  extProc: ExtProc.optional(),
  authorization: Authorization.optional(),
  rateLimit: RateLimit.optional(),
  buffer: Buffer.optional(),
  transformation: Transformation.optional(),
  headerModifiers: obj({
    request: HeaderModifier.optional(),
    response: HeaderModifier.optional(),
  }).optional(),
  directResponse: DirectResponse.optional(),
  delay: obj({
    duration: LongString.meta({
      description:
        'A duration or a CEL expression giving a duration or milliseconds; non-positive adds none.',
    }),
  }).optional(),
});

// ---------- frontend ----------
export const AccessLog = obj({
  filter: CELExpression.optional().meta({ description: 'Logs only when true.' }),
  attributes: obj({
    remove: z.array(TinyString).max(32).optional(),
    add: z
      .array(obj({ name: TinyString, expression: CELExpression }))
      .max(32)
      .optional(),
  }).optional(),
  otlp: remoteEndpoint({}).optional(),
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
export const Frontend = rules(
  obj({
    networkAuthorization: Authorization.optional(),
    accessLog: AccessLog.optional(),
    tcp: BackendTcp.omit({ connectTimeout: true }).optional(),
    tls: rules(
      obj({
        handshakeTimeout: Duration.optional(),
        alpnProtocols: z.array(z.string().min(1).max(64)).min(1).max(16).optional(),
        minProtocolVersion: TlsVersion.optional(),
        maxProtocolVersion: TlsVersion.optional(),
        cipherSuites: setList(z.array(CipherSuite).min(1).max(9)).optional(),
      }),
      {
        rule: '!has(self.minProtocolVersion) || !has(self.maxProtocolVersion) || self.minProtocolVersion <= self.maxProtocolVersion',
        message: 'minProtocolVersion must not be above maxProtocolVersion',
      },
    ).optional(),
    http: obj({
      maxBufferSize: IntOrByteSize.optional(),
      http1MaxHeaders: z.int().min(1).max(4096).optional(),
      http1IdleTimeout: Duration.optional(),
      http2KeepaliveInterval: Duration.optional(),
      http2KeepaliveTimeout: Duration.optional(),
    }).optional(),
    tracing: obj({
      otlp: remoteEndpoint({}),
      randomSampling: CELExpression.optional(),
      attributes: rules(
        obj({
          add: z
            .array(obj({ name: TinyString, expression: CELExpression }))
            .min(1)
            .max(32)
            .optional()
            .meta({ description: 'Span attributes set from CEL expressions.' }),
          remove: z
            .array(TinyString)
            .min(1)
            .max(32)
            .optional()
            .meta({ description: 'Span attributes left out.' }),
        }),
        atLeastOne(['add', 'remove']),
      ).optional(),
    }).optional(),
  }),
  atLeastOne(
    ['networkAuthorization', 'accessLog', 'tcp', 'tls', 'http', 'tracing'],
    'frontend must set at least one policy',
  ),
);

// ---------- spec ----------
/** A condition every target must meet, whichever form names the targets. */
const everyTarget = (cond: string) =>
  `(!has(self.targetRefs) || self.targetRefs.all(t, ${cond})) && (!has(self.targetSelectors) || self.targetSelectors.all(t, ${cond}))`;
export const GwPolicySpec = rules(
  obj({
    targetRefs: z.array(PolicyTargetReference).min(1).max(16).optional(),
    targetSelectors: z.array(PolicyTargetSelector).min(1).max(16).optional(),
    traffic: Traffic.optional(),
    frontend: Frontend.optional(),
    backend: BackendFull.optional(),
  }),
  exactlyOne(['targetRefs', 'targetSelectors']),
  atLeastOne(['traffic', 'frontend', 'backend'], 'at least one of traffic, frontend or backend must be set'),
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
