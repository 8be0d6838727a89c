// Policy blocks shared by GwPolicy's sections, GwBackend.spec.policies and GwModel.spec.policies:
// authorization, authentication, rate limits, backend connection settings (BackendSimple /
// BackendWithAI / BackendFull), prompt guards, MCP policies. Field names and limits follow the spec's
// "Resources and their fields"; a rule states its constraint in the words a user needs to fix it.
import { z } from 'zod';
import { AuthKey, AuthLocation, AuthSecretRef, AwsAuth, BackendAuth, GcpAuth } from './backend-auth.ts';
import {
  alone,
  atLeastOne,
  atMostOne,
  exactlyOne,
  Json,
  mapList,
  maxEntries,
  obj,
  rules,
  setList,
} from './kube.ts';
import {
  CELExpression,
  CredentialLocation,
  Duration,
  HeaderName,
  IntOrByteSize,
  LocalBackendObjectReference,
  LocalCACertificateRef,
  LocalSecretKeyRef,
  LocalSecretObjectRef,
  LongString,
  notBuilt,
  remoteEndpoint,
  ShortString,
  SNI,
  TinyString,
  Url,
} from './types.ts';

const Mode3 = z.enum(['Strict', 'Optional', 'Permissive']);
export const FailureMode = z.enum(['FailClosed', 'FailOpen']);

/**
 * agentgateway's conditional form of a policy: entries tried in order, the first whose CEL condition
 * holds applies (an entry without one is the fallback, last); none holds: the policy does not apply.
 */
export function conditional<T extends z.ZodType>(policy: T, what: string) {
  return rules(
    z
      .array(
        obj({
          condition: CELExpression.optional().meta({ description: 'CEL; the entry applies when true.' }),
          policy,
        }),
      )
      .min(1)
      .max(16),
    {
      // has() on an indexed entry is not evaluated by the runtime's CEL: read the last flag of a map
      rule: 'self.filter(e, !has(e.condition)).size() <= 1 && (self.all(e, has(e.condition)) || !self.map(e, has(e.condition))[size(self) - 1])',
      message: 'conditional entries without condition must be last',
    },
  )
    .optional()
    .meta({
      description: `The conditional form of ${what}: entries tried in order, the first whose condition is true applies; an entry without condition is the fallback (last only); none true: ${what} does not apply. Set this or the other fields.`,
    });
}

// ---------- authorization ----------
export const Authorization = obj({
  action: z.enum(['Allow', 'Require', 'Deny']).default('Allow'),
  policy: obj({ matchExpressions: z.array(CELExpression).min(1).max(256) }),
});

// ---------- authentication ----------
const jwksRemoteFields = {
  cacheDuration: Duration.optional().meta({ description: 'How long fetched keys are kept (default 10m).' }),
  jwksPath: LongString.optional().meta({
    description:
      'The path the backendRef serves the keys at (required with backendRef; with url, part of the url).',
  }),
};
// agentgateway's CRD requires jwksPath with backendRef; gw keeps its default (`/`, the spec's
// remote {backendRef xor url} names no path), so manifests written for either are accepted.
const jwksPathRules = [
  { rule: '!has(self.url) || !has(self.jwksPath)', message: 'jwksPath may not be set when url is set' },
];
export const JwksRemote = remoteEndpoint(jwksRemoteFields, jwksPathRules);
export const Jwks = rules(
  obj({
    remote: JwksRemote.optional(),
    inline: z.string().min(2).max(65536).optional().meta({ description: 'A JWKS document as JSON.' }),
  }),
  exactlyOne(['remote', 'inline'], 'jwks: exactly one of remote or inline must be set'),
);
export const JwtProvider = obj({
  issuer: ShortString.meta({ description: 'Matches the iss claim.' }),
  audiences: z.array(ShortString).min(1).max(64).optional(),
  jwks: Jwks,
});
export const McpIdp = z.enum(['Auth0', 'Authentik', 'Descope', 'Entra', 'Keycloak', 'Okta', 'Generic']);
export const JwtMcpConfig = obj({
  resourceMetadata: maxEntries(z.record(z.string().min(1).max(256), Json), 64).optional(),
  provider: McpIdp.optional(),
  clientId: ShortString.optional(),
});
export const JwtAuthentication = obj({
  mode: Mode3.default('Strict'),
  providers: z.array(JwtProvider).min(1).max(64),
  location: CredentialLocation.optional(),
  preserveToken: z.boolean().default(false),
  mcp: JwtMcpConfig.optional(),
});

