// The IR of how gw reaches a backend that policies other than the IR's own types need: where a
// credential goes and the TLS to a backend. A leaf module, so that the token forms (token-auth.ts),
// which the IR itself refers to, can use them without an import cycle.
import { Secret } from '../secret.ts';

/** Where a backend credential is written (the Authorization header with a Bearer prefix by default). */
export type AuthLocationIR =
  | { header: { name: string; prefix?: string | undefined } }
  | { queryParameter: { name: string } }
  | { cookie: { name: string } };

/** Where a credential goes when its policy does not say: the Authorization header, Bearer prefix. */
export const AUTHORIZATION: AuthLocationIR = { header: { name: 'authorization', prefix: 'Bearer ' } };

/**
 * The header (lower-case name, value) a credential is written as at `loc`; undefined when `loc` is a
 * query parameter or a cookie. What calls made outside a request's layers send too (an MCP target's,
 * a policy service's, an OTLP collector's).
 */
export function credentialHeader(
  loc: AuthLocationIR,
  value: string,
): [name: string, value: string] | undefined {
  if (!('header' in loc)) return undefined;
  return [loc.header.name.toLowerCase(), `${loc.header.prefix ?? ''}${value}`];
}

/** credentialHeader as a service call keeps it: the header and the value (prefix included) sealed. */
export function sealedHeader(
  loc: AuthLocationIR,
  value: string,
): { header: string; value: Secret } | undefined {
  const h = credentialHeader(loc, value);
  return h && { header: h[0], value: new Secret(h[1]) };
}

/** backendTLS with its files read and the key sealed. */
export interface BackendTlsIR {
  cert?: string;
  key?: Secret;
  root?: string;
  hostname?: string;
  insecure?: boolean;
  insecureHost?: boolean;
  alpn?: string[];
  subjectAltNames?: string[];
  /** Node's ecdhCurve (OpenSSL group names joined by ':'), from keyExchangeGroups. */
  ecdhCurve?: string;
}

/** A workload address of a policy's Service, dialled in turn (upstream/in-turn.ts). */
export interface InTurnEndpoint {
  host: string;
  port: number;
  /** Its share of the connections: the workload's capacity (unset: 1). */
  weight?: number;
}

/**
 * Integer shares in proportion to `weights` (each at least 1), scaled down when they add up to more
 * than `max`: how often each endpoint comes in a turn.
 */
export function scaledWeights(weights: readonly number[], max: number): number[] {
  const total = weights.reduce((a, b) => a + b, 0);
  const f = total > max ? max / total : 1;
  return weights.map((w) => Math.max(1, Math.round(w * f)));
}
