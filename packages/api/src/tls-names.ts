// TLS names as users write them (agentgateway's standalone config, the CRDs) and as Node's TLS
// (OpenSSL) knows them: protocol versions, cipher suites and key exchange groups. One table each, so a
// listener's tls, frontendPolicies.tls and a GwPolicy's frontend tls mean the same handshake.
import { createSecureContext } from 'node:tls';

/** TLS versions: agentgateway's config spelling (TLS_V1_2) and the CRDs' (TLS12), as Node's. */
export const TLS_VERSIONS = {
  TLS_V1_2: 'TLSv1.2',
  TLS_V1_3: 'TLSv1.3',
  TLS12: 'TLSv1.2',
  TLS13: 'TLSv1.3',
} as const;
export type NodeTlsVersion = (typeof TLS_VERSIONS)[keyof typeof TLS_VERSIONS];

export const nodeTlsVersion = (v: string | null | undefined): NodeTlsVersion | undefined =>
  v ? TLS_VERSIONS[v as keyof typeof TLS_VERSIONS] : undefined;

/**
 * The cipher suites a listener may restrict itself to, by the names agentgateway accepts (rustls's,
 * e.g. TLS13_AES_256_GCM_SHA384 or TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, and OpenSSL's/IANA's, e.g.
 * TLS_AES_256_GCM_SHA384 or ECDHE-RSA-AES128-GCM-SHA256) → OpenSSL's name and whether it is TLS 1.3's.
 */
const suite = (openssl: string, tls13 = false) => ({ openssl, tls13 });
export const CIPHER_SUITES = {
  TLS13_AES_256_GCM_SHA384: suite('TLS_AES_256_GCM_SHA384', true),
  TLS_AES_256_GCM_SHA384: suite('TLS_AES_256_GCM_SHA384', true),
  TLS13_AES_128_GCM_SHA256: suite('TLS_AES_128_GCM_SHA256', true),
  TLS_AES_128_GCM_SHA256: suite('TLS_AES_128_GCM_SHA256', true),
  TLS13_CHACHA20_POLY1305_SHA256: suite('TLS_CHACHA20_POLY1305_SHA256', true),
  TLS_CHACHA20_POLY1305_SHA256: suite('TLS_CHACHA20_POLY1305_SHA256', true),
  'ECDHE-ECDSA-AES256-GCM-SHA384': suite('ECDHE-ECDSA-AES256-GCM-SHA384'),
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: suite('ECDHE-ECDSA-AES256-GCM-SHA384'),
  'ECDHE-ECDSA-AES128-GCM-SHA256': suite('ECDHE-ECDSA-AES128-GCM-SHA256'),
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: suite('ECDHE-ECDSA-AES128-GCM-SHA256'),
  'ECDHE-ECDSA-CHACHA20-POLY1305': suite('ECDHE-ECDSA-CHACHA20-POLY1305'),
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: suite('ECDHE-ECDSA-CHACHA20-POLY1305'),
  'ECDHE-RSA-AES256-GCM-SHA384': suite('ECDHE-RSA-AES256-GCM-SHA384'),
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: suite('ECDHE-RSA-AES256-GCM-SHA384'),
  'ECDHE-RSA-AES128-GCM-SHA256': suite('ECDHE-RSA-AES128-GCM-SHA256'),
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: suite('ECDHE-RSA-AES128-GCM-SHA256'),
  'ECDHE-RSA-CHACHA20-POLY1305': suite('ECDHE-RSA-CHACHA20-POLY1305'),
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: suite('ECDHE-RSA-CHACHA20-POLY1305'),
} as const;
export const CIPHER_SUITE_NAMES = Object.keys(CIPHER_SUITES) as [
  keyof typeof CIPHER_SUITES,
  ...(keyof typeof CIPHER_SUITES)[],
];

/** Key exchange groups (agentgateway's and the CRDs' names) → the names OpenSSL (Node's `ecdhCurve`) uses. */
export const KEY_EXCHANGE_GROUPS = {
  X25519: 'X25519',
  'P-256': 'P-256',
  'P-384': 'P-384',
  X25519_MLKEM768: 'X25519MLKEM768',
} as const;