const MatchLabels = maxEntries(z.record(z.string().min(1).max(317), z.string().max(63)), 64);
export const ApiKeyAuthentication = rules(
  obj({
    mode: Mode3.default('Strict'),
    secretRef: LocalSecretObjectRef.optional(),
    secretSelector: obj({ matchLabels: MatchLabels }).optional(),
    configMapSelector: obj({ matchLabels: MatchLabels }).optional().meta({
      description: 'ConfigMaps hold only hashed keys (keyHash: sha256:<hex>); a raw key is rejected.',
    }),
    location: CredentialLocation.optional(),
  }),
  exactlyOne(['secretRef', 'secretSelector', 'configMapSelector']),
);

/** htpasswd line `<user>:<hash>`, hashed with MD5 ($apr1$), bcrypt ($2a$/$2b$/$2y$), SHA-1 ({SHA}) or crypt. */
export const HTPASSWD_PATTERN = '^[^:]+:([$]apr1[$].+|[$]2[aby][$].+|[{]SHA[}].+|[./0-9A-Za-z]{13})$';
export const BasicAuthentication = rules(
  obj({
    mode: z.enum(['Strict', 'Optional']).default('Strict'),
    realm: ShortString.default('Restricted'),
    users: z
      .array(
        rules(z.string().min(3).max(512), {
          rule: `self.matches('${HTPASSWD_PATTERN}')`,
          message:
            'must be an htpasswd line <user>:<hash> with an MD5 ($apr1$), bcrypt ($2y$), SHA-1 ({SHA}) or crypt hash; plain passwords are not accepted',
        }),
      )
      .min(1)
      .max(256)
      .optional(),
    secretRef: LocalSecretKeyRef.optional().meta({
      description: 'Secret holding htpasswd lines (key .htaccess).',
    }),
    location: CredentialLocation.optional(),
  }),
  exactlyOne(['users', 'secretRef']),
);

