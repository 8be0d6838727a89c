// backendAuth: the credential the gateway presents to the upstream, written on every attempt just
// before the call (a backend's innermost policy, so inside retries and after the route's policies):
// a configured key, the client's validated JWT, a JWT signed per request, an AWS SigV4 signature, or
// a token: from Google's or Azure's credential chain (cloud.ts), or from an OAuth token endpoint by
// token exchange or cross-app access (oauth.ts), cached until shortly before it expires.
// Written to the Authorization header (Bearer) unless a location says otherwise; whatever the client
// had there is replaced. The trace records the variant, never the credential.
import { createPrivateKey } from 'node:crypto';
import type { Readable } from 'node:stream';
import { SignJWT } from 'jose';
import { AUTHORIZATION, credentialHeader } from '../../config/connection-ir.ts';
import type { AuthLocationIR, BackendAuthIR, ExtraCredentialIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import { awsSigner } from '../../llm/providers/bedrock/sigv4.ts';
import { bufferUpTo } from '../../pipeline/body.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import type { Layer } from '../../pipeline/layer.ts';
import type { PolicyDefinition } from '../types.ts';
import { assumeRole } from './aws-assume-role.ts';
import { azure, gcp } from './cloud.ts';
import { copilotToken } from './copilot-token.ts';
import { crossAppAccess, type TokenSource, tokenExchange } from './oauth.ts';

/** Where a credential goes when its location says nothing: the Authorization header, Bearer. */
export { AUTHORIZATION, credentialHeader } from '../../config/connection-ir.ts';

/** API Gateway is what a SigV4-signed plain HTTP backend most often is. */
const DEFAULT_AWS_SERVICE = 'execute-api';

/** Where a form writes its credential: into the request (`write`), or a service call's headers. */
type Put = (ctx: RequestContext, loc: AuthLocationIR, value: string) => void;
/** Writes the credential (through `put`); what it returns tells the trace how it was obtained. */
type Apply = (ctx: RequestContext, put: Put) => Promise<string | undefined> | string | undefined;

export const backendAuth: PolicyDefinition<'backendAuth'> = {
  name: 'backendAuth',
  build: (config, env) => backendAuthLayer(config, env.global.maxBufferSize),
};

/**
 * The credential written into the request just before `next` sends it; what an LLM provider's `auth`
 * uses too, after the provider has put its request together. `maxBody`: what the aws form may read
 * to sign a streamed body.
 */
export function backendAuthLayer(config: BackendAuthIR, maxBody: number): Layer {
  const variant = Object.keys(config).find((k) => k !== 'credentials') ?? 'credentials';
  const apply = withCredentials(config, compile(config, maxBody));
  return async (ctx, next) => {
    const start = performance.now();
    let note: string | undefined;
    try {
      note = await apply(ctx, write);
    } catch (err) {
      const reason = err instanceof GwError ? err.detail : 'failed';
      ctx.obs?.event(ctx, 'backendAuth', { message: `auth failed: ${variant}: ${reason}`, variant }, start);
      throw err;
    }
    ctx.obs?.event(
      ctx,
      'backendAuth',
      { message: `auth applied: ${variant}${note ? ` (${note})` : ''}`, variant },
      start,
    );
    return next(ctx);
  };
}

/**
 * backendAuth on a call to a policy's own service (extAuthz, extProc, remoteRateLimit) that the call
 * obtains for the request it is made for: a token from its source, a JWT signed, the client's
 * validated JWT. The headers (gRPC metadata) it gives, each where its location says (the loader
 * allowed headers only); undefined for a form written once, a key (policies/service-call.ts).
 */
export function serviceCredential(
  config: BackendAuthIR,
): (ctx: RequestContext) => Promise<Record<string, string>> {
  const apply = withCredentials(config, compile(config, 0));
  return async (ctx) => {
    const out: Record<string, string> = {};
    await apply(ctx, (_ctx, loc, value) => {
      const h = credentialHeader(loc, value);
      if (!h) return;
      // gRPC metadata takes printable ASCII only; the value itself is never told
      if (!/^[\x20-\x7e]*$/.test(h[1]))
        throw new GwError(
          'GW_ERR_BACKEND_AUTH',
          `the credential for ${h[0]} holds characters no header takes`,
        );
      out[h[0]] = h[1];
    });
    return out;
  };
}

/**
 * The extra `credentials` written before the main form: the form wins a place both name, and an AWS
 * signature covers a query parameter they add.
 */
function withCredentials(config: BackendAuthIR, apply: Apply | undefined): Apply {
  const extra = config.credentials ?? [];
  if (extra.length === 0 && apply) return apply;
  return (ctx, put) => {
    writeAll(ctx, extra, put);
    return apply?.(ctx, put);
  };
}

function writeAll(ctx: RequestContext, extra: readonly ExtraCredentialIR[], put: Put): void {
  for (const c of extra) put(ctx, c.location, c.value.reveal());
}

/** The main form's writer; undefined when there is none (`credentials` alone). */
function compile(config: BackendAuthIR, maxBody: number): Apply | undefined {
  if ('key' in config) {
    const { value, location } = config.key;
    return (ctx, put) => {
      put(ctx, location ?? AUTHORIZATION, value.reveal());
      return undefined;
    };
  }
  if ('passthrough' in config) {
    const location = config.passthrough.location ?? AUTHORIZATION;
    return (ctx, put) => {
      const token = ctx.ext.jwtToken;
      if (token === undefined) return 'no validated JWT to forward';
      put(ctx, location, token.reveal());
      return undefined;
    };
  }
  if ('copilot' in config)
    return async (ctx) => {
      const token = await copilotToken();
      if (token === undefined)
        throw new GwError(
          'GW_ERR_INTERNAL',
          'backendAuth copilot: no GitHub token (set GH_COPILOT_TOKEN, or sign in with GitHub Copilot or the GitHub CLI)',
        );
      ctx.headers.authorization = `Bearer ${token}`;
      return undefined;
    };
  if ('jwtSign' in config) return jwtSign(config.jwtSign);
  if ('aws' in config) return aws(config.aws, maxBody);
  if ('gcp' in config) return bearer(gcp(config.gcp), AUTHORIZATION, config.gcp.type);
  if ('azure' in config)
    return bearer(azure(config.azure), AUTHORIZATION, Object.keys(config.azure.source)[0]);
  if ('oauthTokenExchange' in config) {
    const c = config.oauthTokenExchange;
    return bearer(tokenExchange(c), c.location ?? AUTHORIZATION, c.grantType);
  }
  if ('crossAppAccess' in config) return bearer(crossAppAccess(config.crossAppAccess), AUTHORIZATION);
  return undefined;
}

/** A token from `source` written to `location`; `note` tells the trace how it was obtained. */
function bearer(source: TokenSource, location: AuthLocationIR, note?: string): Apply {
  return async (ctx, put) => {
    put(ctx, location, await source(ctx));
    return note;
  };
}

function jwtSign(c: Extract<BackendAuthIR, { jwtSign: unknown }>['jwtSign']): Apply {
  // Parsed once: the loader checked it is a PEM key of the kind alg needs.
  const key = createPrivateKey(c.signingKey.reveal());
  const header = { alg: c.alg, typ: 'JWT', ...(c.kid ? { kid: c.kid } : {}) };
  const location = c.location ?? AUTHORIZATION;
  return async (ctx, put) => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ ...c.claims })
      .setProtectedHeader(header)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + c.ttlSeconds)
      .sign(key);
    put(ctx, location, token);
    return undefined;
  };
}

