// The xDS server's own certificate authority, for `--xds-mode tls|either` without a certificate given:
// a P-256 CA (ten years) and serving certificates it signs for the names proxies dial (one year, issued
// at every start). Node can sign but not build certificates, so this writes the X.509 DER itself; only
// the few shapes needed here (RFC 5280: v3, ECDSA with SHA-256, CN-only names, the extensions below).
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
} from 'node:crypto';
import { isIP } from 'node:net';

export interface CertificateAuthority {
  /** PEM of the CA certificate: what proxies trust. */
  cert: string;
  /** PEM (PKCS#8) of its private key. */
  key: string;
}

export interface ServingCertificate {
  /** PEM chain: the serving certificate, then the CA's. */
  certChain: string;
  key: string;
}

// --- DER ---------------------------------------------------------------------------------------

function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  let len: Buffer;
  if (n < 0x80) len = Buffer.from([n]);
  else {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, content]);
}
const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const explicit = (n: number, inner: Buffer) => tlv(0xa0 | n, inner);

function int(b: Buffer): Buffer {
  // positive: a leading 1 bit needs a zero byte before it
  return tlv(0x02, b[0] !== undefined && b[0] >= 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
}

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const out = [40 * a + b];
  for (const n of rest) {
    const chunk = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime before 2050, GeneralizedTime from then on (RFC 5280 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString(); // 2026-01-02T03:04:05.678Z
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(digits.slice(2), 'ascii'))
    : tlv(0x18, Buffer.from(digits, 'ascii'));
}

const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(cn, 'utf8')))));
const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const extension = (id: string, critical: boolean, value: Buffer) =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand '::'
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.from(groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

function pem(label: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END ${label}-----\n`;
}

interface CertSpec {
  subject: string;
  issuer: string;
  publicKey: KeyObject;
  signer: KeyObject;
  issuerPublicKey: KeyObject;
  notBefore: Date;
  notAfter: Date;
  extensions: Buffer[];
}

const keyId = (k: KeyObject) =>
  createHash('sha1')
    .update(k.export({ type: 'spki', format: 'der' }))
    .digest();

function certificate(s: CertSpec): Buffer {
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01; // positive and without a leading zero byte
  const tbs = seq(
    explicit(0, int(Buffer.from([2]))), // v3
    int(serial),
    ECDSA_SHA256,
    name(s.issuer),
    seq(time(s.notBefore), time(s.notAfter)),
    name(s.subject),
    s.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(
      3,
      seq(
        ...s.extensions,
        extension('2.5.29.14', false, octets(keyId(s.publicKey))), // subjectKeyIdentifier
        extension('2.5.29.35', false, seq(tlv(0x80, keyId(s.issuerPublicKey)))), // authorityKeyIdentifier
      ),
    ),
  );
  // ECDSA signatures come DER-encoded (Ecdsa-Sig-Value), as X.509 wants them
  return seq(tbs, ECDSA_SHA256, bits(sign('sha256', tbs, s.signer)));
}

const DAY = 86_400_000;

/** A new CA: CN `gw xDS CA`, valid from an hour ago (clock skew) for ten years. */
export function generateCa(now = new Date()): CertificateAuthority {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const der = certificate({
    subject: 'gw xDS CA',
    issuer: 'gw xDS CA',
    publicKey,
    signer: privateKey,
    issuerPublicKey: publicKey,
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + 3650 * DAY),
    extensions: [
      extension('2.5.29.19', true, seq(bool(true))), // basicConstraints cA
      extension('2.5.29.15', true, bits(Buffer.from([0x06]), 1)), // keyUsage keyCertSign, cRLSign
    ],
  });
  return {
    cert: pem('CERTIFICATE', der),
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

/** A serving certificate for `names` (DNS names and IP addresses) signed by `ca`, valid for a year. */
export function issueServing(
  ca: CertificateAuthority,
  names: readonly string[],
  now = new Date(),
): ServingCertificate {
  if (names.length === 0) throw new Error('a serving certificate needs at least one name');
  const caKey = createPrivateKey(ca.key);
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const san = seq(
    ...names.map((n) => (isIP(n) ? tlv(0x87, ipBytes(n)) : tlv(0x82, Buffer.from(n, 'ascii')))),
  );
  const der = certificate({
    subject: names[0] as string,
    issuer: 'gw xDS CA',
    publicKey,
    signer: caKey,
    issuerPublicKey: createPublicKey(caKey),
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + 365 * DAY),
    extensions: [
      extension('2.5.29.19', true, seq()), // basicConstraints: not a CA
      extension('2.5.29.15', true, bits(Buffer.from([0x80]), 7)), // keyUsage digitalSignature
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage serverAuth
      extension('2.5.29.17', false, san), // subjectAltName
    ],
  });
  return {
    certChain: pem('CERTIFICATE', der) + ca.cert,
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

/**
 * The names a serving certificate carries for proxies that dial `address` (`https://host:port`): the
 * host, and for a Service name (`<svc>.<ns>.svc[.<domain>]`) its other spellings inside the cluster.
 */
export function servingNames(address: string, clusterDomain: string): string[] {
  const host = new URL(address).hostname.replace(/^\[|\]$/g, '');
  const m = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.(.+))?$/.exec(host);
  if (!m) return [host];
  const [, svc, ns] = m as unknown as [string, string, string];
  return [...new Set([host, svc, `${svc}.${ns}`, `${svc}.${ns}.svc`, `${svc}.${ns}.svc.${clusterDomain}`])];
}