// ---------- external authorization ----------
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
/** A URL without a path: where a gRPC service is reached by URL. */
export const urlWithoutPath = rules(Url, {
  rule: "self.matches('^https?://[^/?#]+$')",
  message: 'url must not include a path',
});
const extAuthFields = {
  backendRef: LocalBackendObjectReference.optional(),
  url: Url.optional().meta({
    description:
      'The service by URL instead of backendRef: TLS with the system roots for https; its path is not used.',
  }),
  grpc: ExtAuthGrpc.optional(),
  http: ExtAuthHttp.optional(),
  failureMode: FailureMode.optional().meta({ description: 'FailClosed (default) or FailOpen.' }),
  timeout: Duration.optional(),
  cache: obj({
    key: z.array(CELExpression).min(1).max(16).meta({
      description:
        'CEL whose values together are the cache key; it must cover everything the service decides on.',
    }),
    maxEntries: z
      .int()
      .min(1)
      .max(2147483647)
      .optional()
      .meta({ description: 'Answers kept at most (default 10000).' }),
    ttl: CELExpression.meta({
      description:
        'How long to reuse an allowed answer: a duration, or CEL giving a duration, a timestamp or Unix seconds.',
    }),
  })
    .optional()
    .meta({
      description: 'Allowed answers reused for requests with the same key; denials are never cached.',
    }),
  forwardBody: obj({
    maxSize: rules(IntOrByteSize, {
      rule: "type(self) == string ? (!isQuantity(self) || (quantity(self).isGreaterThan(quantity('0')) && !quantity(self).isGreaterThan(quantity('4294967295')))) : (self >= 1 && self <= 4294967295)",
      message: 'value must be at least 1 byte and fit within uint32',
    }).meta({
      description:
        'Largest body, in bytes, buffered and sent to the authorization server; a larger body is answered 413.',
    }),
  })
    .optional()
    .meta({ description: 'Sends the request body to the authorization server (buffered up to maxSize).' }),
};
const extAuthRules = [
  {
    rule: '!(has(self.forwardBody) && has(self.http) && has(self.http.body))',
    message: 'forwardBody cannot be used with http.body',
  },
  {
    rule: "!has(self.url) || !self.url.matches('^https?://[^/?#]+/') || has(self.http)",
    message: 'url path is only valid with http',
  },
  {
    rule: "!has(self.url) || !self.url.matches('^https?://[^/?#]+/') || !has(self.http) || !has(self.http.path)",
    message: 'http.path may not be set when url includes a path',
  },
];
/** One external authorization call (the form a conditional entry and the backend section take). */
export const ExtAuthPolicy = rules(
  obj(extAuthFields),
  exactlyOne(['backendRef', 'url']),
  exactlyOne(['grpc', 'http']),
  ...extAuthRules,
);
export const ExtAuth = rules(
  obj({ ...extAuthFields, conditional: conditional(ExtAuthPolicy, 'extAuth') }),
  {
    rule: 'has(self.conditional) || [has(self.backendRef), has(self.url)].filter(x, x).size() == 1',
    message: 'exactly one of backendRef or url must be set unless conditional is set',
  },
  {
    rule: 'has(self.conditional) || [has(self.grpc), has(self.http)].filter(x, x).size() == 1',
    message: 'exactly one of grpc or http must be set',
  },
  ...extAuthRules,
  alone('conditional', Object.keys(extAuthFields)),
);
// ---------- rate limits ----------
export const RateLimitUnit = z.enum(['Seconds', 'Minutes', 'Hours']);
export const LocalRateLimit = rules(
  obj({
    requests: z.int().min(1).optional(),
    tokens: z.int().min(1).optional(),
    unit: RateLimitUnit,
    burst: z.int().min(0).optional(),
  }),
  exactlyOne(['requests', 'tokens']),
);
export const GlobalRateLimit = rules(
  obj({
    backendRef: LocalBackendObjectReference.optional().meta({
      description: 'The Envoy rate limit service (gRPC).',
    }),
    url: urlWithoutPath.optional().meta({
      description:
        'The service by URL instead of backendRef: http://host[:port], or https://host[:port] for TLS with the system roots.',
    }),
    domain: ShortString,
    descriptors: z
      .array(
        rules(
          obj({
            entries: z
              .array(obj({ name: TinyString, expression: CELExpression }))
              .min(1)
              .max(16),
            unit: z.enum(['Requests', 'Tokens']).optional().meta({
              description: 'What the descriptor counts: Requests (default) or Tokens.',
            }),
            type: z.enum(['Requests', 'Tokens']).optional().meta({
              description: "gw's earlier name of unit; set one of them.",
            }),
            cost: CELExpression.optional().meta({
              description:
                'CEL: what one request counts, a whole number. Unset: 1 for Requests, the total token count for Tokens. A Requests cost is evaluated with the request; a Tokens cost once the response ends, with llm.* and response.* known. A failed evaluation leaves the descriptor out.',
            }),
            limitOverride: CELExpression.optional().meta({
              description:
                'CEL: the limit the service applies instead of its own, a map such as {"unit": "minute", "requestsPerUnit": 5} (unit: second, minute, hour, day, month or year). A failed evaluation leaves the descriptor out.',
            }),
          }),
          atMostOne(['unit', 'type']),
        ),
      )
      .min(1)
      .max(16),
    failureMode: FailureMode.default('FailClosed').meta({
      description:
        'When the rate limit service cannot be reached or gives no verdict: FailClosed (default, as agentgateway) answers 500, FailOpen lets the request through.',
    }),
    timeout: Duration.optional(),
  }),
  exactlyOne(['backendRef', 'url']),
);
const rateLimitFields = {
  local: z.array(LocalRateLimit).min(1).max(16).optional(),
  global: GlobalRateLimit.optional(),
};
export const RateLimit = rules(
  obj({
    ...rateLimitFields,
    conditional: conditional(rules(obj(rateLimitFields), atLeastOne(['local', 'global'])), 'rateLimit'),
  }),
  atLeastOne(['local', 'global', 'conditional']),
  alone('conditional', Object.keys(rateLimitFields)),
);

