// AWS SigV4 for a provider request, by the AWS SDK's signer (@smithy/signature-v4, SHA-256 from
// node:crypto as the SDK uses in Node). Only the headers the gateway controls are signed (host,
// content type and length, the x-amz-* it adds), so client headers passed on cannot break the
// signature. Credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY[/AWS_SESSION_TOKEN] when set, read
// at each request; otherwise the SDK's default chain (profiles, SSO, web identity, container and
// instance metadata), loaded on first use and cached by it until the credentials expire. When the
// chain finds nothing (its metadata lookups take seconds to time out off AWS), requests fail at once
// for a minute before it is asked again. The signer modules (about 12 MiB of RSS in each thread) load
// on the first signature, so a config that signs nothing never pays for them.
import type { SignatureV4 } from '@smithy/signature-v4';
import { GwError } from '../../../errors.ts';
import { Lazy } from '../../../lazy.ts';
import type { ProviderRequest } from '../types.ts';

const smithy = new Lazy(async () => {
  const [{ Hash }, { SignatureV4 }] = await Promise.all([
    import('@smithy/hash-node'),
    import('@smithy/signature-v4'),
  ]);
  return { SignatureV4, Sha256: Hash.bind(null, 'sha256') };
});

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

let chain: (() => Promise<AwsCredentials>) | undefined;
let missing: { until: number; message: string } | undefined;
const RETRY_MS = 60_000;

async function credentials(): Promise<AwsCredentials> {
  const id = process.env.AWS_ACCESS_KEY_ID;
  const secret = process.env.AWS_SECRET_ACCESS_KEY;
  if (id && secret) {
    const token = process.env.AWS_SESSION_TOKEN;
    return { accessKeyId: id, secretAccessKey: secret, ...(token ? { sessionToken: token } : {}) };
  }
  if (missing && Date.now() < missing.until) {
    throw new GwError('GW_ERR_INTERNAL', `no AWS credentials to sign with: ${missing.message}`);
  }
  if (!chain) {
    const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
    chain = defaultProvider();
  }
  try {
    const c = await chain();
    missing = undefined;
    return c;
  } catch (err) {
    const message = (err as Error).message;
    missing = { until: Date.now() + RETRY_MS, message };
    // A fresh chain next time: the memoised one would keep its failure.
    chain = undefined;
    throw new GwError('GW_ERR_INTERNAL', `no AWS credentials to sign with: ${message}`);
  }
}

// One signer per region and service: it caches the day's signing key for the credentials it is given.
const signers = new Map<string, SignatureV4>();

/** The SDK's signer for `region` and `service`, with `creds` (configured) or the chain above. */
export async function awsSigner(
  region: string,
  service: string,
  creds?: AwsCredentials,
): Promise<SignatureV4> {
  const { SignatureV4, Sha256 } = smithy.value ?? (await smithy.ready);
  // Configured credentials get a signer of their own each time: a cached one would outlive a reload.
  if (creds) return new SignatureV4({ credentials: creds, region, service, sha256: Sha256 });
  const key = `${region}/${service}`;
  let signer = signers.get(key);
  if (!signer) {
    signer = new SignatureV4({ credentials, region, service, sha256: Sha256 });
    signers.set(key, signer);
  }
  return signer;
}

/** Signs `req` in place for `service` in `region`, with `creds` (configured) or the chain above. */
export async function sigV4(
  req: ProviderRequest,
  region: string,
  service: string,
  creds?: AwsCredentials,
): Promise<void> {
  const signer = await awsSigner(region, service, creds);
  const q = req.path.indexOf('?');
  const query: Record<string, string | string[]> = {};
  if (q !== -1) {
    for (const [k, v] of new URLSearchParams(req.path.slice(q + 1))) {
      const prev = query[k];
      query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
  }
  const host = String(req.headers.host);
  const signed = await signer.sign({
    method: req.method,
    protocol: 'https:',
    hostname: host,
    path: q === -1 ? req.path : req.path.slice(0, q),
    query,
    headers: {
      host,
      'content-type': String(req.headers['content-type'] ?? 'application/json'),
      'content-length': String(req.body.length),
    },
    body: req.body,
  });
  for (const [k, v] of Object.entries(signed.headers)) req.headers[k.toLowerCase()] = v;
}
