// Backend authentication (`auth` of BackendSimple / BackendWithAI / BackendFull): the credential the
// gateway presents to the upstream. Field names, limits and rules are agentgateway's (its
// BackendAuth), except where gw's spec shows a shape (JwtSignAuth, CrossAppAccessAuth): there the
// spec wins and the field's description says so. The controller maps each form to the standalone
// backendAuth (packages/controller/src/translator/policy/backend/auth.ts).
import { z } from 'zod';
import { DURATION_PATTERN } from '../duration.ts';
import { atMostOne, exactlyOne, IntOrString, obj, type Rule, rules } from './kube.ts';
import {
  CELExpression,
  CredentialLocation,
  DURATION_MESSAGE,
  LocalBackendObjectReference,
  ObjectName,
  ShortString,
  TinyString,
} from './types.ts';

/** agentgateway's credential reference: a Secret unless group and kind name another resolver. */
const CREDENTIAL_REF_RULE: Rule = {
  rule: "(!has(self.group) || size(self.group) == 0) ? (!has(self.kind) || size(self.kind) == 0 || self.kind == 'Secret') : (has(self.kind) && size(self.kind) > 0)",
  message: 'custom credential refs must set both group and kind',
};
const refFields = {
  group: z.string().optional().meta({ description: 'API group of the credential; empty: the core group.' }),
  kind: z.string().optional().meta({ description: 'Kind of the credential; empty: Secret.' }),
  name: ObjectName.meta({ description: 'Name of the credential (a Secret in the same namespace).' }),
};
/** A Secret holding a credential under keys each use names. */
export const CredentialRef = rules(
  obj(refFields).meta({ 'x-kubernetes-map-type': 'atomic' }),
  CREDENTIAL_REF_RULE,
);
/** A Secret and the key that holds the credential (each use has its default key). */
export const CredentialKeyRef = (defaultKey: string) =>
  rules(
    obj({
      ...refFields,
      key: z
        .string()
        .min(1)
        .max(253)
        .optional()
        .meta({ description: `Key in the Secret; default ${defaultKey}.` }),
    }).meta({ 'x-kubernetes-map-type': 'atomic' }),
    CREDENTIAL_REF_RULE,
  );

/** A duration of at least a second, as agentgateway's ttl fields. */
const TtlDuration = rules(
  z
    .string()
    .max(32)
    .regex(new RegExp(DURATION_PATTERN), DURATION_MESSAGE)
    .meta({ description: 'A duration of at least 1s, such as 30s or 5m.' }),
  { rule: "duration(self) >= duration('1s')", message: 'must be at least 1 second' },
);

/** An HTTP header a credential is written to (no HTTP/2 pseudo-headers). */
const WRITABLE_HEADER = "^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$";
const locationFields = {
  header: obj({
    name: z
      .string()
      .min(1)
      .max(256)
      .regex(new RegExp(WRITABLE_HEADER))
      .meta({ description: 'Name of an HTTP header (not an HTTP/2 pseudo-header).' }),
    prefix: ShortString.optional().meta({ description: 'Written before the credential, e.g. "Bearer ".' }),
  })
    .optional()
    .meta({ description: 'An HTTP header, with an optional prefix before the credential.' }),
  queryParameter: obj({ name: ShortString.meta({ description: 'Name of the query parameter.' }) })
    .optional()
    .meta({ description: 'A query parameter of the request URL.' }),
  cookie: obj({ name: ShortString.meta({ description: 'Name of the cookie.' }) })
    .optional()
    .meta({ description: 'A cookie.' }),
};
/** Where a credential is written on the backend request. */
export const AuthLocation = rules(obj(locationFields), exactlyOne(['header', 'queryParameter', 'cookie']));
/** Where a token is read from the client request. */
const TokenSource = rules(
  obj({
    ...locationFields,
    expression: CELExpression.optional().meta({ description: 'CEL over the request giving the token.' }),
  }),
  exactlyOne(['header', 'queryParameter', 'cookie', 'expression']),
);

