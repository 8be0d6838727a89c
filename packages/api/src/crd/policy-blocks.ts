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
  HeaderValueText,
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
          policy: policy.meta({ description: `The ${what} settings this entry applies.` }),
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
  action: z.enum(['Allow', 'Require', 'Deny']).default('Allow').meta({
    description:
      'What a matching expression means. Allow: once any Allow rule exists, a request must match one. Require: every expression must be true. Deny: a match refuses the request, whatever else allows it. Default: Allow.',
  }),
  policy: obj({
    matchExpressions: z.array(CELExpression).min(1).max(256).meta({
      description:
        'CEL expressions over the request (request.*, jwt.*, source.address, ...), each true or false.',
    }),
  }).meta({ description: 'The rules of this block, all with the same action.' }),
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
    remote: JwksRemote.optional().meta({
      description: 'Fetch the keys from an endpoint: a Service (backendRef and jwksPath) or a url.',
    }),
    inline: z.string().min(2).max(65536).optional().meta({ description: 'A JWKS document as JSON.' }),
  }),
  exactlyOne(['remote', 'inline'], 'jwks: exactly one of remote or inline must be set'),
);
export const JwtProvider = obj({
  issuer: ShortString.meta({ description: 'Matches the iss claim.' }),
  audiences: z.array(ShortString).min(1).max(64).optional().meta({
    description: 'Accepted values of the aud claim; unset: any audience.',
  }),
  jwks: Jwks.meta({
    description: "The provider's public keys that verify token signatures (remote or inline).",
  }),
});
export const McpIdp = z.enum(['Auth0', 'Authentik', 'Descope', 'Entra', 'Keycloak', 'Okta', 'Generic']);
const RESOURCE_METADATA_DESCRIPTION =
  'Extra fields of the OAuth protected resource metadata the gateway serves for MCP clients (name to any JSON value).';
const MCP_PROVIDER_DESCRIPTION =
  'The identity provider in front of the MCP server, so the gateway can adapt its OAuth discovery to it. Generic: a standard OAuth/OIDC server.';
const MCP_CLIENT_ID_DESCRIPTION =
  'A client id handed to MCP clients; when set, the gateway answers dynamic client registration with it instead of passing it to the identity provider.';
export const JwtMcpConfig = obj({
  resourceMetadata: maxEntries(z.record(z.string().min(1).max(256), Json), 64)
    .optional()
    .meta({ description: RESOURCE_METADATA_DESCRIPTION }),
  provider: McpIdp.optional().meta({ description: MCP_PROVIDER_DESCRIPTION }),
  clientId: ShortString.optional().meta({ description: MCP_CLIENT_ID_DESCRIPTION }),
});
const MODE3_DESCRIPTION =
  'Strict (default): a request without a valid credential is refused with 401. Optional: a credential that is present must be valid; requests without one pass. Permissive: never refuses; a valid credential is still read for later policies.';
const LOCATION_DESCRIPTION =
  'Where the credential is read from. Default: the Authorization header, Bearer prefix.';
export const JwtAuthentication = obj({
  mode: Mode3.default('Strict').meta({ description: MODE3_DESCRIPTION }),
  providers: z.array(JwtProvider).min(1).max(64).meta({
    description: 'The token issuers accepted; a token is checked against the provider whose issuer it names.',
  }),
  location: CredentialLocation.optional().meta({ description: LOCATION_DESCRIPTION }),
  preserveToken: z.boolean().default(false).meta({
    description:
      'Keep the validated token in the request sent upstream; by default it is removed. Default: false.',
  }),
  mcp: JwtMcpConfig.optional().meta({
    description: 'Serve the MCP OAuth discovery endpoints for MCP clients, backed by these providers.',
  }),
});