/** Node's `ecdhCurve` for a list of groups (the order is the preference). */
export function ecdhCurveOf(groups: readonly string[]): string {
  return groups.map((g) => KEY_EXCHANGE_GROUPS[g as keyof typeof KEY_EXCHANGE_GROUPS] ?? g).join(':');
}

const groupSupport = new Map<string, boolean>();
/** Whether this process's TLS library offers `group` (X25519MLKEM768 needs OpenSSL 3.5 or later). */
export function keyExchangeGroupAvailable(group: string): boolean {
  let ok = groupSupport.get(group);
  if (ok === undefined) {
    try {
      createSecureContext({
        ecdhCurve: KEY_EXCHANGE_GROUPS[group as keyof typeof KEY_EXCHANGE_GROUPS] ?? group,
      });
      ok = true;
    } catch {
      ok = false;
    }
    groupSupport.set(group, ok);
  }
  return ok;
}

/** What a server's handshake allows, as Node's TLS options. */
export interface ServerHandshake {
  minVersion?: NodeTlsVersion;
  maxVersion?: NodeTlsVersion;
  /** OpenSSL's cipher list (TLS 1.3 suites and TLS 1.2 ones, in order). */
  ciphers?: string;
  /** The key exchange groups, in order of preference. */
  ecdhCurve?: string;
}

/**
 * The Node options for a server's handshake settings, or the reason they allow no handshake. A list of
 * suites without a TLS 1.3 one allows TLS 1.2 only (and without a TLS 1.2 one, TLS 1.3 only), as
 * agentgateway's TLS library does; Node would otherwise add its default TLS 1.3 suites.
 */
export function serverHandshake(s: {
  minVersion?: string | null | undefined;
  maxVersion?: string | null | undefined;
  cipherSuites?: readonly string[] | null | undefined;
  keyExchangeGroups?: readonly string[] | null | undefined;
}): { ok: ServerHandshake } | { error: string; field: 'cipherSuites' | 'maxVersion' | 'keyExchangeGroups' } {
  let min = nodeTlsVersion(s.minVersion);
  let max = nodeTlsVersion(s.maxVersion);
  if (min === 'TLSv1.3' && max === 'TLSv1.2')
    return { error: 'the maximum TLS version is below the minimum', field: 'maxVersion' };
  const out: ServerHandshake = {};
  if (s.cipherSuites && s.cipherSuites.length > 0) {
    const suites = s.cipherSuites.map((n) => CIPHER_SUITES[n as keyof typeof CIPHER_SUITES]);
    const has13 = suites.some((x) => x?.tls13);
    const has12 = suites.some((x) => x && !x.tls13);
    if (!has13) {
      if (min === 'TLSv1.3')
        return {
          error: 'no cipher suite of TLS 1.3 is listed, and the minimum version is TLS 1.3',
          field: 'cipherSuites',
        };
      max = 'TLSv1.2';
    }
    if (!has12) {
      if (max === 'TLSv1.2')
        return {
          error: 'no cipher suite of TLS 1.2 is listed, and the maximum version is TLS 1.2',
          field: 'cipherSuites',
        };
      min = 'TLSv1.3';
    }
    out.ciphers = [...new Set(suites.map((x) => x?.openssl).filter(Boolean))].join(':');
  }
  if (s.keyExchangeGroups && s.keyExchangeGroups.length > 0) {
    const missing = s.keyExchangeGroups.find((g) => !keyExchangeGroupAvailable(g));
    if (missing !== undefined)
      return {
        error: `key exchange group ${missing} is not available in this build's TLS library (OpenSSL ${process.versions.openssl})`,
        field: 'keyExchangeGroups',
      };
    out.ecdhCurve = ecdhCurveOf(s.keyExchangeGroups);
  }
  if (min) out.minVersion = min;
  if (max) out.maxVersion = max;
  return { ok: out };
}