// ---------- aws ----------
const AwsSessionTag = rules(
  obj({
    key: z.string().min(1).max(128).meta({ description: 'The session tag key.' }),
    value: z.string().max(256).optional().meta({ description: 'A fixed tag value; set this or expression.' }),
    expression: CELExpression.optional().meta({ description: 'CEL over the request giving the tag value.' }),
  }),
  {
    rule: 'has(self.value) != has(self.expression)',
    message: 'exactly one of value or expression must be set',
  },
);
export const AwsAuth = rules(
  obj({
    secretRef: CredentialRef.optional().meta({
      description:
        'Secret with accessKey, secretKey and optionally sessionToken; default credential chain when unset.',
    }),
    assumeRole: rules(
      obj({
        roleArn: z
          .string()
          .min(1)
          .regex(/^arn:aws[a-z-]*:iam::[0-9]{12}:role\/.+$/)
          .meta({ description: 'The ARN of the IAM role, e.g. arn:aws:iam::123456789012:role/gateway.' }),
        sessionName: z
          .string()
          .regex(/^[\w+=,.@-]{2,64}$/)
          .optional()
          .meta({ description: 'A fixed role session name; set this or sessionNameExpression.' }),
        sessionNameExpression: CELExpression.optional().meta({
          description: 'CEL over the request giving the role session name (e.g. per user).',
        }),
        tags: z
          .array(AwsSessionTag)
          .max(50)
          .optional()
          .meta({
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['key'],
            description: 'Session tags passed when the role is assumed, each key once.',
          }),
      }),
      atMostOne(['sessionName', 'sessionNameExpression']),
    )
      .optional()
      .meta({
        description:
          "An IAM role assumed with STS before signing, from the proxy's ambient credentials; its credentials are cached per session name and tags until they near expiry.",
      }),
    region: ShortString.optional().meta({ description: 'SigV4 signing region; default the ambient region.' }),
    serviceName: ShortString.optional().meta({
      description: 'SigV4 signing service, e.g. bedrock or execute-api (default execute-api).',
    }),
    service: TinyString.optional().meta({ description: 'Deprecated: use serviceName.' }),
  }),
  {
    rule: '!(has(self.secretRef) && has(self.assumeRole))',
    message: 'secretRef and assumeRole are mutually exclusive',
  },
  atMostOne(['service', 'serviceName']),
);

// ---------- azure, gcp ----------
export const AzureAuth = rules(
  obj({
    secretRef: CredentialRef.optional().meta({
      description: 'Secret with clientID, tenantID and clientSecret (a service principal).',
    }),
    managedIdentity: rules(
      obj({
        clientId: z.string().optional().meta({ description: 'A user-assigned identity by its client id.' }),
        objectId: z.string().optional().meta({ description: 'A user-assigned identity by its object id.' }),
        resourceId: z
          .string()
          .optional()
          .meta({ description: 'A user-assigned identity by its resource id.' }),
      }),
      atMostOne(['clientId', 'objectId', 'resourceId']),
    )
      .optional()
      .meta({
        description:
          'A managed identity: {} the system-assigned one, or a user-assigned one by clientId, objectId or resourceId.',
      }),
    workloadIdentity: obj({}).optional().meta({
      description: 'Workload identity: the federated token and Azure variables projected into the pod.',
    }),
  }),
  atMostOne(['secretRef', 'managedIdentity', 'workloadIdentity']),
).meta({
  description:
    "Azure: a token for https://cognitiveservices.azure.com/.default; none of the three set: the environment's credential chain.",
});
export const GcpAuth = rules(
  obj({
    type: z.enum(['AccessToken', 'IdToken']).optional().meta({
      description: 'AccessToken (default; Google APIs) or IdToken (Cloud Run and other IAP-style services).',
    }),
    audience: ShortString.optional().meta({
      description: "With IdToken: the token's aud; default https://<the backend's host>.",
    }),
    secretRef: CredentialKeyRef('credentials.json').optional().meta({
      description: 'Secret with ADC credential JSON (key credentials.json); unset: ambient credentials.',
    }),
  }),
  {
    rule: "has(self.audience) ? has(self.type) && self.type == 'IdToken' : true",
    message: 'audience is only valid with IdToken',
  },
);