const MatchLabels = maxEntries(z.record(z.string().min(1).max(317), z.string().max(63)), 64);
export const ApiKeyAuthentication = rules(
  obj({
    mode: Mode3.default('Strict').meta({ description: MODE3_DESCRIPTION }),
    secretRef: LocalSecretObjectRef.optional().meta({
      description:
        'A Secret whose entries are the API keys: each value a key, or JSON with key or keyHash and optional metadata (readable in CEL as apiKey.<field>).',
    }),
    secretSelector: obj({
      matchLabels: MatchLabels.meta({ description: 'Labels a Secret must carry to be used.' }),
    })
      .optional()
      .meta({
        description: "The Secrets of the policy's namespace with these labels, each holding API keys.",
      }),
    configMapSelector: obj({
      matchLabels: MatchLabels.meta({ description: 'Labels a ConfigMap must carry to be used.' }),
    })
      .optional()
      .meta({
        description: 'ConfigMaps hold only hashed keys (keyHash: sha256:<hex>); a raw key is rejected.',
      }),
    location: CredentialLocation.optional().meta({ description: LOCATION_DESCRIPTION }),
  }),
  exactlyOne(['secretRef', 'secretSelector', 'configMapSelector']),
);

/** htpasswd line `<user>:<hash>`, hashed with MD5 ($apr1$), bcrypt ($2a$/$2b$/$2y$), SHA-1 ({SHA}) or crypt. */
export const HTPASSWD_PATTERN = '^[^:]+:([$]apr1[$].+|[$]2[aby][$].+|[{]SHA[}].+|[./0-9A-Za-z]{13})$';
export const BasicAuthentication = rules(
  obj({
    mode: z.enum(['Strict', 'Optional']).default('Strict').meta({
      description:
        'Strict (default): a request without valid credentials gets 401. Optional: credentials that are sent must be valid; requests without any pass.',
    }),
    realm: ShortString.default('Restricted').meta({
      description: 'The realm named in the WWW-Authenticate header of a 401. Default: Restricted.',
    }),
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
      .optional()
      .meta({
        description:
          'The users as htpasswd lines <user>:<hash> (MD5 $apr1$, bcrypt, SHA-1 {SHA} or crypt); plain passwords are refused.',
      }),
    secretRef: LocalSecretKeyRef.optional().meta({
      description: 'Secret holding htpasswd lines (key .htaccess).',
    }),
    location: CredentialLocation.optional().meta({
      description: 'Where the credentials are read from. Default: the Authorization header, Basic prefix.',
    }),
  }),
  exactlyOne(['users', 'secretRef']),
);

