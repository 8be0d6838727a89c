// Google access tokens from Application Default Credentials (google-auth-library), for Vertex AI
// without a configured key: GOOGLE_APPLICATION_CREDENTIALS (service account, workload identity
// federation …), gcloud's user credentials, or the metadata server on GCE/GKE/Cloud Run. The
// library caches the token and refreshes it before it expires. Where no ADC exists, the client's
// own Authorization header passes (checked again after a minute, not on every request).
import { GwError } from '../../../errors.ts';

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const RETRY_MS = 60_000;

type Auth = { getAccessToken(): Promise<string | null | undefined> };
let auth: Promise<Auth> | undefined;
let missingUntil = 0;

export async function googleAccessToken(): Promise<string | undefined> {
  if (Date.now() < missingUntil) return undefined;
  auth ??= import('google-auth-library').then(({ GoogleAuth }) => new GoogleAuth({ scopes: [SCOPE] }));
  try {
    return (await (await auth).getAccessToken()) ?? undefined;
  } catch (err) {
    const message = (err as Error).message;
    if (/could not load the default credentials/i.test(message)) {
      missingUntil = Date.now() + RETRY_MS;
      auth = undefined;
      return undefined;
    }
    throw new GwError('GW_ERR_UPSTREAM_CONNECT', `no Google access token for Vertex AI: ${message}`);
  }
}
