// What every call to a policy's own service (extAuthz, extProc, remoteRateLimit) carries from the
// service's policies: its requestHeaderModifier headers and its key, in the header the key names.
import type { ServiceCallIR } from '../config/ir.ts';

/** The headers (gRPC metadata) of each call to the service; undefined when there are none. */
export function serviceHeadersOf(p: ServiceCallIR | undefined): Record<string, string> | undefined {
  if (!p?.headers && !p?.credential) return undefined;
  const out: Record<string, string> = { ...p.headers };
  if (p.credential) out[p.credential.header] = p.credential.value.reveal();
  return out;
}