// ---------- external authorization ----------
const ExtAuthGrpc = obj({
  contextExtensions: z
    .record(z.string().min(1).max(256), LongString)
    .meta({ maxProperties: 64 })
    .optional()
    .meta({ description: 'Fixed key-value pairs sent in the context_extensions of each check.' }),
  requestMetadata: z
    .record(z.string().min(1).max(256), CELExpression)
    .meta({ maxProperties: 64 })
    .optional()
    .meta({ description: "Name to CEL: values sent in the check's metadata_context.filter_metadata." }),
});
const ExtAuthHttp = obj({
  path: CELExpression.optional().meta({ description: 'CEL; default the original path.' }),
  redirect: CELExpression.optional().meta({
    description:
      'CEL giving where to redirect a request the service answers 401 or 403 (e.g. a sign-in page) instead of that answer.',
  }),
  body: CELExpression.optional().meta({
    description:
      'CEL giving the body of the check request: a string or bytes as they are, another value as JSON.',
  }),
  allowedRequestHeaders: z.array(HeaderName).max(64).optional().meta({
    description: "The client's request headers copied to the check request. Default: Authorization.",
  }),
  addRequestHeaders: z
    .record(HeaderName, CELExpression)
    .meta({ maxProperties: 64 })
    .optional()
    .meta({ description: 'Header name to CEL: headers added to the check request.' }),
  allowedResponseHeaders: z.array(HeaderName).max(64).optional().meta({
    description: "Headers of the service's allowing answer copied onto the request sent upstream.",
  }),
  responseMetadata: z
    .record(z.string().min(1).max(256), CELExpression)
    .meta({ maxProperties: 64 })
    .optional()
    .meta({
      description:
        "Name to CEL over the service's answer: values later CEL reads as extauthz.<name> (e.g. for logs).",
    }),
});
/** A URL without a path: where a gRPC service is reached by URL. */
export const urlWithoutPath = rules(Url, {
  rule: "self.matches('^https?://[^/?#]+$')",
  message: 'url must not include a path',
});
const extAuthFields = {
  backendRef: LocalBackendObjectReference.optional().meta({
    description: 'The authorization service (a Service and its port); set this or url.',
  }),
  url: Url.optional().meta({
    description:
      'The service by URL instead of backendRef: TLS with the system roots for https; its path is not used.',
  }),
  grpc: ExtAuthGrpc.optional().meta({
    description: "Speak Envoy's ext_authz gRPC protocol to the service; set this or http.",
  }),
  http: ExtAuthHttp.optional().meta({
    description:
      'Send each check as a plain HTTP request: a 2xx answer allows, a 5xx or no answer is a failure (failureMode), any other answer goes back to the client. Set this or grpc.',
  }),
  failureMode: FailureMode.optional().meta({ description: 'FailClosed (default) or FailOpen.' }),
  timeout: Duration.optional().meta({
    description:
      'How long to wait for the service to answer a check; then failureMode applies. Default: 200ms.',
  }),
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
    requests: z.int().min(1).optional().meta({
      description: 'Requests allowed per unit; set this or tokens. More are answered 429.',
    }),
    tokens: z.int().min(1).optional().meta({
      description: 'LLM tokens (input plus output) allowed per unit; set this or requests.',
    }),
    unit: RateLimitUnit.meta({
      description: 'The period the limit refills over: Seconds, Minutes or Hours.',
    }),
    burst: z.int().min(0).optional().meta({
      description:
        'Extra requests or tokens allowed at once above the per-unit limit: the bucket holds limit plus burst. Default: 0.',
    }),
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
    domain: ShortString.meta({
      description: 'The domain sent to the rate limit service, which picks the set of limits it applies.',
    }),
    descriptors: z
      .array(
        rules(
          obj({
            entries: z
              .array(
                obj({
                  name: TinyString.meta({ description: 'The descriptor key.' }),
                  expression: CELExpression.meta({ description: 'CEL giving the value sent for the key.' }),
                }),
              )
              .min(1)
              .max(16)
              .meta({ description: 'The key-value pairs of the descriptor, each value from CEL.' }),
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
      .max(16)
      .meta({
        description: 'The descriptors sent with each request; the service counts each against its limits.',
      }),
    failureMode: FailureMode.default('FailClosed').meta({
      description:
        'When the rate limit service cannot be reached or gives no verdict: FailClosed (default, as agentgateway) answers 500, FailOpen lets the request through.',
    }),
    timeout: Duration.optional().meta({
      description:
        'How long to wait for the rate limit service to answer; then failureMode applies. Default: 100ms.',
    }),
  }),
  exactlyOne(['backendRef', 'url']),
);
const rateLimitFields = {
  local: z.array(LocalRateLimit).min(1).max(16).optional().meta({
    description: 'Limits counted by each proxy on its own, all applied; a request over any of them gets 429.',
  }),
  global: GlobalRateLimit.optional().meta({
    description:
      "Limits kept by an external rate limit service (Envoy's gRPC rate limit protocol), shared by every proxy.",
  }),
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
const HeaderValue = obj({
  name: HeaderName.meta({ description: 'The header name.' }),
  value: HeaderValueText.min(1).max(4096).meta({ description: 'The header value, as written.' }),
});
export const HeaderModifier = obj({
  set: z.array(HeaderValue).max(16).optional().meta({
    description: 'Headers set to these values, replacing any the message already has.',
  }),
  add: z.array(HeaderValue).max(16).optional().meta({
    description: 'Headers added, keeping values the message already has.',
  }),
  remove: z.array(HeaderName).max(16).optional().meta({ description: 'Names of headers removed.' }),
});
const CelHeader = obj({
  name: HeaderName.meta({ description: 'The header name.' }),
  value: CELExpression.meta({ description: 'CEL giving the header value.' }),
});
const TransformSide = obj({
  set: z.array(CelHeader).max(16).optional().meta({
    description: 'Headers set from CEL, replacing any the message already has.',
  }),
  add: z.array(CelHeader).max(16).optional().meta({
    description: 'Headers added from CEL, keeping values the message already has.',
  }),
  remove: z.array(HeaderName).max(16).optional().meta({ description: 'Names of headers removed.' }),
  body: CELExpression.optional().meta({
    description: 'CEL giving a new body: a string or bytes as they are, another value as JSON.',
  }),
  metadata: maxEntries(z.record(z.string().min(1).max(256), CELExpression), 16)
    .optional()
    .meta({ description: 'Values stored for later policies and CEL as metadata.<name>; evaluated first.' }),
});
const transformationFields = {
  request: TransformSide.optional().meta({ description: 'Changes to the request before it is sent on.' }),
  response: TransformSide.optional().meta({ description: 'Changes to the response before it is returned.' }),
};
export const TransformationPolicy = rules(obj(transformationFields), atLeastOne(['request', 'response']));
export const Transformation = rules(
  obj({ ...transformationFields, conditional: conditional(TransformationPolicy, 'transformation') }),
  atLeastOne(['request', 'response', 'conditional']),
  alone('conditional', Object.keys(transformationFields)),
);

// ---------- backend connection settings ----------
export const Keepalive = obj({
  retries: z.int().min(1).max(64).default(9).meta({
    description: 'Probes left unanswered before the connection is dropped. Default: 9.',
  }),
  time: Duration.default('180s').meta({
    description: 'How long a connection is idle before the first probe. Default: 180s.',
  }),
  interval: Duration.default('180s').meta({ description: 'Time between probes. Default: 180s.' }),
});
export const BackendTcp = obj({
  keepalive: Keepalive.optional().meta({
    description: 'TCP keepalive probes on the connections (enabled when this is set).',
  }),
  connectTimeout: Duration.optional().meta({
    description: 'How long to wait for a TCP connection to open, a duration such as 5s.',
  }),
});

export const KeyExchangeGroup = z.enum(['X25519', 'P-256', 'P-384', 'X25519_MLKEM768']);
export const BackendTls = rules(
  obj({
    certificateSource: z.enum(['Inline', 'SPIFFE']).default('Inline').meta({
      description:
        "Inline (default): the certificates named here. SPIFFE (the workload's SPIFFE identity): this build of gw cannot use it yet and leaves the backend unused.",
    }),
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
    insecureSkipVerify: z.enum(['All', 'Hostname']).optional().meta({
      description:
        "Turns verification off. All: the server's certificate is not checked at all. Hostname: it must chain to a trusted CA, but its names are not checked.",
    }),
    sni: SNI.optional().meta({
      description: "The server name sent in the handshake; default the backend's host.",
    }),
    verifySubjectAltNames: z.array(ShortString).min(1).max(16).optional().meta({
      description: "Names the server's certificate must carry (one of them); default the destination host.",
    }),
    alpnProtocols: z.array(z.string().min(1).max(64)).min(1).max(16).optional().meta({
      description: 'ALPN protocols offered to the backend, in order of preference. Default: h2, http/1.1.',
    }),
    keyExchangeGroups: setList(z.array(KeyExchangeGroup).min(1).max(4))
      .optional()
      .meta({ description: 'Key exchange groups of the handshake, in order of preference.' }),
  }),
  atMostOne(['verifySubjectAltNames', 'insecureSkipVerify']),
);
export const BackendHttp = obj({
  version: z.enum(['HTTP1', 'HTTP2']).optional().meta({ description: 'Inferred when unset.' }),
  requestTimeout: Duration.optional().meta({
    description: 'How long to wait for the response once the request is sent, a duration such as 30s.',
  }),
});
export const Tunnel = remoteEndpoint({
  mode: z.enum(['Auto', 'Connect']).default('Auto').meta({
    description:
      'Auto (default): CONNECT for TLS and non-HTTP traffic, plain HTTP requests in absolute form. Connect: always a CONNECT tunnel.',
  }),
});

// backend auth: ./backend-auth.ts
export { AwsAuth, BackendAuth, CrossAppAccessAuth, JwtSignAuth, OAuthTokenExchange } from './backend-auth.ts';

/** A guard service takes its key where the service expects it. */
const guardAuthLocation = notBuilt(AuthLocation.optional(), 'auth.location on a guard service');

export const Health = rules(
  obj({
    passive: obj({
      consecutiveFailures: z.int().min(1).max(1000).default(5).meta({
        description:
          'Unhealthy answers in a row (by default a 5xx or no answer) that eject the endpoint. Default: 5.',
      }),
      ejectionTime: Duration.default('30s').meta({
        description: 'How long the first ejection lasts; repeated ejections last longer. Default: 30s.',
      }),
    })
      .optional()
      .meta({
        description: 'Eject an endpoint from load balancing when its answers to requests keep failing.',
      }),
    active: obj({
      path: rules(LongString, { rule: "self.startsWith('/')", message: 'path must start with /' })
        .default('/')
        .meta({ description: 'The path probed with GET. Default: /.' }),
      interval: Duration.default('10s').meta({ description: 'Time between probes. Default: 10s.' }),
      timeout: Duration.default('1s').meta({
        description: 'How long a probe may take before it counts as failed. Default: 1s.',
      }),
      healthyThreshold: z.int().min(1).max(100).default(1).meta({
        description: 'Passed probes in a row that bring an unhealthy endpoint back. Default: 1.',
      }),
      unhealthyThreshold: z.int().min(1).max(100).default(3).meta({
        description: 'Failed probes in a row that take the endpoint out. Default: 3.',
      }),
    })
      .optional()
      .meta({
        description:
          'Probe each endpoint with an HTTP GET; with active alone, answers to requests eject nothing.',
      }),
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
  statusCode: z
    .int()
    .min(200)
    .max(599)
    .default(403)
    .meta({ description: 'The HTTP status of the refusal. Default: 403.' }),
});
export const RegexGuard = rules(
  obj({
    action: z.enum(['Mask', 'Reject', 'Audit']).default('Mask').meta({
      description:
        "What a match does: Mask replaces it (not applied to streamed responses), Reject answers the guard's response, Audit records it and passes the content on. Default Mask, as agentgateway's and a standalone file's.",
    }),
    matches: z
      .array(
        obj({
          pattern: LongString.meta({ description: 'A regular expression to look for.' }),
          name: TinyString.optional().meta({
            description:
              'Names the pattern: a masked match becomes <name> (unset: <MASKED>), and a refusal names it.',
          }),
        }),
      )
      .max(64)
      .optional()
      .meta({
        description:
          "Patterns, each {pattern, name}: gw's spec gives matches this shape, where agentgateway's CRD lists bare pattern strings.",
      }),
    builtins: setList(z.array(z.enum(['Ssn', 'CreditCard', 'PhoneNumber', 'Email', 'CaSin'])).max(5))
      .optional()
      .meta({
        description:
          'Built-in detectors: US social security numbers, credit card numbers, phone numbers, email addresses, Canadian social insurance numbers.',
      }),
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
  action: z.enum(['Reject', 'Audit']).default('Reject').meta({
    description: 'Reject (default): a flagged request is refused. Audit: it is recorded and passed on.',
  }),
});
export const WebhookGuard = obj({
  backendRef: LocalBackendObjectReference.meta({
    description: 'The webhook service (a Service and its port) implementing the guardrail webhook contract.',
  }),
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
  action: z.enum(['Enforce', 'Audit']).default('Enforce').meta({
    description:
      "Enforce (default): the webhook's verdict applies. Audit: it is only recorded and the content passes.",
  }),
  headers: maxEntries(z.record(z.string().min(1).max(256), CELExpression), 64)
    .optional()
    .meta({ description: 'Header name to CEL: headers sent with each webhook call.' }),
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
const GUARD_TCP = 'TCP settings of the connections to the guard service.';
const GUARD_TLS = 'TLS to the guard service.';
const GUARD_HTTP = 'HTTP settings of the calls to the guard service.';
const GUARD_POLICIES = 'How the guard service is reached: connection settings and its credential.';
const GuardConnection = obj({
  tcp: BackendTcp.optional().meta({ description: GUARD_TCP }),
  tls: BackendTls.optional().meta({ description: GUARD_TLS }),
  http: BackendHttp.optional().meta({ description: GUARD_HTTP }),
  tunnel: Tunnel.optional().meta({ description: 'The forward proxy the guard service is reached through.' }),
});
export const BedrockGuardrails = obj({
  identifier: ShortString.meta({ description: 'The Bedrock guardrail id.' }),
  version: ShortString.meta({ description: 'The guardrail version, e.g. 1 or DRAFT.' }),
  region: ShortString.meta({ description: 'The AWS region of the guardrail, e.g. us-east-1.' }),
  action: z.enum(['Reject', 'Audit']).default('Reject').meta({
    description:
      'Reject (default): content the guardrail blocks is refused. Audit: it is recorded and passed on.',
  }),
  policies: obj({
    tcp: BackendTcp.optional().meta({ description: GUARD_TCP }),
    tls: BackendTls.optional().meta({ description: GUARD_TLS }),
    http: BackendHttp.optional().meta({ description: GUARD_HTTP }),
    tunnel: Tunnel.optional().meta({
      description: 'The forward proxy the guard service is reached through.',
    }),
    auth: rules(
      obj({
        key: AuthKey.optional(),
        secretRef: AuthSecretRef.optional(),
        aws: AwsAuth.optional().meta({ description: 'SigV4 signing with AWS credentials.' }),
        location: guardAuthLocation,
      }),
      exactlyOne(['key', 'secretRef', 'aws']),
    )
      .optional()
      .meta({ description: 'The credential for Bedrock: exactly one of key, secretRef or aws.' }),
  })
    .optional()
    .meta({ description: GUARD_POLICIES }),
});
export const OpenAIModeration = obj({
  model: ShortString.optional().meta({ description: "The moderation model; default OpenAI's." }),
  policies: obj({
    tcp: BackendTcp.optional().meta({ description: GUARD_TCP }),
    tls: BackendTls.optional().meta({ description: GUARD_TLS }),
    http: BackendHttp.optional().meta({ description: GUARD_HTTP }),
    tunnel: Tunnel.optional().meta({
      description: 'The forward proxy the guard service is reached through.',
    }),
    auth: rules(
      obj({ key: AuthKey.optional(), secretRef: AuthSecretRef.optional(), location: guardAuthLocation }),
      exactlyOne(['key', 'secretRef']),
    )
      .optional()
      .meta({ description: 'The OpenAI API key: key or secretRef.' }),
  })
    .optional()
    .meta({ description: GUARD_POLICIES }),
});
export const GoogleModelArmor = obj({
  templateId: ShortString.meta({ description: 'The Model Armor template that decides what is flagged.' }),
  projectId: ShortString.meta({ description: 'The Google Cloud project of the template.' }),
  location: ShortString.default('us-central1').meta({
    description: 'The Google Cloud location of the template. Default: us-central1.',
  }),
  policies: GuardConnection.extend({
    auth: rules(
      obj({ gcp: GcpAuth.optional().meta({ description: 'Google credentials for Model Armor.' }) }),
      exactlyOne(['gcp'], 'auth: gcp must be set'),
    )
      .optional()
      .meta({
        description:
          "gcp: {} (or unset): the proxy's Application Default Credentials; gcp.secretRef and IdToken are not supported by this build of gw yet (the controller reports them by name).",
      }),
  })
    .optional()
    .meta({ description: GUARD_POLICIES }),
});
const guardFields = {
  regex: RegexGuard.optional().meta({
    description: 'Look for regular expressions and built-in patterns (no service called).',
  }),
  webhook: WebhookGuard.optional().meta({ description: 'Ask your own guardrail webhook service.' }),
  bedrockGuardrails: BedrockGuardrails.optional().meta({ description: 'Ask an AWS Bedrock guardrail.' }),
  googleModelArmor: GoogleModelArmor.optional().meta({
    description: 'Ask a Google Cloud Model Armor template.',
  }),
  contentScopes: setList(z.array(ContentScope).min(1).max(4))
    .optional()
    .meta({ description: "gw's earlier name of scope; set one of them." }),
  scope: setList(z.array(ContentScope).min(1).max(4))
    .optional()
    .meta({ description: 'Which content the guard inspects (default all of it).' }),
  response: CustomResponse.optional().meta({
    description: 'The answer the client gets when this guard refuses: message and status code.',
  }),
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
    openAIModeration: OpenAIModeration.optional().meta({
      description: "Ask OpenAI's moderation API whether the request's content is harmful.",
    }),
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
    request: z.array(RequestGuard).min(1).max(8).optional().meta({
      description:
        "Guards run on the client's request before it is sent to the model, in order; each entry one kind.",
    }),
    response: z.array(ResponseGuard).min(1).max(8).optional().meta({
      description: "Guards run on the model's answer before it is returned, in order; each entry one kind.",
    }),
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
const Message = obj({
  role: TinyString.meta({ description: 'The role of the message, e.g. system or user.' }),
  content: z.string().min(1).max(65536).meta({ description: 'The text of the message.' }),
});
/** agentgateway's prompt message: the same as Message, without limits. */
const PromptMessage = obj({
  role: z.string().meta({ description: 'The role of the message, e.g. system or user.' }),
  content: z.string().meta({ description: 'The text of the message.' }),
});
export const PromptEnrichment = rules(
  obj({
    prepend: z.array(Message).max(16).optional().meta({
      description: "Messages put before the client's messages in every request.",
    }),
    append: z.array(Message).max(16).optional().meta({
      description: "Messages put after the client's messages in every request.",
    }),
  }),
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
    .array(
      obj({
        field: ShortString.meta({ description: 'A key of the JSON request body.' }),
        expression: CELExpression.meta({ description: 'CEL giving the value of the field.' }),
      }),
    )
    .min(1)
    .max(64),
  ['field'],
);
export const AiPolicy = obj({
  promptGuard: PromptGuard.optional().meta({
    description: 'Guards that inspect prompts and answers and refuse, mask or record what they flag.',
  }),
  promptEnrichment: PromptEnrichment.optional().meta({
    description: "Fixed messages put before and after the client's messages.",
  }),
  defaults: FieldValues.optional().meta({
    description: 'Request body fields set when the client did not set them.',
  }),
  overrides: FieldValues.optional().meta({
    description: "Request body fields always set, replacing the client's.",
  }),
  modelAliases: maxEntries(z.record(ShortString, ShortString), 64).optional().meta({
    description: 'Requested model name to the model sent to the provider, e.g. fast: gpt-4o-mini.',
  }),
  prompt: rules(
    obj({
      prepend: z.array(PromptMessage).optional().meta({ description: "Messages put before the client's." }),
      append: z.array(PromptMessage).optional().meta({ description: "Messages put after the client's." }),
    }),
    atLeastOne(['prepend', 'append']),
  )
    .optional()
    .meta({
      description:
        "agentgateway's name of promptEnrichment: messages put before and after the client's. Set one of the two.",
    }),
  promptCaching: obj({
    cacheSystem: z
      .boolean()
      .default(true)
      .meta({ description: 'Mark the end of the system prompt for caching. Default: true.' }),
    cacheMessages: z
      .boolean()
      .default(true)
      .meta({ description: 'Mark a message near the end of the conversation for caching. Default: true.' }),
    cacheTools: z
      .boolean()
      .default(false)
      .meta({ description: 'Mark the end of the tool definitions for caching. Default: false.' }),
    cacheMessageOffset: z.int().min(0).max(2147483647).default(0).meta({
      description: 'How many messages before the second-to-last the message breakpoint goes. Default: 0.',
    }),
    minTokens: z.int().min(0).max(2147483647).default(1024).meta({
      description: 'The estimated size in tokens a system prompt needs before it is marked. Default: 1024.',
    }),
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
          failureMode: FailureMode.default('FailClosed').meta({
            description:
              'When the processor cannot be reached or fails: FailClosed (default) refuses the MCP message, FailOpen passes it on.',
          }),
          metadata: maxEntries(z.record(z.string().min(1).max(256), CELExpression), 64)
            .optional()
            .meta({ description: 'Name to CEL: context values sent to the processor with each message.' }),
          allowedRequestHeaders: z.array(HeaderName).max(64).optional().meta({
            description:
              'the client request headers sent to the processor; unset or empty: all of them, pseudo-headers (:authority, :method, :path, :scheme) included',
          }),
          disallowedRequestHeaders: z.array(HeaderName).max(64).optional().meta({
            description: 'headers never sent to the processor, even when allowedRequestHeaders lists them',
          }),
        }).meta({ description: 'The processor service: backendRef (a Service) or url.' }),
        methods: rules(
          z.record(z.string().min(1).max(256), McpMethodPhase),
          { rule: 'self.size() >= 1 && self.size() <= 64', message: 'methods must have 1 to 64 entries' },
          {
            rule: `self.all(k, k.matches('${MCP_METHOD_PATTERN}'))`,
            message:
              'method keys are exact names, a prefix wildcard like tools/*, a suffix wildcard like */list, or *',
          },
        ).meta({
          maxProperties: 64,
          minProperties: 1,
          description:
            'MCP method to when the processor sees it: Request, Response, Full (both) or Off. Keys are exact names, tools/* style prefixes, */list style suffixes or *; the most specific wins, and unmatched methods skip the processor.',
        }),
      }),
    )
    .min(1)
    .max(16)
    .meta({ description: 'External processors that inspect MCP messages, each for the methods it names.' }),
});
export const McpAuthentication = obj({
  resourceMetadata: maxEntries(z.record(z.string().min(1).max(256), Json), 64)
    .optional()
    .meta({ description: RESOURCE_METADATA_DESCRIPTION }),
  provider: McpIdp.optional().meta({ description: MCP_PROVIDER_DESCRIPTION }),
  issuer: ShortString.optional().meta({ description: 'The token issuer; matches the iss claim.' }),
  audiences: z.array(ShortString).min(1).max(64).optional().meta({
    description: 'Accepted values of the aud claim; unset: any audience.',
  }),
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
  mode: Mode3.default('Strict').meta({ description: MODE3_DESCRIPTION }),
  clientId: ShortString.optional().meta({ description: MCP_CLIENT_ID_DESCRIPTION }),
  clientSecretRef: LocalSecretKeyRef.optional().meta({ description: 'Default key clientSecret.' }),
});
export const McpPolicy = obj({
  authorization: Authorization.optional().meta({
    description:
      'Which MCP tools, prompts and resources a caller may use: list answers are filtered per item, a refused call or get is an error.',
  }),
  authentication: McpAuthentication.optional().meta({
    description: 'Deprecated: use traffic.jwtAuthentication.mcp.',
  }),
  guardrails: McpGuardrails.optional().meta({
    description: 'External processors that inspect, and may change or refuse, MCP requests and results.',
  }),
});

/** BackendSimple: connection settings every backend takes. */
export const backendSimpleFields = {
  tcp: BackendTcp.optional().meta({ description: 'TCP settings of the connections to the backend.' }),
  tls: BackendTls.optional().meta({
    description:
      'Connect to the backend over TLS (system CAs, SNI from the host unless set here), with optional client certificate and custom CA.',
  }),
  http: BackendHttp.optional().meta({
    description: 'HTTP settings of the requests to the backend: protocol version and request timeout.',
  }),
  tunnel: Tunnel.optional().meta({ description: 'Reach the backend through an HTTP forward proxy.' }),
  auth: BackendAuth.optional().meta({
    description:
      'The credential the gateway presents to the backend: a key, the client’s own token, a cloud identity, a token exchange or a signed JWT.',
  }),
  transformation: TransformationPolicy.optional().meta({
    description: 'Header and body changes to requests sent to the backend and to its responses (CEL).',
  }),
  health: Health.optional().meta({
    description: 'Health checking of the endpoints: passive (from answers to requests) and active (probes).',
  }),
};
/** BackendFull: BackendSimple plus the AI and MCP settings. */
const AI_POLICY_DESCRIPTION =
  'LLM settings for AI backends: prompt guards, prompt enrichment, request defaults and overrides, model aliases, prompt caching.';
export const BackendFull = obj({
  ...backendSimpleFields,
  ai: AiPolicy.optional().meta({ description: AI_POLICY_DESCRIPTION }),
  mcp: McpPolicy.optional().meta({
    description: 'MCP settings for MCP backends: tool authorization and guardrail processors.',
  }),
  extAuth: ExtAuthPolicy.optional().meta({
    description:
      "An external authorization check for requests sent to the targeted backend, after the route's policies.",
  }),
});
export const BackendWithAI = obj({
  ...backendSimpleFields,
  ai: AiPolicy.optional().meta({ description: AI_POLICY_DESCRIPTION }),
});

const BufferSide = (what: string) =>
  obj({
    maxBytes: IntOrByteSize.optional().meta({
      description: `The most bytes of the ${what} body kept in memory: a number or a quantity such as 2Mi. Default: the proxy's buffer limit (frontend http.maxBufferSize, 2Mi).`,
    }),
    failureMode: FailureMode.default('FailClosed').meta({
      description: `When the ${what} body is larger than maxBytes: FailClosed (default) answers ${what === 'request' ? '413' : '502'}, FailOpen streams it on unchanged.`,
    }),
  })
    .optional()
    .meta({ description: `Read the whole ${what} body into memory before it is passed on.` });
export const Buffer = obj({ request: BufferSide('request'), response: BufferSide('response') });