// ---------- headers and transformation ----------
const HeaderValue = obj({ name: HeaderName, value: z.string().min(1).max(4096) });
export const HeaderModifier = obj({
  set: z.array(HeaderValue).max(16).optional(),
  add: z.array(HeaderValue).max(16).optional(),
  remove: z.array(HeaderName).max(16).optional(),
});
const TransformSide = obj({
  set: z
    .array(obj({ name: HeaderName, value: CELExpression }))
    .max(16)
    .optional(),
  add: z
    .array(obj({ name: HeaderName, value: CELExpression }))
    .max(16)
    .optional(),
  remove: z.array(HeaderName).max(16).optional(),
  body: CELExpression.optional(),
  metadata: maxEntries(z.record(z.string().min(1).max(256), CELExpression), 16)
    .optional()
    .meta({ description: 'Values stored for later policies and CEL as metadata.<name>; evaluated first.' }),
});
const transformationFields = { request: TransformSide.optional(), response: TransformSide.optional() };
export const TransformationPolicy = rules(obj(transformationFields), atLeastOne(['request', 'response']));
export const Transformation = rules(
  obj({ ...transformationFields, conditional: conditional(TransformationPolicy, 'transformation') }),
  atLeastOne(['request', 'response', 'conditional']),
  alone('conditional', Object.keys(transformationFields)),
);

// ---------- backend connection settings ----------
export const Keepalive = obj({
  retries: z.int().min(1).max(64).default(9),
  time: Duration.default('180s'),
  interval: Duration.default('180s'),
});
export const BackendTcp = obj({ keepalive: Keepalive.optional(), connectTimeout: Duration.optional() });

export const KeyExchangeGroup = z.enum(['X25519', 'P-256', 'P-384', 'X25519_MLKEM768']);
export const BackendTls = rules(
  obj({
    certificateSource: z.enum(['Inline', 'SPIFFE']).default('Inline'),
    mtlsCertificateRef: z
      .array(LocalSecretObjectRef)
      .max(1)
      .optional()
      .meta({ description: 'Secret with tls.crt, tls.key and optionally ca.cert.' }),
    caCertificateRefs: z
      .array(LocalCACertificateRef)
      .max(1)
      .optional()
      .meta({ description: 'CA bundle (key ca.crt); takes priority over ca.cert of mtlsCertificateRef.' }),
    insecureSkipVerify: z.enum(['All', 'Hostname']).optional(),
    sni: SNI.optional(),
    verifySubjectAltNames: z.array(ShortString).min(1).max(16).optional(),
    alpnProtocols: z.array(z.string().min(1).max(64)).min(1).max(16).optional(),
    keyExchangeGroups: setList(z.array(KeyExchangeGroup).min(1).max(4)).optional(),
  }),
  atMostOne(['verifySubjectAltNames', 'insecureSkipVerify']),
);
export const BackendHttp = obj({
  version: z.enum(['HTTP1', 'HTTP2']).optional().meta({ description: 'Inferred when unset.' }),
  requestTimeout: Duration.optional(),
});
export const Tunnel = remoteEndpoint({ mode: z.enum(['Auto', 'Connect']).default('Auto') });

// backend auth: ./backend-auth.ts
export { AwsAuth, BackendAuth, CrossAppAccessAuth, JwtSignAuth, OAuthTokenExchange } from './backend-auth.ts';

/** A guard service takes its key where the service expects it. */
const guardAuthLocation = notBuilt(AuthLocation.optional(), 'auth.location on a guard service');

