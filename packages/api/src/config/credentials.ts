// Which values of a config are credentials. Used where the config is read (an unset environment
// variable in a credential is an error, not a literal) and where it is shown (redaction).

/** Header names whose values a trace or dump never shows, before `config.sensitiveHeaders` adds more. */
export const DEFAULT_SENSITIVE_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
];

const MODIFIERS = new Set([
  'requestHeaderModifier',
  'responseHeaderModifier',
  // an LLM model's or provider's header changes
  'requestHeaders',
  'responseHeaders',
]);

/**
 * Whether the value at `path` is a credential: an API key or its hash (not its metadata), an
 * htpasswd line or file, an oidc clientSecret, an LLM provider's API key, a private key for TLS
 * (listener or backend), or
 * the value a header modifier gives a default-sensitive header (e.g. `Authorization: Bearer …` to an
 * upstream).
 */
export function isCredentialField(path: ReadonlyArray<string | number>): boolean {
  if (path[0] === 'config' && path[1] === 'session' && path[2] === 'key') return true;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    const next = path[i + 1];
    if (seg === 'apiKey' && next === 'keys') return !path.slice(i + 2).includes('metadata');
    if (seg === 'basicAuth' && (next === 'users' || next === 'htpasswd')) return true;
    if ((seg === 'oidc' || seg === 'mcpAuthentication') && next === 'clientSecret') return true;
    // an LLM provider's key: llm.models[].params.apiKey, llm.providers[].params.apiKey
    if (seg === 'params' && next === 'apiKey' && path[0] === 'llm') return true;
    if ((seg === 'tls' || seg === 'backendTLS') && next === 'key') return true;
    if (typeof seg === 'string' && MODIFIERS.has(seg) && (next === 'set' || next === 'add')) {
      const header = path[i + 2];
      return (
        path.length === i + 3 &&
        typeof header === 'string' &&
        DEFAULT_SENSITIVE_HEADERS.includes(header.toLowerCase())
      );
    }
  }
  return false;
}
