// Checks an AWS SigV4 Authorization header the way an AWS service does: the credential scope, the
// date, the signed headers, and the signature itself, recomputed with the AWS SDK's own signer
// (@smithy/signature-v4) from the same credentials over the request as it arrived.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';

export interface AwsCredentialsForTest {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface VerifiedSigV4 {
  accessKeyId: string;
  region: string;
  service: string;
  signedHeaders: string[];
}

export type SigV4Check =
  | { ok: true; sigv4: VerifiedSigV4 }
  | { ok: false; reason: string; sigv4?: VerifiedSigV4 };

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
};

/** Whether `req` (with `body`) carries a valid signature by one of `keys` for `service` in `region`. */
export async function verifySigV4(
  req: IncomingMessage,
  body: Buffer,
  keys: AwsCredentialsForTest[],
  service: string,
  region: string,
): Promise<SigV4Check> {
  const auth = header(req, 'authorization') ?? '';
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;:-]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (!m) return { ok: false, reason: 'missing or malformed SigV4 Authorization header' };
  const [, accessKeyId, date, scopeRegion, scopeService, signed, signature] = m as unknown as string[];
  const signedHeaders = (signed as string).split(';');
  const sigv4 = {
    accessKeyId: accessKeyId as string,
    region: scopeRegion as string,
    service: scopeService as string,
    signedHeaders,
  };
  const fail = (reason: string): SigV4Check => ({ ok: false, reason, sigv4 });
  const key = keys.find((k) => k.accessKeyId === accessKeyId);
  if (!key) return fail(`unknown access key ${accessKeyId}`);
  if (scopeService !== service) return fail(`credential scope names service ${scopeService}, not ${service}`);
  if (scopeRegion !== region) return fail(`credential scope names region ${scopeRegion}, not ${region}`);
  if (!signedHeaders.includes('host') && !signedHeaders.includes(':authority'))
    return fail('SignedHeaders lacks host');
  if (!signedHeaders.includes('x-amz-date')) return fail('SignedHeaders lacks x-amz-date');
  const amzDate = header(req, 'x-amz-date') ?? '';
  const d = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!d || !amzDate.startsWith(date as string))
    return fail(`x-amz-date ${amzDate} does not match the scope`);
  const when = new Date(Date.UTC(+d[1]!, +d[2]! - 1, +d[3]!, +d[4]!, +d[5]!, +d[6]!));
  if (Math.abs(when.getTime() - Date.now()) > 5 * 60_000) return fail('signature expired');
  const sha = header(req, 'x-amz-content-sha256');
  if (sha !== undefined && sha !== createHash('sha256').update(body).digest('hex'))
    return fail('x-amz-content-sha256 does not match the body');
  if (key.sessionToken !== undefined && header(req, 'x-amz-security-token') !== key.sessionToken)
    return fail('missing or wrong x-amz-security-token');
  const headers: Record<string, string> = {};
  for (const h of signedHeaders) {
    const v = header(req, h);
    if (v === undefined) return fail(`signed header ${h} was not sent`);
    headers[h] = v;
  }
  const url = req.url ?? '/';
  const query: Record<string, string> = {};
  for (const [k, v] of new URL(url, 'http://x').searchParams) query[k] = v;
  const signer = new SignatureV4({
    credentials: key,
    region,
    service,
    sha256: Hash.bind(null, 'sha256'),
  });
  const expected = await signer.sign(
    {
      method: req.method ?? 'GET',
      protocol: 'https:',
      hostname: headers.host ?? '',
      // As sent (already escaped once): the signer escapes it again, as AWS does for non-S3 services.
      path: url.split('?', 1)[0] ?? '',
      query,
      headers,
      body,
    },
    { signingDate: when },
  );
  const got = /Signature=([0-9a-f]{64})/.exec(String(expected.headers.authorization))?.[1];
  return got === signature ? { ok: true, sigv4 } : fail('signature does not match');
}
