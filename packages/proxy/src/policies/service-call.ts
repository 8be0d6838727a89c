// What every call to a policy's own service (extAuthz, extProc, remoteRateLimit) or to an OTLP
// collector carries from its policies: its requestHeaderModifier headers and its key, in the header
// the key names; and a credential a call obtains for its request (a token, a signed JWT, the
// client's JWT), in the header its location names.
import type { ServiceCallIR } from '../config/ir.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { serviceCredential } from './backend-auth/index.ts';

/**
 * The headers (gRPC metadata) of each call to the service; undefined when there are none. An OTLP
 * collector's connection has the same two fields (observability/otlp-connection.ts).
 */
export function serviceHeadersOf(
  p: (Pick<ServiceCallIR, 'headers' | 'credential'> & Pick<ServiceCallIR, 'credentials'>) | undefined,
): Record<string, string> | undefined {
  if (!p?.headers && !p?.credential && !p?.credentials) return undefined;
  const out: Record<string, string> = { ...p.headers };
  // the credentials first: the key wins a header both name
  for (const c of p.credentials ?? []) out[c.header] = c.value.reveal();
  if (p.credential) out[p.credential.header] = p.credential.value.reveal();
  return out;
}

/**
 * The headers of a call that come from the credential it obtains for `ctx` (written after the
 * others, so its header wins one they share); undefined when the service takes none that way.
 */
export function serviceAuthOf(
  p: Pick<ServiceCallIR, 'auth'> | undefined,
): ((ctx: RequestContext) => Promise<Record<string, string>>) | undefined {
  return p?.auth ? serviceCredential(p.auth) : undefined;
}