// ---------- OAuth token endpoints ----------
const TOKEN_URL_PATTERN = '^https?://[^/?#@]+(/[^?#]*)?$';
/** A pattern as written (a RegExp's source would escape its slashes). */
const pattern = (p: string) => ({ pattern: p });
const ClientAuth = rules(
  obj({
    clientId: z.string().min(1).meta({ description: 'The client_id of the gateway at the server.' }),
    method: z.enum(['ClientSecretBasic', 'ClientSecretPost', 'PrivateKeyJwt']).optional().meta({
      description: 'Default ClientSecretBasic (ClientSecretPost when there is no secretRef).',
    }),
    secretRef: CredentialKeyRef('clientSecret').optional().meta({
      description: 'Secret holding the client secret (key clientSecret).',
    }),
    privateKeyJwt: rules(
      obj({
        signingKeyRef: CredentialKeyRef('signingKey').meta({
          description: 'Secret with a PEM RSA or EC private key matching alg (key signingKey).',
        }),
        alg: z.enum(['ES256', 'ES384', 'PS256', 'RS256', 'RS384', 'RS512']).optional().meta({
          description: 'Default RS256.',
        }),
        kid: z.string().optional().meta({ description: 'The kid header of the client assertion.' }),
        assertionAudience: z.string().min(1).meta({ description: 'The aud of the client assertion.' }),
        certificateRef: CredentialKeyRef('certificate').optional().meta({
          description:
            "Secret holding the PEM certificate chain, leaf first (key certificate); the leaf's key is the signing key's.",
        }),
        certificateHeader: z.enum(['x5c', 'x5t#S256']).optional().meta({
          description:
            "The assertion's header carrying the certificate: x5c (the chain) or x5t#S256 (the leaf's thumbprint).",
        }),
      }),
      {
        rule: 'has(self.certificateRef) == has(self.certificateHeader)',
        message: 'certificateRef and certificateHeader must be set together',
      },
    )
      .optional()
      .meta({ description: 'The signed client assertion of method PrivateKeyJwt (RFC 7523).' }),
  }),
  {
    rule: "has(self.privateKeyJwt) == (has(self.method) && self.method == 'PrivateKeyJwt')",
    message: 'privateKeyJwt settings require method PrivateKeyJwt',
  },
  {
    rule: "!has(self.secretRef) || !has(self.method) || self.method != 'PrivateKeyJwt'",
    message: 'secretRef is not valid with method PrivateKeyJwt',
  },
  {
    rule: "has(self.secretRef) || has(self.privateKeyJwt) || (has(self.method) && self.method == 'ClientSecretPost')",
    message: 'clientAuth without secretRef requires method ClientSecretPost or PrivateKeyJwt',
  },
);
/** A token endpoint: a Service (backendRef, then path) or a URL; the gateway authenticates with clientAuth. */
const endpointFields = {
  backendRef: LocalBackendObjectReference.optional().meta({
    description: 'A Service serving the token endpoint (TLS when its port is 443 or says appProtocol https).',
  }),
  url: z
    .string()
    .min(1)
    .max(1024)
    .regex(
      new RegExp(TOKEN_URL_PATTERN),
      'url must be http(s)://host[:port][/path] without userinfo, query or fragment',
    )
    .meta(pattern(TOKEN_URL_PATTERN))
    .optional()
    .meta({ description: 'The token endpoint by URL (https: TLS with the system roots).' }),
  path: z
    .string()
    .regex(/^\//, 'path must start with /')
    .meta(pattern('^/'))
    .optional()
    .meta({ description: 'Path of the token endpoint on backendRef; default /. Not with url.' }),
};
const endpointRules: Rule[] = [
  { rule: 'has(self.url) ? !has(self.path) : true', message: 'path may not be set when url is set' },
  exactlyOne(['backendRef', 'url']),
];
const TokenCache = obj({
  inMemory: obj({
    defaultTtl: TtlDuration.optional().meta({
      description: 'Lifetime of a token whose answer has no expires_in (default 300s).',
    }),
    maxEntries: z.int().optional().meta({
      format: 'int32',
      description: 'Tokens kept, one per subject (default 8192; 0: no cache).',
    }),
  })
    .optional()
    .meta({ description: 'Keep obtained tokens in memory and reuse them until they expire.' }),
});
const scopes = z.array(z.string()).min(1).max(64);

export const OAuthTokenExchange = rules(
  obj({
    ...endpointFields,
    clientAuth: ClientAuth.optional().meta({
      description: 'How the gateway authenticates itself to the token endpoint.',
    }),
    grantType: z.enum(['JwtBearer', 'TokenExchange']).optional().meta({
      description:
        'TokenExchange (RFC 8693, default) or JwtBearer (RFC 7523: the subject token is the assertion).',
    }),
    subjectToken: obj({
      source: TokenSource.optional().meta({
        description: 'Where the subject token is read; default the Authorization header, Bearer prefix.',
      }),
      tokenType: z.string().optional().meta({
        description: 'AccessToken (default), IdToken, Jwt, IdJag or a token type URN.',
      }),
    })
      .optional()
      .meta({ description: "The client's token that is exchanged: where it is read and its type." }),
    actorToken: rules(
      obj({
        source: TokenSource.meta({ description: 'Where the actor token is read from the request.' }),
        tokenType: z
          .string()
          .optional()
          .meta({ description: 'AccessToken (default), IdToken, Jwt or a URN.' }),
        mayAct: z.enum(['Required']).optional().meta({
          description:
            "Required: the subject token's may_act claim must name the actor token's subject (RFC 8693), else 403.",
        }),
      }),
      {
        rule: "!has(self.mayAct) || self.mayAct != 'Required' || (has(self.tokenType) && self.tokenType == 'Jwt')",
        message: 'mayAct Required requires tokenType Jwt',
      },
    )
      .optional()
      .meta({ description: 'A second token naming who acts for the subject (TokenExchange only).' }),
    audiences: z.array(ShortString).min(1).max(64).optional().meta({
      description: 'The audience parameters of the exchange: whom the new token is for.',
    }),
    scopes: scopes.optional().meta({ description: 'The scopes asked for.' }),
    resources: scopes.optional().meta({ description: 'The resource parameters of the exchange (URIs).' }),
    requestedTokenType: z
      .enum(['AccessToken', 'Jwt', 'IdToken', 'IdJag'])
      .optional()
      .meta({ description: 'The type of token asked for (TokenExchange only).' }),
    additionalParams: z.record(z.string(), CELExpression).optional().meta({
      maxProperties: 64,
      description: 'Extra form parameters, each a CEL expression over the request.',
    }),
    location: AuthLocation.optional().meta({
      description: 'Where the token is written; default the Authorization header, Bearer prefix.',
    }),
    cache: TokenCache.optional().meta({ description: 'Reuse of obtained tokens.' }),
  }),
  {
    rule: "!(has(self.actorToken) && has(self.grantType) && self.grantType == 'JwtBearer')",
    message: 'actorToken is only valid with TokenExchange grantType',
  },
  {
    rule: "!(has(self.requestedTokenType) && has(self.grantType) && self.grantType == 'JwtBearer')",
    message: 'requestedTokenType is only valid with TokenExchange grantType',
  },
  {
    rule: "!has(self.requestedTokenType) || self.requestedTokenType != 'IdJag'",
    message: 'requestedTokenType IdJag is only supported by crossAppAccess',
  },
  ...endpointRules,
);

const CrossAppEndpoint = rules(
  obj({
    ...endpointFields,
    clientAuth: ClientAuth.meta({
      description: 'How the gateway authenticates itself to this token endpoint.',
    }),
  }),
  ...endpointRules,
);
export const CrossAppAccessAuth = obj({
  identityProvider: CrossAppEndpoint.meta({
    description: "The user's identity provider: its token endpoint issues the ID-JAG (RFC 8693).",
  }),
  resourceAuthorizationServer: CrossAppEndpoint.meta({
    description:
      "The resource's authorization server: it exchanges the ID-JAG for an access token (RFC 7523).",
  }),
  audience: ShortString.meta({ description: 'The issuer of the resource authorization server.' }),
  resources: scopes.optional().meta({ description: 'The resource parameters of the ID-JAG request (URIs).' }),
  scopes: scopes.optional().meta({ description: 'The scopes asked for in the ID-JAG.' }),
  accessTokenScopes: z.array(z.string()).max(64).optional().meta({
    description:
      "Scopes of the access token; gw's spec: defaults to scopes, an empty list omits the scope parameter.",
  }),
  subjectToken: rules(
    obj({
      source: TokenSource.optional().meta({
        description: 'Where the subject token is read; default the Authorization header, Bearer prefix.',
      }),
      tokenType: z.string().optional().meta({
        description: "gw's spec: default IdToken; also AccessToken, Jwt or a token type URN.",
      }),
    }),
    {
      rule: "!has(self.tokenType) || (self.tokenType != 'IdJag' && self.tokenType != 'urn:ietf:params:oauth:token-type:id-jag')",
      message: 'tokenType IdJag is not supported by crossAppAccess',
    },
  )
    .optional()
    .meta({ description: "The user's token sent to the identity provider: where it is read and its type." }),
  cache: TokenCache.optional().meta({ description: 'Reuse of obtained tokens.' }),
});

// ---------- jwtSign (gw's spec: JwtSignAuth) ----------
export const JwtSignAuth = obj({
  signingKeyRef: CredentialKeyRef('signingKey').meta({
    description: "gw's spec: Secret key signingKey, a PEM RSA or EC private key.",
  }),
  alg: z
    .enum(['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384'])
    .default('RS256')
    .meta({ description: 'The signing algorithm; it must suit the key. Default: RS256.' }),
  kid: ShortString.optional().meta({ description: 'The kid header of the token.' }),
  claims: rules(
    z
      .object({ iat: IntOrString.optional(), exp: IntOrString.optional(), nbf: IntOrString.optional() })
      .catchall(z.unknown())
      .meta({ 'x-kubernetes-preserve-unknown-fields': true, maxProperties: 64 }),
    {
      rule: '!has(self.iat) && !has(self.exp) && !has(self.nbf)',
      message: 'claims may not set iat, exp or nbf: the gateway sets them when it signs',
    },
  )
    .optional()
    .meta({ description: 'Claims of the token (any JSON); iat, exp and nbf are set by the gateway.' }),
  ttl: TtlDuration.default('300s').meta({ description: "gw's spec: default 300s." }),
  location: CredentialLocation.optional().meta({
    description: "gw's spec: where the token is written; default the Authorization header, Bearer prefix.",
  }),
});

// ---------- auth ----------
/** `key` and `secretRef` as every auth block writes them. */
export const AuthKey = z.string().min(1).max(2048).meta({ description: 'The credential itself.' });
export const AuthSecretRef = CredentialKeyRef('Authorization').meta({
  description: 'Secret holding the credential (key Authorization; a Bearer prefix is dropped).',
});
const PRIMARY = [
  'key',
  'secretRef',
  'passthrough',
  'aws',
  'azure',
  'gcp',
  'oauthTokenExchange',
  'crossAppAccess',
  'jwtSign',
] as const;
export const BackendAuth = rules(
  obj({
    key: AuthKey.optional(),
    secretRef: AuthSecretRef.optional(),
    passthrough: obj({})
      .optional()
      .meta({ description: "The client's own credential (the token jwtAuthentication validated)." }),
    location: AuthLocation.optional().meta({
      description:
        'Where key, secretRef or passthrough writes the credential; default the Authorization header, Bearer prefix.',
    }),
    credentials: z
      .array(
        obj({
          location: AuthLocation.meta({ description: 'Where the credential is written.' }),
          secretRef: CredentialKeyRef('Authorization').meta({
            description: 'Secret holding the credential (key Authorization unless key says), sent as it is.',
          }),
        }),
      )
      .min(1)
      .max(8)
      .optional()
      .meta({
        description:
          'More credentials written on the backend request, each from a Secret to its location; beside the main form (which wins a place both name) or alone.',
        'x-kubernetes-list-type': 'atomic',
      }),
    aws: AwsAuth.optional().meta({
      description: 'Sign requests with AWS SigV4, from a Secret, an assumed role or the ambient credentials.',
    }),
    azure: AzureAuth.optional(),
    gcp: GcpAuth.optional().meta({
      description: 'A Google access token (default) or ID token, from a Secret or the ambient credentials.',
    }),
    oauthTokenExchange: OAuthTokenExchange.optional().meta({
      description:
        "Exchange the client's token at an OAuth token endpoint (RFC 8693 or RFC 7523) and send the new token.",
    }),
    crossAppAccess: CrossAppAccessAuth.optional().meta({
      description:
        "gw's spec (CrossAppAccessAuth): an ID-JAG from the user's identity provider, exchanged for an access token.",
    }),
    jwtSign: JwtSignAuth.optional().meta({
      description: "gw's spec (JwtSignAuth): a JWT the gateway signs for each request.",
    }),
  }),
  {
    rule: `has(self.credentials) || ${PRIMARY.map((k) => `has(self.${k})`).join(' || ')}`,
    message: `auth: set credentials or one of ${PRIMARY.join(', ')}`,
  },
  {
    rule: 'has(self.location) ? has(self.key) || has(self.secretRef) || has(self.passthrough) : true',
    message: 'location may only be set for key, secretRef, or passthrough auth',
  },
  atMostOne(
    PRIMARY,
    'auth: at most one of key, secretRef, passthrough, aws, azure, gcp, oauthTokenExchange, crossAppAccess or jwtSign may be set',
  ),
);
