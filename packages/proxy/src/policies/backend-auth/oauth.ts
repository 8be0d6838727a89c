// The OAuth forms of backendAuth: oauthTokenExchange (RFC 8693 token exchange, or the RFC 7523
// jwt-bearer grant with the subject token as the assertion) and crossAppAccess (an Identity Assertion
// JWT Authorization Grant: the user's identity provider exchanges the subject token for an ID-JAG
// bound to the resource's authorization server, which exchanges it for an access token). Tokens are
// cached per subject (token-cache.ts). A token endpoint's error is named with its status and OAuth
// error code, never with a token or secret.
import { createHash, createPrivateKey, randomUUID } from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import type { CelProgram } from '../../cel/cel.ts';
import { compileCel } from '../../cel/cel.ts';
import type {
  ClientAuthIR,
  CrossAppAccessIR,
  OAuthTokenExchangeIR,
  TokenEndpointIR,
} from '../../config/token-auth.ts';
import { GwError } from '../../errors.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import {
  BEARER,
  type CredentialLocation,
  compileLocation,
  readCredential,
} from '../../pipeline/credential-location.ts';
import { serviceAgent } from '../../upstream/pools.ts';
import { request } from '../../upstream/undici.ts';
import { type Token, TokenCache } from './token-cache.ts';

const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const GRANT_JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const TOKEN_TYPE_ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** A token endpoint's answer is a small JSON document. */
const MAX_ANSWER = 256 * 1024;
const TIMEOUT_MS = 10_000;

/** Reads a token for the request; `undefined` when it has none. */
export type TokenSource = (ctx: RequestContext) => Promise<string>;

export function tokenExchange(c: OAuthTokenExchangeIR): TokenSource {
  const form = 'backendAuth oauthTokenExchange';
  const call = endpointCaller(c.endpoint, form);
  const cache = new TokenCache(c.cache.maxEntries);
  const subject = subjectReader(c.subjectToken.source);
  const actor = c.actorToken ? compileLocation(c.actorToken.source, BEARER) : undefined;
  const extra = Object.entries(c.additionalParams).map(([k, v]) => [k, compileCel(v)] as const);
  return async (ctx) => {
    const subjectToken = subject(ctx, form);
    const actorToken = actor ? readCredential(ctx, actor)?.value : undefined;
    if (c.actorToken?.enforceMayAct) mayAct(subjectToken, actorToken, form);
    const params = new URLSearchParams();
    if (c.grantType === 'jwtBearer') {
      params.set('grant_type', GRANT_JWT_BEARER);
      params.set('assertion', subjectToken);
    } else {
      params.set('grant_type', GRANT_TOKEN_EXCHANGE);
      params.set('subject_token', subjectToken);
      params.set('subject_token_type', c.subjectToken.tokenType);
      if (actorToken !== undefined && c.actorToken) {
        params.set('actor_token', actorToken);
        params.set('actor_token_type', c.actorToken.tokenType);
      }
      if (c.requestedTokenType) params.set('requested_token_type', c.requestedTokenType);
    }
    for (const a of c.audiences) params.append('audience', a);
    for (const r of c.resources) params.append('resource', r);
    if (c.scopes.length > 0) params.set('scope', c.scopes.join(' '));
    for (const [k, program] of extra) {
      const v = evalParam(program, ctx);
      if (v !== undefined) params.set(k, v);
    }
    const key = digest(params.toString());
    const t = await cache.get(key, () => call(params, c.cache.defaultTtlMs));
    return t.value;
  };
}

export function crossAppAccess(c: CrossAppAccessIR): TokenSource {
  const form = 'backendAuth crossAppAccess';
  const idp = endpointCaller(c.identityProvider, `${form} identityProvider`);
  const ras = endpointCaller(c.resourceAuthorizationServer, `${form} resourceAuthorizationServer`);
  const cache = new TokenCache(c.cache.maxEntries);
  const subject = subjectReader(c.subjectToken.source);
  return async (ctx) => {
    const subjectToken = subject(ctx, form);
    const t = await cache.get(digest(subjectToken), async () => {
      const first = new URLSearchParams({
        grant_type: GRANT_TOKEN_EXCHANGE,
        requested_token_type: TOKEN_TYPE_ID_JAG,
        audience: c.audience,
        subject_token: subjectToken,
        subject_token_type: c.subjectToken.tokenType,
      });
      for (const r of c.resources) first.append('resource', r);
      if (c.scopes.length > 0) first.set('scope', c.scopes.join(' '));
      const jag = await idp(first, c.cache.defaultTtlMs, TOKEN_TYPE_ID_JAG);
      const second = new URLSearchParams({ grant_type: GRANT_JWT_BEARER, assertion: jag.value });
      for (const r of c.resources) second.append('resource', r);
      if (c.accessTokenScopes.length > 0) second.set('scope', c.accessTokenScopes.join(' '));
      return ras(second, c.cache.defaultTtlMs);
    });
    return t.value;
  };
}

/**
 * RFC 8693 §4.4: the subject token's may_act claim names who may act for the subject (`sub`, and
 * `iss` when given); the actor token must be that party, or the exchange is not asked for (403). The
 * tokens' signatures are the token endpoint's to check: here only their claims are read.
 */
