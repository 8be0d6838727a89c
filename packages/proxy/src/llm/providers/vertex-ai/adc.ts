// Google access tokens from Application Default Credentials, for Vertex AI without a configured key.
// Stub until google-auth-library is wired in: no ADC, so the client's own credential passes.
export async function googleAccessToken(): Promise<string | undefined> {
  return undefined;
}