export const Health = rules(
  obj({
    passive: obj({
      consecutiveFailures: z.int().min(1).max(1000).default(5),
      ejectionTime: Duration.default('30s'),
    }).optional(),
    active: obj({
      path: rules(LongString, { rule: "self.startsWith('/')", message: 'path must start with /' }).default(
        '/',
      ),
      interval: Duration.default('10s'),
      timeout: Duration.default('1s'),
      healthyThreshold: z.int().min(1).max(100).default(1),
      unhealthyThreshold: z.int().min(1).max(100).default(3),
    }).optional(),
    eviction: obj({
      consecutiveFailures: z.int().min(0).max(2147483647).optional().meta({
        description:
          'Unhealthy answers in a row that evict the endpoint (unset and 0: 1, or only healthThreshold when that is set).',
      }),
      duration: Duration.default('3s').meta({
        description: 'The first eviction; the n-th in a row lasts n times as long.',
      }),
      healthThreshold: z.int().min(0).max(100).optional().meta({
        description:
          'Evict when an unhealthy answer leaves the health score (an average of recent answers, a new endpoint at 100) below this percentage; with consecutiveFailures too, either evicts.',
      }),
      restoreHealth: z.int().min(0).max(100).optional().meta({
        description:
          'The health score (percent) an endpoint comes back from eviction with; unset: the one it had.',
      }),
    })
      .optional()
      .meta({ description: "agentgateway's name for passive checks; set one of passive and eviction." }),
    unhealthyCondition: CELExpression.optional().meta({
      description: 'CEL over the response: true counts it as unhealthy (default: a 5xx, or no response).',
    }),
  }),
  atLeastOne(['passive', 'active', 'eviction', 'unhealthyCondition']),
  atMostOne(['passive', 'eviction']),
);

