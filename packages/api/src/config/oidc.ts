// agentgateway's `oidc` policy (LocalOidcConfig): browser login with the OpenID Connect authorization
// code flow (PKCE S256, state, nonce), an encrypted session cookie, refresh with the refresh token.
// The provider is discovered from the issuer, or given by authorizationEndpoint, tokenEndpoint and
// jwks together. `logout` is the shape later agentgateway versions added; its `login` and
// `allowWithoutSession` are refused by name.
import { z } from 'zod';

const strict = z.strictObject;
const notYet = (what: string) => {
  const message = `${what} is not supported by this build of gw yet`;
  return z
    .unknown()
    .superRefine((v, ctx) => {
      if (v !== undefined) ctx.addIssue({ code: 'custom', message });
    })
    .meta({ description: message });
};

/** agentgateway's FileInlineOrRemote: the document itself as a string, `{file}` or `{url}`. */
const FileInlineOrRemote = z.union([
  z
    .string()
    .min(2)
    .transform((inline) => ({ inline })),
  strict({ inline: z.string().min(2) }),
  strict({ file: z.string().min(1) }),
  strict({ url: z.string().min(1) }),
]);

export const TOKEN_ENDPOINT_AUTH = ['clientSecretBasic', 'clientSecretPost'] as const;

export const OidcLogout = strict({
  path: z.string().min(1).meta({
    description:
      'local path (e.g. /auth/logout) that ends the session: a POST from the redirectURI origin clears the cookies',
  }),
  redirect: z.string().min(1).nullable().optional().meta({
    description:
      "local path to send the browser to afterwards; when unset, the provider's end_session_endpoint (else /)",
  }),
});

export const Oidc = strict({
  issuer: z.string().min(1).meta({ description: 'issuer used for discovery and ID token validation' }),
  discovery: FileInlineOrRemote.nullable().optional().meta({
    description:
      'the discovery document (inline, {file} or {url}); default <issuer>/.well-known/openid-configuration',
  }),
  authorizationEndpoint: z.string().min(1).nullable().optional().meta({
    description: 'authorization endpoint (explicit mode: with tokenEndpoint and jwks, instead of discovery)',
  }),
  tokenEndpoint: z.string().min(1).nullable().optional().meta({
    description: 'token endpoint (explicit mode)',
  }),
  tokenEndpointAuth: z.enum(TOKEN_ENDPOINT_AUTH).nullable().optional().meta({
    description:
      'client authentication at the token endpoint (explicit mode; default clientSecretBasic); discovery derives it',
  }),
  jwks: FileInlineOrRemote.nullable().optional().meta({
    description: 'JWKS that signs ID tokens (explicit mode; discovery uses jwks_uri)',
  }),
  clientId: z.string().min(1).meta({ description: 'OAuth2 client id' }),
  clientSecret: z.string().min(1).meta({ description: 'OAuth2 client secret (a credential)' }),
  redirectURI: z.string().min(1).meta({
    description:
      'absolute callback URI the gateway handles (its path must reach a route with this policy); https makes the cookies Secure',
  }),
  scopes: z
    .array(z.string().min(1))
    .optional()
    .meta({ description: 'scopes besides openid (always sent), e.g. profile, email, offline_access' }),
  logout: OidcLogout.nullable().optional(),
  login: notYet('oidc.login').optional(),
  allowWithoutSession: notYet('oidc.allowWithoutSession').optional(),
});

export type Oidc = z.output<typeof Oidc>;
