// backendAuth's token forms (agentgateway's shapes): gcp and azure (a token from the cloud's own
// credential chain) and the OAuth flows oauthTokenExchange (RFC 8693, or RFC 7523 jwtBearer) and
// crossAppAccess (an ID-JAG from the user's identity provider, exchanged at the resource's
// authorization server). Each is cached until shortly before it expires.
//
// The shared pieces (FileOrInline, backendTLS, the host:port pattern, credential locations, CEL,
// durations, the "not supported" marker) are schema.ts's; it passes them in.
import { z } from 'zod';

const strict = z.strictObject;

/** A credential's place in a request (schema.ts's TokenLocation). */
export type TokenLocationShape =
  | { header: { name: string; prefix?: string | undefined } }
  | { queryParameter: { name: string } }
  | { cookie: { name: string } }
  | { expression: string };

export interface TokenAuthParts<TLS extends z.ZodType> {
  fileOrInline: z.ZodType<string | { file: string }>;
  backendTLS: TLS;
  hostPort: z.ZodType<string>;
  /** Where a credential is read from: header, queryParameter, cookie or a CEL expression. */
  tokenLocation: z.ZodType<TokenLocationShape>;
  cel: z.ZodType<string>;
  duration: z.ZodType<string>;
  notYet: (what: string) => z.ZodType;
  /** A Service of the top-level services: `{name: <namespace>/<hostname>, port}`. */
  serviceRef: z.ZodType<{ name: string; port: number }>;
}

/** The token types gw names in config, as RFC 8693 URNs. */
export const TOKEN_TYPE = {
  accessToken: 'urn:ietf:params:oauth:token-type:access_token',
  idToken: 'urn:ietf:params:oauth:token-type:id_token',
  jwt: 'urn:ietf:params:oauth:token-type:jwt',
  idJag: 'urn:ietf:params:oauth:token-type:id-jag',
} as const;

/** The scope an azure token is requested for when none is set (Azure OpenAI and AI services). */
export const AZURE_DEFAULT_SCOPE = 'https://cognitiveservices.azure.com/.default';