function mayAct(subjectToken: string, actorToken: string | undefined, form: string): undefined {
  const deny = (why: string): never => {
    throw new GwError('GW_ERR_FORBIDDEN', `${form}: ${why}`);
  };
  if (actorToken === undefined) return deny('the request has no actor token for may_act to authorize');
  const claims = (t: string, what: string): Record<string, unknown> => {
    try {
      return decodeJwt(t);
    } catch {
      return deny(`the ${what} token is not a JWT: may_act cannot be read`);
    }
  };
  const allowed = claims(subjectToken, 'subject').may_act;
  if (!allowed || typeof allowed !== 'object' || Array.isArray(allowed))
    return deny('the subject token has no may_act claim: no actor may act for it');
  const { sub, iss } = allowed as { sub?: unknown; iss?: unknown };
  const actor = claims(actorToken, 'actor');
  if (typeof sub !== 'string' || actor.sub !== sub || (iss !== undefined && actor.iss !== iss))
    deny("the actor token's subject is not the one the subject token's may_act names");
  return undefined;
}

/** The subject token of a request: the configured place, else the Authorization bearer token. */
function subjectReader(source: OAuthTokenExchangeIR['subjectToken']['source']) {
  const loc: CredentialLocation = compileLocation(source, BEARER);
  return (ctx: RequestContext, form: string): string => {
    const v = readCredential(ctx, loc)?.value;
    // jwtAuth removes the token it validated; the default place then means that token
    const token = v ?? (source === undefined ? ctx.ext.jwtToken?.reveal() : undefined);
    if (!token)
      throw new GwError('GW_ERR_UNAUTHENTICATED', `${form}: the request has no subject token to exchange`);
    return token;
  };
}

function evalParam(program: CelProgram, ctx: RequestContext): string | undefined {
  const v = program.eval(ctx.celContext());
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

const digest = (s: string) => createHash('sha256').update(s).digest('base64url');

/**
 * Posts a token request to an endpoint with its client authentication and reads the token from the
 * answer (`wantType`: the issued_token_type it must have, when given).
 */
function endpointCaller(e: TokenEndpointIR, form: string) {
  const url = e.origin + e.path;
  const dispatcher = serviceAgent('token', e.endpoints, e.tls, { keepAliveTimeout: 30_000 });
  const signer = e.clientAuth?.method === 'privateKeyJwt' ? clientAssertion(e.clientAuth) : undefined;
  return async (params: URLSearchParams, defaultTtlMs: number, wantType?: string): Promise<Token> => {
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    const ca = e.clientAuth;
    if (ca?.method === 'clientSecretBasic') {
      const enc = (s: string) => encodeURIComponent(s);
      headers.authorization = `Basic ${Buffer.from(`${enc(ca.clientId)}:${enc(ca.secret?.reveal() ?? '')}`).toString('base64')}`;
    } else if (ca?.method === 'clientSecretPost') {
      params.set('client_id', ca.clientId);
      if (ca.secret) params.set('client_secret', ca.secret.reveal());
    } else if (ca && signer) {
      params.set('client_id', ca.clientId);
      params.set('client_assertion_type', CLIENT_ASSERTION_TYPE);
      params.set('client_assertion', await signer());
    }
    let status: number;
    let text: string;
    try {
      const res = await request(url, {
        method: 'POST',
        headers,
        body: params.toString(),
        dispatcher: dispatcher(),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      status = res.statusCode;
      text = await readText(res.body, MAX_ANSWER);
    } catch (err) {
      throw new GwError('GW_ERR_BACKEND_AUTH', `${form}: token endpoint ${url} failed: ${reason(err)}`, {
        cause: err,
      });
    }
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object') body = parsed as Record<string, unknown>;
    } catch {}
    if (status !== 200) {
      const code = typeof body.error === 'string' ? ` ${body.error.slice(0, 64)}` : '';
      throw new GwError('GW_ERR_BACKEND_AUTH', `${form}: token endpoint ${url} answered ${status}${code}`);
    }
    const token = body.access_token;
    if (typeof token !== 'string' || token === '')
      throw new GwError(
        'GW_ERR_BACKEND_AUTH',
        `${form}: token endpoint ${url} answered without an access_token`,
      );
    if (wantType && body.issued_token_type !== wantType)
      throw new GwError(
        'GW_ERR_BACKEND_AUTH',
        `${form}: token endpoint ${url} issued ${String(body.issued_token_type)}, not ${wantType}`,
      );
    const expiresIn = Number(body.expires_in);
    const ttl = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : defaultTtlMs;
    return { value: token, expiresAt: Date.now() + ttl };
  };
}

/** RFC 7523 client authentication: a short-lived JWT signed with the client's key, one per request. */
function clientAssertion(c: ClientAuthIR): () => Promise<string> {
  const key = createPrivateKey(c.signingKey?.reveal() ?? '');
  const header = {
    alg: c.alg ?? 'RS256',
    typ: 'JWT',
    ...(c.kid ? { kid: c.kid } : {}),
    // the certificate the token endpoint knows the client by
    ...(c.certificateHeader ?? {}),
  };
  return () => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({})
      .setProtectedHeader(header)
      .setIssuer(c.clientId)
      .setSubject(c.clientId)
      .setAudience(c.assertionAudience ?? '')
      .setJti(randomUUID())
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(key);
  };
}

async function readText(body: AsyncIterable<Buffer>, max: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) throw new Error(`answer larger than ${max} bytes`);
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString();
}

function reason(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string } };
  if (e?.name === 'TimeoutError' || e?.code === 'UND_ERR_ABORTED')
    return `no answer in ${TIMEOUT_MS / 1000}s`;
  return e?.cause?.code ?? e?.code ?? e?.message ?? String(err);
}
