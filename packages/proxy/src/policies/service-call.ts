// What every call to a policy's own service (extAuthz, extProc, remoteRateLimit) or to an OTLP
// collector carries from its policies: its requestHeaderModifier headers and its key, in the header
// the key names.
import type { ServiceCallIR } from '../config/ir.ts';

/**
 * The headers (gRPC metadata) of each call to the service; undefined when there are none. An OTLP
 * collector's connection has the same two fields (observability/otlp-connection.ts).
 */
export function serviceHeadersOf(
  p: Pick<ServiceCallIR, 'headers' | 'credential'> | undefined,
): Record<string, string> | undefined {
  if (!p?.headers && !p?.credential) return undefined;
  const out: Record<string, string> = { ...p.headers };
  if (p.credential) out[p.credential.header] = p.credential.value.reveal();
  return out;
}