export function tokenAuthSchemas<TLS extends z.ZodType>(p: TokenAuthParts<TLS>) {
  const credential = p.fileOrInline.nullable().optional().meta({
    description:
      'ADC-compatible Google credential JSON (service account, authorized user, external account), inline or {file}; unset: the ambient credentials (GOOGLE_APPLICATION_CREDENTIALS, the metadata server)',
  });
  const GcpAuth = strict({
    type: z.enum(['accessToken', 'idToken']).nullable().optional().meta({
      description: 'accessToken (default, an OAuth 2.0 access token) or idToken (an OpenID Connect ID token)',
    }),
    audience: z.string().min(1).nullable().optional().meta({
      description: "with idToken: the token's audience (default https://<the backend's host>)",
    }),
    credential,
  }).superRefine((g, ctx) => {
    if (g.audience && g.type !== 'idToken')
      ctx.addIssue({
        code: 'custom',
        path: ['audience'],
        message: 'audience is only valid with type idToken',
      });
  });

  const scope = z
    .string()
    .min(1)
    .optional()
    .meta({
      description: `gw addition: the scope of the token (default ${AZURE_DEFAULT_SCOPE})`,
    });
  const scopes = z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .meta({ description: 'the scopes of the token, each asked for (agentgateway’s; set this or scope)' });
  const AzureAuth = z
    .union([
      strict({
        explicitConfig: z.union([
          strict({
            clientSecret: strict({
              tenant_id: z.string().min(1),
              client_id: z.string().min(1),
              client_secret: z.string().min(1),
            }),
          }),
          strict({
            managedIdentity: strict({
              userAssignedIdentity: z
                .union([
                  strict({ clientId: z.string().min(1) }),
                  strict({ objectId: z.string().min(1) }),
                  strict({ resourceId: z.string().min(1) }),
                ])
                .nullable()
                .optional(),
            }),
          }),
          strict({ workloadIdentity: strict({}) }),
        ]),
        scope,
        scopes,
      }),
      strict({ developerImplicit: strict({}), scope, scopes }),
      strict({ implicit: strict({}), scope, scopes }),
    ])
    .refine((a) => a.scope === undefined || a.scopes === undefined, {
      message: 'set scope or scopes, not both',
      path: ['scopes'],
    });

  const clientId = z.string().min(1).meta({ description: 'the client_id of the gateway at the server' });
  const OAuthClientAuth = z.union([
    strict({ method: z.literal('clientSecretBasic'), clientId, clientSecret: p.fileOrInline }),
    strict({
      method: z.literal('clientSecretPost'),
      clientId,
      clientSecret: p.fileOrInline.nullable().optional(),
    }),
    strict({
      method: z.literal('privateKeyJwt'),
      clientId,
      signingKey: p.fileOrInline.meta({ description: 'PEM RSA or EC private key matching alg' }),
      certificate: p.fileOrInline.nullable().optional().meta({
        description:
          "PEM X.509 chain, leaf first, inline or {file}: the leaf's key is signingKey's public key (certificate credentials, as Microsoft Entra takes them)",
      }),
      certificateHeader: z.enum(['x5c', 'x5t#S256']).nullable().optional().meta({
        description:
          "the assertion's header carrying the certificate: x5c (the chain) or x5t#S256 (the leaf's SHA-256 thumbprint)",
      }),
      alg: z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384']).optional(),
      kid: z.string().min(1).nullable().optional(),
      assertionAudience: z.string().min(1),
    }),
    // no method: client_secret_basic
    strict({ clientId, clientSecret: p.fileOrInline }),
  ]);

  const cache = strict({
    maxEntries: z.number().int().min(0).nullable().optional().meta({
      description: 'tokens kept, one per subject (default 8192; 0: no cache)',
    }),
    defaultTtl: p.duration.nullable().optional().meta({
      description: 'lifetime of a token whose answer has no expires_in (default 300s)',
    }),
  })
    .nullable()
    .optional();

  /** A token endpoint: host:port and path, TLS to it in policies.backendTLS. */
  const endpoint = {
    host: p.hostPort.optional().meta({ description: 'host:port of the token endpoint' }),
    service: p.serviceRef.optional().meta({
      description:
        'a Service of the top-level services list: called by its hostname, each connection dialled at the next of its workloads',
    }),
    backend: z.string().min(1).optional().meta({
      description:
        'the name of a host backend in the top-level backends list: its address, and its backendTLS unless policies has one',
    }),
    path: z.string().startsWith('/', 'path must start with /').optional().meta({
      description: 'path of the token endpoint (default /)',
    }),
    policies: strict({
      backendTLS: p.backendTLS.optional().meta({ description: 'TLS to the token endpoint' }),
      backendAuth: p.notYet('backendAuth on a token endpoint').optional(),
      requestHeaderModifier: p.notYet('requestHeaderModifier on a token endpoint').optional(),
      transformations: p.notYet('transformations on a token endpoint').optional(),
      http: p.notYet('http on a token endpoint').optional(),
      tcp: p.notYet('tcp on a token endpoint').optional(),
      backendTunnel: p.notYet('backendTunnel on a token endpoint').optional(),
    })
      .nullable()
      .optional(),
  };
  const needHost = <T extends { host?: unknown; backend?: unknown; service?: unknown }>(
    v: T,
    ctx: z.core.$RefinementCtx<T>,
  ) => {
    const given = (['host', 'backend', 'service'] as const).filter((k) => v[k] !== undefined);
    if (given.length === 0)
      ctx.addIssue({
        code: 'custom',
        path: ['host'],
        message: 'set host (host:port of the token endpoint), backend or service',
      });
    else if (given.length > 1)
      ctx.addIssue({
        code: 'custom',
        path: [given[1] as string],
        message: `set one of host, backend and service, not ${given.join(' and ')}`,
      });
  };

  const exchange = {
    grantType: z.enum(['tokenExchange', 'jwtBearer']).optional().meta({
      description:
        'tokenExchange (RFC 8693, default) or jwtBearer (RFC 7523: the subject token is the assertion)',
    }),
    subjectToken: strict({
      source: p.tokenLocation.optional().meta({
        description: 'where the subject token is read (default the Authorization header, Bearer prefix)',
      }),
      tokenType: z
        .string()
        .min(1)
        .optional()
        .meta({ description: `default ${TOKEN_TYPE.accessToken}` }),
    }).optional(),
    actorToken: strict({
      source: p.tokenLocation,
      tokenType: z
        .string()
        .min(1)
        .optional()
        .meta({ description: `default ${TOKEN_TYPE.accessToken}` }),
      enforceMayAct: z.boolean().optional().meta({
        description: "the subject token's may_act claim must name the actor token's sub (and iss when set)",
      }),
    })
      .nullable()
      .optional(),
    audiences: z.array(z.string().min(1)).optional(),
    scopes: z.array(z.string().min(1)).optional(),
    resources: z.array(z.string().min(1)).optional(),
    requestedTokenType: z.string().min(1).nullable().optional(),
    clientAuth: OAuthClientAuth.nullable().optional(),
    additionalParams: z.record(z.string().min(1), p.cel).optional().meta({
      description: 'extra form parameters: CEL over the request',
    }),
    authorizationLocation: p.tokenLocation.optional().meta({
      description: 'where the token is written (default the Authorization header, Bearer prefix)',
    }),
    cache,
  };
  const OAuthTokenExchangeAuth = strict({ ...endpoint, ...exchange }).superRefine(needHost);
  const { path: _path, ...endpointAt } = endpoint;
  /**
   * agentgateway's newer `oauth` form: the same exchange with its endpoint under `tokenEndpoint` and
   * the path beside it, reshaped into oauthTokenExchange's.
   */
  const OAuthAuth = strict({
    tokenEndpoint: strict(endpointAt).superRefine(needHost).meta({
      description: 'the token endpoint: host:port, a named host backend, or a Service of services',
    }),
    tokenEndpointPath: endpoint.path,
    ...exchange,
  }).transform(({ tokenEndpoint, tokenEndpointPath, ...rest }) => ({
    ...tokenEndpoint,
    ...(tokenEndpointPath !== undefined ? { path: tokenEndpointPath } : {}),
    ...rest,
  }));

  const CrossAppAccessEndpoint = strict({
    ...endpoint,
    tokenEndpointPath: endpoint.path.meta({ description: "agentgateway's newer name of path" }),
    clientAuth: OAuthClientAuth,
  })
    .superRefine(needHost)
    .superRefine((v, ctx) => {
      if (v.path !== undefined && v.tokenEndpointPath !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['tokenEndpointPath'],
          message: 'set path or tokenEndpointPath, not both',
        });
    })
    .transform(({ tokenEndpointPath, ...v }) =>
      tokenEndpointPath === undefined ? v : { ...v, path: tokenEndpointPath },
    );
  const crossAppAccessFields = {
    audience: z.string().min(1).meta({ description: 'the issuer of the resource authorization server' }),
    resources: z.array(z.string().min(1)).optional(),
    scopes: z.array(z.string().min(1)).optional(),
    accessTokenScopes: z.array(z.string().min(1)).nullable().optional().meta({
      description: 'scopes of the access token (default scopes; [] sends none)',
    }),
    subjectToken: strict({
      source: p.tokenLocation.optional(),
      tokenType: z
        .string()
        .min(1)
        .optional()
        .meta({ description: `default ${TOKEN_TYPE.idToken}` }),
    })
      .nullable()
      .optional(),
    cache,
  };
  const CrossAppAccessAuth = strict({
    identityProvider: CrossAppAccessEndpoint.meta({
      description: "the user's identity provider: its token endpoint issues the ID-JAG (RFC 8693)",
    }),
    resourceAuthorizationServer: CrossAppAccessEndpoint.meta({
      description: "the resource's authorization server: its token endpoint exchanges the ID-JAG (RFC 7523)",
    }),
    ...crossAppAccessFields,
  });
  /** agentgateway's newer `xaa` form: crossAppAccess with its two servers named idp and resourceAs. */
  const XaaAuth = strict({
    idp: CrossAppAccessEndpoint.meta({
      description: "the user's identity provider (crossAppAccess identityProvider)",
    }),
    resourceAs: CrossAppAccessEndpoint.meta({
      description: "the resource's authorization server (crossAppAccess resourceAuthorizationServer)",
    }),
    ...crossAppAccessFields,
  }).transform(({ idp, resourceAs, ...rest }) => ({
    identityProvider: idp,
    resourceAuthorizationServer: resourceAs,
    ...rest,
  }));

  return {
    GcpAuth,
    AzureAuth,
    OAuthTokenExchangeAuth,
    OAuthAuth,
    CrossAppAccessAuth,
    XaaAuth,
    OAuthClientAuth,
  };
}
