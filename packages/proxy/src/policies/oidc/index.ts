// oidc: browser login with the OpenID Connect authorization code flow (agentgateway's oidc policy).
// A request without a session is sent to the provider (302, with state, nonce and PKCE S256; what the
// callback needs is kept in a short-lived sealed cookie, never in this process, so any worker or
// replica can finish the login). The callback (the redirectURI's path) exchanges the code, verifies
// the ID token and sets the sealed session cookie; later requests open it, refresh it with the refresh
// token once the tokens expire, and carry the ID token's claims as `jwt.*` (the token itself for
// backendAuth passthrough). `logout.path` clears the session and sends the browser on.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { decodeJwt } from 'jose';
import type { OidcIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import { discard } from '../../pipeline/body.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { Secret } from '../../secret.ts';
import type { PolicyDefinition } from '../types.ts';
import {
  COOKIE_PREFIX,
  type CookieAttributes,
  chunkNames,
  clearCookie,
  cookieSealer,
  readChunked,
  readCookies,
  setCookie,
  stripCookies,
  writeChunked,
} from './cookies.ts';
import { OidcProvider, type TokenAnswer } from './provider.ts';

/** How long a login may take, from the redirect to the provider to the callback. */
const LOGIN_TTL_S = 300;
/**
 * How long a session lasts from login when refresh keeps it going; without a refresh token it ends
 * when the tokens expire. After it the user logs in again (silently, while the provider's session lasts).
 */
export const SESSION_MAX_S = 24 * 60 * 60;
/** A refresh answer is reused this long for requests that still carry the old cookie (a page's burst). */
const REFRESH_REUSE_MS = 30_000;
const ORIGINAL_URL_LIMIT = 2048;
/** Fetch requests (not navigations) cannot follow a login through the provider: they get 401. */
const NON_NAVIGATION = new Set(['cors', 'no-cors', 'same-origin', 'websocket']);

/** What the session cookie holds. */
interface Session {
  v: 1;
  /** The ID token: its claims are the request's identity. */
  id: string;
  /** The refresh token, when the provider gave one. */
  rt?: string;
  /** Seconds since the epoch when the tokens expire (the earlier of the ID and access token). */
  exp: number;
  /** Seconds since the epoch of the login, for SESSION_MAX_S. */
  la: number;
}

/** What the login cookie holds, for the callback. */
interface Login {
  v: 1;
  /** Transaction id: names the cookie and is the first half of `state`. */
  t: string;
  /** The rest of `state`: the callback must bring it back. */
  s: string;
  n: string;
  /** PKCE code verifier. */
  cv: string;
  /** Where the browser was going. */
  u: string;
  exp: number;
}

const now = () => Math.floor(Date.now() / 1000);
const random = (bytes: number) => randomBytes(bytes).toString('base64url');
const TOKEN = /^[A-Za-z0-9_-]{16,64}$/;

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The path and query to return to after login: the request's own, when it is a safe local one. */
function returnTarget(url: string): string {
  if (url.length > ORIGINAL_URL_LIMIT || !url.startsWith('/') || url.startsWith('//') || url.includes('\\'))
    return '/';
  try {
    const d = decodeURIComponent(url);
    if (d.startsWith('//') || d.includes('\\')) return '/';
  } catch {
    return '/';
  }
  return url;
}

function asSession(v: unknown): Session | undefined {
  const s = v as Session | undefined;
  return s && s.v === 1 && typeof s.id === 'string' && typeof s.exp === 'number' && typeof s.la === 'number'
    ? s
    : undefined;
}

function asLogin(v: unknown): Login | undefined {
  const l = v as Login | undefined;
  return l && l.v === 1 && typeof l.t === 'string' && typeof l.s === 'string' && typeof l.exp === 'number'
    ? l
    : undefined;
}

function appendSetCookie(ctx: RequestContext, cookies: string[]): void {
  const res = ctx.response;
  if (!res || cookies.length === 0) return;
  const prev = res.headers['set-cookie'];
  res.headers['set-cookie'] = [
    ...(prev === undefined ? [] : Array.isArray(prev) ? prev : [prev]),
    ...cookies,
  ];
}

export const oidc: PolicyDefinition<'oidc'> = {
  name: 'oidc',
  build(config: OidcIR) {
    const provider = new OidcProvider(config);
    const redirect = new URL(config.redirectURI);
    const callbackPath = redirect.pathname;
    const secure = redirect.protocol === 'https:';
    // The same provider, client and callback is the same policy, wherever it is attached (a gateway's
    // policy is every route's): one session for all of them.
    const pid = createHash('sha256')
      .update(JSON.stringify([config.issuer, config.clientId, config.redirectURI]))
      .digest('hex')
      .slice(0, 16);
    const sessionName = `${COOKIE_PREFIX}s_${pid}`;
    const loginPrefix = `${COOKIE_PREFIX}x_${pid}.`;
    const sessionAttrs: CookieAttributes = { secure, path: '/' };
    // the login cookie is only sent to the callback
    const loginAttrs: CookieAttributes = { secure, path: callbackPath };
    const scope = [...new Set(['openid', ...(config.scopes ?? [])])].join(' ');
    const logout = config.logout ?? undefined;
    const sealer = cookieSealer();
    const refreshes = new Map<string, { at: number; result: Promise<Session> }>();

    const event = (
      ctx: RequestContext,
      result: string,
      fields: Record<string, unknown> = {},
      severity: 'info' | 'warn' = 'info',
    ) => ctx.obs?.event(ctx, 'oidc', { result, ...fields }, null, severity);

    const sessionCookies = (s: Session, present: Map<string, string>): string[] => {
      const t = now();
      const maxAge = s.rt ? s.la + SESSION_MAX_S - t : s.exp - t;
      const out = writeChunked(sessionName, sealer.seal('s', pid, s), maxAge, sessionAttrs, present);
      if (!out)
        throw new GwError(
          'GW_ERR_OIDC_PROVIDER',
          "the OpenID provider's tokens are too large to keep in session cookies",
        );
      return out;
    };

    const newSession = (
      answer: TokenAnswer,
      idToken: string,
      claims: Record<string, unknown>,
      la: number,
    ) => {
      const t = now();
      const idExp = typeof claims['exp'] === 'number' ? claims['exp'] : t;
      const exp = Math.min(idExp, answer.expiresIn !== undefined ? t + answer.expiresIn : idExp);
      const s: Session = { v: 1, id: idToken, exp, la };
      if (answer.refreshToken) s.rt = answer.refreshToken;
      return s;
    };

    const authenticated = (ctx: RequestContext, s: Session) => {
      const claims = decodeJwt(s.id) as Record<string, unknown>;
      ctx.ext.jwt = claims;
      ctx.ext.jwtToken = new Secret(s.id);
      stripCookies(ctx.headers);
      return claims;
    };

    const refresh = (s: Session & { rt: string }): Promise<Session> => {
      const t = Date.now();
      const kept = refreshes.get(s.rt);
      if (kept && t - kept.at < REFRESH_REUSE_MS) return kept.result;
      if (refreshes.size >= 1024) refreshes.clear();
      const result = (async () => {
        const answer = await provider.token({ grant_type: 'refresh_token', refresh_token: s.rt });
        let next: Session;
        if (answer.idToken) {
          const claims = await provider.verifyIdToken(answer.idToken);
          next = newSession(answer, answer.idToken, claims, s.la);
        } else {
          // no new ID token: the old one's claims stay, for as long as the new access token lives
          next = { v: 1, id: s.id, exp: now() + (answer.expiresIn ?? LOGIN_TTL_S), la: s.la };
        }
        const rt = answer.refreshToken ?? s.rt;
        next.rt = rt;
        return next;
      })();
      refreshes.set(s.rt, { at: t, result });
      result.catch(() => refreshes.delete(s.rt));
      return result;
    };

    const startLogin = async (ctx: RequestContext, clear: string[]) => {
      const meta = await provider.metadata();
      const login: Login = {
        v: 1,
        t: random(16),
        s: random(16),
        n: random(16),
        cv: random(32),
        u: returnTarget(ctx.originalUrl),
        exp: now() + LOGIN_TTL_S,
      };
      const location = new URL(meta.authorizationEndpoint);
      const q = location.searchParams;
      q.set('response_type', 'code');
      q.set('client_id', config.clientId);
      q.set('redirect_uri', config.redirectURI);
      q.set('scope', scope);
      q.set('state', `${login.t}.${login.s}`);
      q.set('nonce', login.n);
      q.set('code_challenge', createHash('sha256').update(login.cv).digest('base64url'));
      q.set('code_challenge_method', 'S256');
      discard(ctx.body);
      ctx.body = null;
      ctx.response = {
        status: 302,
        headers: {
          location: location.toString(),
          'cache-control': 'no-store',
          'set-cookie': [
            setCookie(`${loginPrefix}${login.t}`, sealer.seal('x', pid, login), LOGIN_TTL_S, loginAttrs),
            ...clear,
          ],
        },
        body: null,
      };
      event(ctx, 'loginRedirect');
    };

    const callback = async (ctx: RequestContext, q: URLSearchParams, cookies: Map<string, string>) => {
      const bad = (why: string): never => {
        event(ctx, 'failure', { reason: why }, 'warn');
        throw new GwError('GW_ERR_OIDC_CALLBACK', `invalid OIDC callback: ${why}`);
      };
      const [t = '', s = ''] = (q.get('state') ?? '').split('.');
      if (!TOKEN.test(t) || !TOKEN.test(s)) bad('the state parameter is not one this gateway issued');
      const raw = cookies.get(`${loginPrefix}${t}`);
      if (raw === undefined)
        bad(
          'no login in progress for this state (its cookie is missing or expired); start again from the page',
        );
      const login = asLogin(sealer.open('x', pid, raw as string));
      if (!login || login.exp <= now())
        bad('the login cookie is invalid or expired; start again from the page');
      const l = login as Login;
      if (l.t !== t || !sameText(l.s, s)) bad('the state parameter does not match the login in progress');
      const error = q.get('error');
      if (error !== null) {
        const desc = q.get('error_description');
        const why = `the OpenID provider refused the login: ${error}${desc ? ` (${desc})` : ''}`;
        event(ctx, 'failure', { reason: why }, 'warn');
        throw new GwError('GW_ERR_OIDC_LOGIN', why);
      }
      const code = q.get('code');
      if (!code) bad('no code');
      try {
        const answer = await provider.token({
          grant_type: 'authorization_code',
          code: code as string,
          redirect_uri: config.redirectURI,
          code_verifier: l.cv,
        });
        if (!answer.idToken)
          throw new GwError('GW_ERR_OIDC_LOGIN', 'the OpenID provider answered the code without an id_token');
        const claims = await provider.verifyIdToken(answer.idToken, l.n);
        const session = newSession(answer, answer.idToken, claims, now());
        discard(ctx.body);
        ctx.body = null;
        ctx.response = {
          status: 302,
          headers: {
            location: l.u,
            'cache-control': 'no-store',
            'set-cookie': [
              ...sessionCookies(session, cookies),
              clearCookie(`${loginPrefix}${t}`, loginAttrs),
            ],
          },
          body: null,
        };
        event(ctx, 'callbackOk', { subject: claims['sub'] ?? null });
      } catch (err) {
        if (err instanceof GwError) event(ctx, 'failure', { reason: err.detail }, 'warn');
        throw err;
      }
    };

    const endSession = async (ctx: RequestContext, cookies: Map<string, string>) => {
      discard(ctx.body);
      ctx.body = null;
      if (ctx.method !== 'POST') {
        ctx.response = {
          status: 405,
          headers: { allow: 'POST', 'content-type': 'text/plain; charset=utf-8' },
          body: Buffer.from('logout is a POST\n'),
        };
        return;
      }
      // A cross-site page must not be able to log the user out.
      const origin = ctx.headers['origin'];
      if (origin !== redirect.origin) {
        event(ctx, 'failure', { reason: 'logout from another origin' }, 'warn');
        throw new GwError('GW_ERR_CSRF', `logout must be a POST from ${redirect.origin}`);
      }
      const raw = readChunked(sessionName, cookies);
      const s = raw === undefined ? undefined : asSession(sealer.open('s', pid, raw));
      const clear = chunkNames(sessionName, cookies).map((n) => clearCookie(n, sessionAttrs));
      for (const name of cookies.keys())
        if (name.startsWith(loginPrefix)) clear.push(clearCookie(name, loginAttrs));
      let location = logout?.redirect ?? '/';
      if (logout?.redirect == null) {
        const end = await provider.metadata().then(
          (m) => m.endSessionEndpoint,
          () => undefined,
        );
        if (end) {
          const u = new URL(end);
          u.searchParams.set('client_id', config.clientId);
          if (s) u.searchParams.set('id_token_hint', s.id);
          location = u.toString();
        }
      }
      ctx.response = {
        status: 303,
        headers: { location, 'cache-control': 'no-store', 'set-cookie': clear },
        body: null,
      };
      event(ctx, 'loggedOut', { provider: location.startsWith('/') ? null : new URL(location).origin });
    };

    return async (ctx, next) => {
      const cookies = readCookies(ctx.headers);
      if (logout && ctx.path === logout.path) return endSession(ctx, cookies);
      if (ctx.path === callbackPath && ctx.method === 'GET') {
        const q = new URLSearchParams(ctx.query.slice(1));
        if (q.has('state') && (q.has('code') || q.has('error'))) return callback(ctx, q, cookies);
      }
      // A CORS preflight carries no cookies: the actual request is checked.
      if (ctx.method === 'OPTIONS' && ctx.headers['origin'] && ctx.headers['access-control-request-method'])
        return next(ctx);
      const clear: string[] = [];
      const raw = readChunked(sessionName, cookies);
      if (raw !== undefined) {
        const s = asSession(sealer.open('s', pid, raw));
        const t = now();
        if (!s) event(ctx, 'failure', { reason: 'the session cookie is invalid: logging in again' }, 'warn');
        else if (s.exp > t) {
          const claims = authenticated(ctx, s);
          event(ctx, 'sessionValid', { subject: claims['sub'] ?? null });
          return next(ctx);
        } else if (s.rt && t < s.la + SESSION_MAX_S) {
          let fresh: Session | undefined;
          try {
            fresh = await refresh(s as Session & { rt: string });
          } catch (err) {
            // the provider down is its fault (502); a refused refresh token means logging in again
            if (!(err instanceof GwError) || err.code !== 'GW_ERR_OIDC_LOGIN') {
              if (err instanceof GwError) event(ctx, 'failure', { reason: err.detail }, 'warn');
              throw err;
            }
            event(ctx, 'failure', { reason: `refresh failed, logging in again: ${err.detail}` }, 'warn');
          }
          if (fresh) {
            const set = sessionCookies(fresh, cookies);
            const claims = authenticated(ctx, fresh);
            event(ctx, 'refreshed', { subject: claims['sub'] ?? null });
            await next(ctx);
            appendSetCookie(ctx, set);
            return;
          }
        } else event(ctx, 'failure', { reason: 'the session expired: logging in again' });
        for (const n of chunkNames(sessionName, cookies)) clear.push(clearCookie(n, sessionAttrs));
      }
      const mode = ctx.headers['sec-fetch-mode'];
      if (typeof mode === 'string' && NON_NAVIGATION.has(mode)) {
        event(ctx, 'failure', { reason: `no session; a ${mode} fetch cannot log in` }, 'warn');
        throw new GwError('GW_ERR_UNAUTHENTICATED', 'no OIDC session: log in by loading a page first');
      }
      await startLogin(ctx, clear);
    };
  },
};