function aws(c: Extract<BackendAuthIR, { aws: unknown }>['aws'], maxBody: number): Apply {
  const region = c.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  const service = c.service ?? DEFAULT_AWS_SERVICE;
  const creds = c.credentials && {
    accessKeyId: c.credentials.accessKeyId,
    secretAccessKey: c.credentials.secretAccessKey.reveal(),
    ...(c.credentials.sessionToken ? { sessionToken: c.credentials.sessionToken.reveal() } : {}),
  };
  const role = c.assumeRole && region ? assumeRole(c.assumeRole, region) : undefined;
  return async (ctx) => {
    if (!region)
      throw new GwError(
        'GW_ERR_INTERNAL',
        'backendAuth aws: no region to sign for (set aws.region or AWS_REGION)',
      );
    // The signature covers the body's hash, so the body is read first (up to the buffer limit).
    let body: Buffer = Buffer.alloc(0);
    if (Buffer.isBuffer(ctx.body)) body = ctx.body;
    else if (ctx.body) {
      const declared = Number(ctx.headers['content-length'] ?? Number.NaN);
      const r = await bufferUpTo(
        ctx.body as Readable,
        maxBody,
        Number.isNaN(declared) ? undefined : declared,
        ctx,
      );
      if (!r.ok) {
        ctx.body = r.stream;
        throw new GwError(
          'GW_ERR_REQUEST_TOO_LARGE',
          'backendAuth aws signs the body, which is larger than the buffer limit',
        );
      }
      body = r.data;
      ctx.body = body;
    }
    // Only what the gateway controls is signed: host, content type and the x-amz-* the signer adds.
    const host = String(ctx.headers.host ?? ctx.authority);
    const contentType = ctx.headers['content-type'];
    const query: Record<string, string | string[]> = {};
    for (const [k, v] of new URLSearchParams(ctx.query)) {
      const prev = query[k];
      query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    const signed = await (await awsSigner(region, service, role ? await role(ctx) : creds)).sign({
      method: ctx.method,
      protocol: 'https:',
      hostname: host,
      path: ctx.path,
      query,
      headers: { host, ...(contentType !== undefined ? { 'content-type': String(contentType) } : {}) },
      body,
    });
    for (const [k, v] of Object.entries(signed.headers)) ctx.headers[k.toLowerCase()] = v;
    return undefined;
  };
}

/** Writes `value` where `loc` says, replacing what the request had there. */
function write(ctx: RequestContext, loc: AuthLocationIR, value: string): void {
  if ('header' in loc) {
    const [name, v] = credentialHeader(loc, value) as [string, string];
    ctx.headers[name] = v;
    return;
  }
  if ('queryParameter' in loc) {
    const p = new URLSearchParams(ctx.query);
    p.set(loc.queryParameter.name, value);
    ctx.query = `?${p.toString()}`;
    return;
  }
  const name = loc.cookie.name;
  const cookie = ctx.headers.cookie;
  const others = (Array.isArray(cookie) ? cookie.join('; ') : (cookie ?? ''))
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p !== '' && p.slice(0, p.indexOf('=')).trim() !== name);
  ctx.headers.cookie = [...others, `${name}=${encodeURIComponent(value)}`].join('; ');
}
