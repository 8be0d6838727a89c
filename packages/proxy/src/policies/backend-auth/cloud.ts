// The cloud forms of backendAuth: a token from the cloud's own credential chain, by its SDK, loaded
// with the first config that uses it (workers never import them statically). gcp: google-auth-library
// with the configured credential JSON or Application Default Credentials, an access token (scope
// cloud-platform) or an ID token for an audience (default https://<backend host>). azure:
// @azure/identity with a client secret, a managed identity, workload identity or the default chain.
// Tokens are cached until shortly before they expire (token-cache.ts).
import type { AzureAuthIR, GcpAuthIR } from '../../config/token-auth.ts';
import { GwError } from '../../errors.ts';
import { Lazy } from '../../lazy.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { TokenSource } from './oauth.ts';
import { type Token, TokenCache } from './token-cache.ts';

const GCP_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** When the SDK does not say how long a token lives. */
const FALLBACK_TTL_MS = 300_000;

const googleAuthLibrary = new Lazy(() => import('google-auth-library'));
const azureIdentity = new Lazy(() => import('@azure/identity'));

/** Why a token source failed, without anything it was given (the SDKs' messages name no secret). */
function failed(form: string, err: unknown): GwError {
  if (err instanceof GwError) return err;
  const message = ((err as Error)?.message ?? String(err)).split('\n')[0]?.slice(0, 300);
  return new GwError('GW_ERR_BACKEND_AUTH', `${form}: no token: ${message}`, { cause: err });
}

export function gcp(c: GcpAuthIR): TokenSource {
  const form = `backendAuth gcp ${c.type}`;
  const cache = new TokenCache(64);
  const auth = googleAuthLibrary.derive(
    ({ GoogleAuth }) =>
      new GoogleAuth({
        ...(c.credential ? { credentials: JSON.parse(c.credential.reveal()) } : {}),
        scopes: [GCP_SCOPE],
      }),
  );
  if (c.type === 'accessToken')
    return async () => {
      const t = await cache.get('', async () => {
        try {
          const client = await (await auth.ready).getClient();
          const r = await client.getAccessToken();
          if (!r.token) throw new Error('the credential gave no access token');
          const expiry = (client as { credentials?: { expiry_date?: number | null } }).credentials
            ?.expiry_date;
          return { value: r.token, expiresAt: expiry ?? Date.now() + FALLBACK_TTL_MS };
        } catch (err) {
          throw failed(form, err);
        }
      });
      return t.value;
    };
  return async (ctx: RequestContext) => {
    const audience = c.audience ?? `https://${hostOf(ctx)}`;
    const t = await cache.get(audience, async (): Promise<Token> => {
      try {
        const client = await (await auth.ready).getIdTokenClient(audience);
        const token = await client.idTokenProvider.fetchIdToken(audience);
        return { value: token, expiresAt: jwtExpiry(token) ?? Date.now() + FALLBACK_TTL_MS };
      } catch (err) {
        throw failed(form, err);
      }
    });
    return t.value;
  };
}

/** An Entra ID token for `c.scope`; it reads nothing of the request (a guard service uses it too). */
export function azure(c: AzureAuthIR): () => Promise<string> {
  const source = c.source;
  const kind = Object.keys(source)[0] as string;
  const form = `backendAuth azure ${kind}`;
  const cache = new TokenCache(1);
  const credential = azureIdentity.derive((az) => {
    if ('clientSecret' in source) {
      const s = source.clientSecret;
      return new az.ClientSecretCredential(s.tenantId, s.clientId, s.secret.reveal());
    }
    if ('managedIdentity' in source) {
      const m = source.managedIdentity;
      if ('clientId' in m) return new az.ManagedIdentityCredential({ clientId: m.clientId });
      if ('objectId' in m) return new az.ManagedIdentityCredential({ objectId: m.objectId });
      if ('resourceId' in m) return new az.ManagedIdentityCredential({ resourceId: m.resourceId });
      return new az.ManagedIdentityCredential();
    }
    if ('workloadIdentity' in source) return new az.WorkloadIdentityCredential();
    return new az.DefaultAzureCredential();
  });
  return async () => {
    const t = await cache.get('', async () => {
      try {
        const r = await (await credential.ready).getToken(c.scope);
        if (!r?.token) throw new Error('the credential gave no token');
        return { value: r.token, expiresAt: r.expiresOnTimestamp };
      } catch (err) {
        throw failed(form, err);
      }
    });
    return t.value;
  };
}

function hostOf(ctx: RequestContext): string {
  const h = ctx.headers.host ?? ctx.authority;
  return String(Array.isArray(h) ? h[0] : h).replace(/:\d+$/, '');
}

function jwtExpiry(token: string): number | undefined {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {
      exp?: unknown;
    };
    return typeof payload.exp === 'number' ? payload.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