// ---------- AI: prompt guards, enrichment ----------
export const ContentScope = z.enum(['SystemPrompt', 'Messages', 'ToolOutput', 'ToolInput']);
export const CustomResponse = obj({
  message: LongString.optional().meta({
    description: 'Default: a generic rejected-due-to-inappropriate-content text.',
  }),
  statusCode: z.int().min(200).max(599).default(403),
});
export const RegexGuard = rules(
  obj({
    action: z.enum(['Mask', 'Reject', 'Audit']).default('Mask').meta({
      description:
        "What a match does: Mask replaces it (not applied to streamed responses), Reject answers the guard's response, Audit records it and passes the content on. Default Mask, as agentgateway's and a standalone file's.",
    }),
    matches: z
      .array(obj({ pattern: LongString, name: TinyString.optional() }))
      .max(64)
      .optional()
      .meta({
        description:
          "Patterns, each {pattern, name}: gw's spec gives matches this shape, where agentgateway's CRD lists bare pattern strings.",
      }),
    builtins: setList(
      z.array(z.enum(['Ssn', 'CreditCard', 'PhoneNumber', 'Email', 'CaSin'])).max(5),
    ).optional(),
  }),
  atLeastOne(['matches', 'builtins'], 'regex: at least one of matches or builtins must be set'),
);
export const PromptInjectionGuard = obj({
  threshold: z
    .string()
    .regex(/^(0(\.[0-9]{1,3})?|1(\.0{1,3})?)$/)
    .optional()
    .meta({
      description:
        'The score (families of injection phrasing matched in one text, over 3, at most 1) at which a text is flagged, a decimal from 0 to 1 written as a string; default "0.33": one match flags.',
    }),
  action: z.enum(['Reject', 'Audit']).default('Reject'),
});
export const WebhookGuard = obj({
  backendRef: LocalBackendObjectReference,
  messageFormat: z.enum(['Guardrail', 'Raw']).optional().meta({
    description:
      "Guardrail (default): the guardrail webhook contract. Raw (request guards only): the request's own messages are posted as {messages, model} and the messages of the answer replace them.",
  }),
  path: z
    .string()
    .regex(/^\//)
    .max(1024)
    .optional()
    .meta({ description: 'The path called (default /request or /response).' }),
  minSizeBytes: z.int().min(0).optional().meta({
    description: 'The webhook is called only when what it would be sent is at least this many bytes.',
  }),
  action: z.enum(['Enforce', 'Audit']).default('Enforce'),
  headers: maxEntries(z.record(z.string().min(1).max(256), CELExpression), 64).optional(),
  failureMode: FailureMode.optional().meta({
    description:
      'When the webhook fails (unreachable, timeout, no verdict): FailClosed (default) answers an error, FailOpen passes the content on.',
  }),
  forwardHeaderMatches: z
    .array(
      obj({
        name: HeaderName,
        type: z.enum(['Exact', 'RegularExpression']).default('Exact'),
        value: z.string().min(1).max(4096),
      }),
    )
    .max(64)
    .optional()
    .meta({ description: "The client's request headers forwarded to the webhook: those matching an entry." }),
});
const GuardConnection = obj({
  tcp: BackendTcp.optional(),
  tls: BackendTls.optional(),
  http: BackendHttp.optional(),
  tunnel: Tunnel.optional().meta({ description: 'The forward proxy the guard service is reached through.' }),
});
export const BedrockGuardrails = obj({
  identifier: ShortString,
  version: ShortString,
  region: ShortString,
  action: z.enum(['Reject', 'Audit']).default('Reject'),
  policies: obj({
    tcp: BackendTcp.optional(),
    tls: BackendTls.optional(),
    http: BackendHttp.optional(),
    tunnel: Tunnel.optional().meta({
      description: 'The forward proxy the guard service is reached through.',
    }),
    auth: rules(
      obj({
        key: AuthKey.optional(),
        secretRef: AuthSecretRef.optional(),
        aws: AwsAuth.optional(),
        location: guardAuthLocation,
      }),
      exactlyOne(['key', 'secretRef', 'aws']),
    ).optional(),
  }).optional(),
});
export const OpenAIModeration = obj({
  model: ShortString.optional(),
  policies: obj({
    tcp: BackendTcp.optional(),
    tls: BackendTls.optional(),
    http: BackendHttp.optional(),
    tunnel: Tunnel.optional().meta({
      description: 'The forward proxy the guard service is reached through.',
    }),
    auth: rules(
      obj({ key: AuthKey.optional(), secretRef: AuthSecretRef.optional(), location: guardAuthLocation }),
      exactlyOne(['key', 'secretRef']),
    ).optional(),
  }).optional(),
});
export const GoogleModelArmor = obj({
  templateId: ShortString,
  projectId: ShortString,
  location: ShortString.default('us-central1'),
  policies: GuardConnection.extend({
    auth: rules(obj({ gcp: GcpAuth.optional() }), exactlyOne(['gcp'], 'auth: gcp must be set'))
      .optional()
      .meta({
        description:
          "gcp: {} (or unset): the proxy's Application Default Credentials; gcp.secretRef and IdToken are not supported by this build of gw yet (the controller reports them by name).",
      }),
  }).optional(),
});
const guardFields = {
  regex: RegexGuard.optional(),
  webhook: WebhookGuard.optional(),
  bedrockGuardrails: BedrockGuardrails.optional(),
  googleModelArmor: GoogleModelArmor.optional(),
  contentScopes: setList(z.array(ContentScope).min(1).max(4))
    .optional()
    .meta({ description: "gw's earlier name of scope; set one of them." }),
  scope: setList(z.array(ContentScope).min(1).max(4))
    .optional()
    .meta({ description: 'Which content the guard inspects (default all of it).' }),
  response: CustomResponse.optional(),
};
/** The guard kinds of a request guard, one per entry (a response guard takes all but two). */
export const CRD_REQUEST_GUARD_KINDS = [
  'regex',
  'webhook',
  'openAIModeration',
  'bedrockGuardrails',
  'googleModelArmor',
  'promptInjection',
] as const;
const CRD_RESPONSE_GUARD_KINDS = CRD_REQUEST_GUARD_KINDS.filter(
  (k) => k !== 'openAIModeration' && k !== 'promptInjection',
);
export const RequestGuard = rules(
  obj({
    ...guardFields,
    openAIModeration: OpenAIModeration.optional(),
    promptInjection: PromptInjectionGuard.optional().meta({
      description:
        "Injection phrasing found by gw itself, no service called (instruction overrides, role hijacks, system-prompt extraction, chat-template delimiters, safety bypasses, encoded instructions); the model's own turns and defensive clauses are not read as attacks.",
    }),
  }),
  exactlyOne(CRD_REQUEST_GUARD_KINDS),
  atMostOne(['scope', 'contentScopes']),
  {
    rule: "!has(self.promptInjection) || ((!has(self.scope) || !self.scope.exists(s, s == 'ToolInput')) && (!has(self.contentScopes) || !self.contentScopes.exists(s, s == 'ToolInput')))",
    message: "promptInjection does not read ToolInput: tool call arguments are the model's own output",
  },
);
export const ResponseGuard = rules(
  obj(guardFields),
  exactlyOne(CRD_RESPONSE_GUARD_KINDS),
  atMostOne(['scope', 'contentScopes']),
  {
    rule: "!has(self.webhook) || !has(self.webhook.messageFormat) || self.webhook.messageFormat != 'Raw'",
    message: "webhook messageFormat Raw replaces a request's messages: it works on request guards only",
  },
);
export const PromptGuard = rules(
  obj({
    streaming: z.enum(['Enabled']).optional().meta({
      description:
        'Enabled: the guards also apply to streamed responses and realtime websocket messages; unset: they do not.',
    }),
    request: z.array(RequestGuard).min(1).max(8).optional(),
    response: z.array(ResponseGuard).min(1).max(8).optional(),
  }),
  atLeastOne(['request', 'response']),
);
/** Fields of the JSON request body and their values, each field named once. */
const FieldValues = mapList(
  z
    .array(
      obj({
        field: ShortString.meta({ description: 'A key of the JSON request body.' }),
        value: Json.meta({ description: 'Any JSON value.' }),
      }),
    )
    .min(1)
    .max(64),
  ['field'],
);
const Message = obj({ role: TinyString, content: z.string().min(1).max(65536) });
export const PromptEnrichment = rules(
  obj({ prepend: z.array(Message).max(16).optional(), append: z.array(Message).max(16).optional() }),
  atLeastOne(['prepend', 'append']),
);
export const AiRouteType = z.enum([
  'AnthropicTokenCount',
  'Completions',
  'Detect',
  'Embeddings',
  'GeminiCountTokens',
  'GenerateContent',
  'Messages',
  'Models',
  'Passthrough',
  'Realtime',
  'Rerank',
  'Responses',
]);
/** Request body fields set from CEL expressions, each field once. */
export const FieldExpressions = mapList(
  z
    .array(obj({ field: ShortString, expression: CELExpression }))
    .min(1)
    .max(64),
  ['field'],
);
export const AiPolicy = obj({
  promptGuard: PromptGuard.optional(),
  promptEnrichment: PromptEnrichment.optional(),
  defaults: FieldValues.optional().meta({
    description: 'Request body fields set when the client did not set them.',
  }),
  overrides: FieldValues.optional().meta({
    description: "Request body fields always set, replacing the client's.",
  }),
  modelAliases: maxEntries(z.record(ShortString, ShortString), 64).optional(),
  prompt: rules(
    obj({
      prepend: z.array(obj({ role: z.string(), content: z.string() })).optional(),
      append: z.array(obj({ role: z.string(), content: z.string() })).optional(),
    }),
    atLeastOne(['prepend', 'append']),
  )
    .optional()
    .meta({
      description:
        "agentgateway's name of promptEnrichment: messages put before and after the client's. Set one of the two.",
    }),
  promptCaching: obj({
    cacheSystem: z.boolean().default(true),
    cacheMessages: z.boolean().default(true),
    cacheTools: z.boolean().default(false),
    cacheMessageOffset: z.int().min(0).max(2147483647).default(0),
    minTokens: z.int().min(0).max(2147483647).default(1024),
  })
    .optional()
    .meta({
      description:
        'Cache breakpoints the gateway adds for Anthropic (cache_control) and Bedrock Converse (cachePoint): the end of the system prompt when at least minTokens (words × 1.3), the second-to-last message (cacheMessageOffset further back), the end of the tools; four at most, counting the client’s own.',
    }),
  routes: maxEntries(z.record(z.string().min(1).max(1024), AiRouteType), 64)
    .optional()
    .meta({
      description:
        'Which API a request is, by the end of its path ("*" for any other; the longest suffix first). Unset: the standard paths tell (/v1/chat/completions, /v1/messages, …). Passthrough forwards a request as it is, with the provider\'s credential; Detect does so and reads its usage. GenerateContent and GeminiCountTokens are Google’s native Gemini API (the model in the path). Realtime takes the WebSocket of OpenAI’s Realtime API (the model in ?model=). This build refuses Rerank by name. Every provider of a backend has the same routes.',
    }),
  transformations: FieldExpressions.optional().meta({
    description: 'Request fields set from CEL over llmRequest (the request so far) before it is converted.',
  }),
  finalTransformations: FieldExpressions.optional().meta({
    description: "Fields of the request in the provider's own format, set from CEL once it is converted.",
  }),
});

// ---------- MCP ----------
export const MCP_METHOD_PATTERN = '^([*]|[^*]+|[^*]+/[*]|[*]/[^*]+)$';
/** When a processor sees a method: its request, its result, both (Full), or neither (Off). */
export const McpMethodPhase = z.enum(['Request', 'Response', 'Full', 'Off']);
export const McpGuardrails = obj({
  processors: z
    .array(
      obj({
        remote: remoteEndpoint({
          failureMode: FailureMode.default('FailClosed'),
          metadata: maxEntries(z.record(z.string().min(1).max(256), CELExpression), 64).optional(),
          allowedRequestHeaders: z.array(HeaderName).max(64).optional().meta({
            description:
              'the client request headers sent to the processor; unset or empty: all of them, pseudo-headers (:authority, :method, :path, :scheme) included',
          }),
          disallowedRequestHeaders: z.array(HeaderName).max(64).optional().meta({
            description: 'headers never sent to the processor, even when allowedRequestHeaders lists them',
          }),
        }),
        methods: rules(
          z.record(z.string().min(1).max(256), McpMethodPhase),
          { rule: 'self.size() >= 1 && self.size() <= 64', message: 'methods must have 1 to 64 entries' },
          {
            rule: `self.all(k, k.matches('${MCP_METHOD_PATTERN}'))`,
            message:
              'method keys are exact names, a prefix wildcard like tools/*, a suffix wildcard like */list, or *',
          },
        ).meta({ maxProperties: 64, minProperties: 1 }),
      }),
    )
    .min(1)
    .max(16),
});
export const McpAuthentication = obj({
  resourceMetadata: maxEntries(z.record(z.string().min(1).max(256), Json), 64).optional(),
  provider: McpIdp.optional(),
  issuer: ShortString.optional(),
  audiences: z.array(ShortString).min(1).max(64).optional(),
  jwks: rules(
    obj({
      remote: JwksRemote.optional().meta({
        description: "The spec's form: the keys' endpoint under remote.",
      }),
      backendRef: LocalBackendObjectReference.optional(),
      url: Url.optional(),
      ...jwksRemoteFields,
    }),
    exactlyOne(['remote', 'backendRef', 'url'], 'jwks: exactly one of remote, backendRef or url must be set'),
    ...jwksPathRules,
    {
      rule: '!has(self.remote) || (!has(self.cacheDuration) && !has(self.jwksPath))',
      message: 'cacheDuration and jwksPath go in remote when remote is set',
    },
  ).meta({
    description:
      "The keys' endpoint: the spec writes it under remote, agentgateway's CRD directly here (backendRef or url); both are accepted.",
  }),
  mode: Mode3.default('Strict'),
  clientId: ShortString.optional(),
  clientSecretRef: LocalSecretKeyRef.optional().meta({ description: 'Default key clientSecret.' }),
});
export const McpPolicy = obj({
  authorization: Authorization.optional(),
  authentication: McpAuthentication.optional().meta({
    description: 'Deprecated: use traffic.jwtAuthentication.mcp.',
  }),
  guardrails: McpGuardrails.optional(),
});

/** BackendSimple: connection settings every backend takes. */
export const backendSimpleFields = {
  tcp: BackendTcp.optional(),
  tls: BackendTls.optional(),
  http: BackendHttp.optional(),
  tunnel: Tunnel.optional(),
  auth: BackendAuth.optional(),
  transformation: TransformationPolicy.optional(),
  health: Health.optional(),
};
/** BackendFull: BackendSimple plus the AI and MCP settings. */
export const BackendFull = obj({
  ...backendSimpleFields,
  ai: AiPolicy.optional(),
  mcp: McpPolicy.optional(),
  extAuth: ExtAuthPolicy.optional().meta({
    description:
      "An external authorization check for requests sent to the targeted backend, after the route's policies.",
  }),
});
export const BackendWithAI = obj({ ...backendSimpleFields, ai: AiPolicy.optional() });

export const Buffer = obj({
  request: obj({
    maxBytes: IntOrByteSize.optional(),
    failureMode: FailureMode.default('FailClosed'),
  }).optional(),
  response: obj({
    maxBytes: IntOrByteSize.optional(),
    failureMode: FailureMode.default('FailClosed'),
  }).optional(),
});
