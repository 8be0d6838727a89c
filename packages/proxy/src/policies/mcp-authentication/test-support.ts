// The MCP SDK client's side of the OAuth flow, for tests and the example's test: an in-memory
// OAuthClientProvider (what a desktop client keeps in its credential store) and `signIn`, which does
// what a user does: connect, get sent to log in, come back with a code, connect again.
import assert from 'node:assert/strict';
import type { IdentityProvider } from '@gw/testkit';
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';

/** Where the client asks to be sent back; nothing listens there, the test reads the redirect. */
export const REDIRECT = 'http://localhost:3999/callback';

/** The MCP client's OAuth state, in memory: what a desktop client keeps in its credential store. */
export class MemoryOAuthClient implements OAuthClientProvider {
  redirected: URL | undefined;
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'gw oauth test',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.#client = info;
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.redirected = url;
  }
  saveCodeVerifier(v: string) {
    this.#verifier = v;
  }
  codeVerifier() {
    return this.#verifier;
  }
}

/**
 * What a user of an MCP client does: connect, get sent to log in, come back with a code, connect
 * again. Returns the connected client and the OAuth state.
 */
export async function signIn(url: string, idp: IdentityProvider, account: string) {
  const oauth = new MemoryOAuthClient();
  const first = new Client({ name: 'oauth-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth });
  await assert.rejects(first.connect(transport), UnauthorizedError);
  assert.ok(oauth.redirected, 'the client was sent to the authorization endpoint');
  const back = await idp.authorize(oauth.redirected.href, account);
  const code = back.searchParams.get('code');
  assert.ok(code, `the provider sent back a code: ${back.href}`);
  await transport.finishAuth(code);
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth }));
  return { client, oauth };
}
