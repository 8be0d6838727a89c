// What a PEM file of CA certificates (a listener's tls.root) must hold: Node takes a file with none
// in it without a word, and the listener then refuses every client certificate. agentgateway refuses
// such a file at load ("no root trust anchors were provided"); so does gw, naming the field.
import { X509Certificate } from 'node:crypto';

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
/** The labels OpenSSL reads a certificate under. */
const CERTIFICATE_LABELS = new Set(['CERTIFICATE', 'X509 CERTIFICATE', 'TRUSTED CERTIFICATE']);

/** Why `pem` is not a list of CA certificates (none in it, one that does not parse), else undefined. */
export function caCertificatesProblem(pem: string): string | undefined {
  let n = 0;
  for (const m of pem.matchAll(BLOCK)) {
    const label = m[1] as string;
    if (!CERTIFICATE_LABELS.has(label)) continue;
    n++;
    if (label !== 'CERTIFICATE') continue;
    try {
      new X509Certificate(m[0]);
    } catch (err) {
      return `certificate ${n} in it does not parse: ${(err as Error).message}`;
    }
  }
  return n === 0 ? 'no CA certificate in it (PEM "-----BEGIN CERTIFICATE-----" blocks)' : undefined;
}
