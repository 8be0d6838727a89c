// Checks a proxy's bearer token with the API server (TokenReview) for the xDS server's authenticate
// hook, and binds the token to one Gateway: a proxy may only ask for its own Gateway's config.
import http from 'node:http';
import https from 'node:https';
import type { Authenticate, AuthResult } from './server.ts';

/** How to reach the API server as the controller. */
export interface KubeConnection {
  /** `https://host:port` */
  server: string;
  /** The controller's own bearer token (in a pod: the mounted service account token). */
  token?: string;
  /** PEM of the API server's CA. */
  ca?: string | Buffer;
  /** Client certificate and key (PEM), when the controller authenticates with one. */
  cert?: string | Buffer;
  key?: string | Buffer;
}

export interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export type TokenReviewResult =
  | { authenticated: true; user: ReviewedUser; audiences?: string[] }
  | { authenticated: false; error: string };

/** POSTs a TokenReview; throws when the API server cannot be asked (the caller should retry). */
export async function reviewToken(
  kube: KubeConnection,
  token: string,
  audiences?: string[],
  timeoutMs = 5000,
): Promise<TokenReviewResult> {
  const body = JSON.stringify({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenReview',
    spec: { token, ...(audiences ? { audiences } : {}) },
  });
  const url = new URL('/apis/authentication.k8s.io/v1/tokenreviews', kube.server);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    'content-length': String(Buffer.byteLength(body)),
  };
  if (kube.token) headers.authorization = `Bearer ${kube.token}`;
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const opts: https.RequestOptions = { method: 'POST', headers, timeout: timeoutMs };
    if (kube.ca) opts.ca = kube.ca;
    if (kube.cert) opts.cert = kube.cert;
    if (kube.key) opts.key = kube.key;
    const req = (url.protocol === 'https:' ? https : http).request(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs}ms`)));
    req.on('error', reject);
    req.end(body);
  });
  if (status !== 201 && status !== 200) {
    throw new Error(`TokenReview answered ${status}: ${text.slice(0, 300)}`);
  }
  const review = JSON.parse(text) as {
    status?: { authenticated?: boolean; user?: ReviewedUser; audiences?: string[]; error?: string };
  };
  const s = review.status ?? {};
  if (!s.authenticated || !s.user)
    return { authenticated: false, error: s.error || 'token not authenticated' };
  return { authenticated: true, user: s.user, ...(s.audiences ? { audiences: s.audiences } : {}) };
}

/**
 * The default binding of a token to a Gateway: the proxy runs as the ServiceAccount the deployer
 * names after its Gateway, so `system:serviceaccount:<namespace>:<name>` may read Gateway
 * `<namespace>/<name>` and nothing else.
 */
export function serviceAccountGateway(user: ReviewedUser): string | undefined {
  const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(user.username);
  return m ? `${m[1]}/${m[2]}` : undefined;
}

export interface TokenReviewAuthOptions {
  /** Audiences the token must carry (the proxy's projected token audience). */
  audiences?: string[];
  /** Which Gateway a reviewed user may read; undefined refuses the user. Default serviceAccountGateway. */
  gatewayOf?: (user: ReviewedUser) => string | undefined;
  /** How long a verdict is kept per token (default 60 s); reconnect storms then cost one review each. */
  cacheMs?: number;
  now?: () => number;
}

/** An `authenticate` hook for startXdsServer backed by TokenReview. */
export function tokenReviewAuthenticator(
  kube: KubeConnection,
  opts: TokenReviewAuthOptions = {},
): Authenticate {
  const gatewayOf = opts.gatewayOf ?? serviceAccountGateway;
  const cacheMs = opts.cacheMs ?? 60_000;
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { until: number; result: AuthResult }>();
  return async (token) => {
    const hit = cache.get(token);
    if (hit && hit.until > now()) return hit.result;
    const review = await reviewToken(kube, token, opts.audiences);
    let result: AuthResult;
    if (!review.authenticated) result = { ok: false, reason: review.error };
    else {
      const gateway = gatewayOf(review.user);
      result =
        gateway === undefined
          ? { ok: false, reason: `${review.user.username} may not read any Gateway's configuration` }
          : { ok: true, gateway };
    }
    for (const [k, v] of cache) if (v.until <= now()) cache.delete(k);
    cache.set(token, { until: now() + cacheMs, result });
    return result;
  };
}
