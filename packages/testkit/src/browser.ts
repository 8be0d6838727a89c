// A browser for tests, without the rendering: a cookie jar (RFC 6265 host-only cookies: host, path,
// Secure, Max-Age/Expires) and navigation that follows redirects across origins. At the test
// identity provider's interaction pages (identity-provider.ts) it logs in as the given account and
// consents, as a user would; everything else is plain HTTP.
import { request } from 'undici';

export interface StoredCookie {
  name: string;
  value: string;
  host: string;
  path: string;
  secure: boolean;
  httpOnly: boolean;
  sameSite: string | undefined;
  /** Date.now() after which it is gone; undefined: a session cookie. */
  expires: number | undefined;
}

export interface Page {
  status: number;
  url: string;
  headers: Headers;
  text: string;
  /** Every URL requested on the way, in order. */
  hops: string[];
}

export interface NavigateOptions {
  /** The account to log in as at the identity provider's login page. */
  account?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Stop at (and do not request) the first URL this says yes to; the returned page has status 0. */
  stopAt?: (url: URL) => boolean;
}

// What a browser sends when the user goes to a page (fetch would otherwise say sec-fetch-mode: cors).
const NAVIGATION_HEADERS = {
  accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8',
  'sec-fetch-mode': 'navigate',
};

export class Browser {
  readonly cookies: StoredCookie[] = [];

  /** The cookies this browser would send to `url`, as a Cookie header value. */
  cookieHeader(url: string): string {
    const u = new URL(url);
    const t = Date.now();
    for (let i = this.cookies.length - 1; i >= 0; i--) {
      const c = this.cookies[i] as StoredCookie;
      if (c.expires !== undefined && c.expires <= t) this.cookies.splice(i, 1);
    }
    return this.cookies
      .filter(
        (c) =>
          c.host === u.hostname &&
          (!c.secure || u.protocol === 'https:') &&
          (u.pathname === c.path || u.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`)),
      )
      .sort((a, b) => b.path.length - a.path.length)
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  /** The cookies stored for `host` whose name starts with `prefix`. */
  find(host: string, prefix = ''): StoredCookie[] {
    return this.cookies.filter((c) => c.host === host && c.name.startsWith(prefix));
  }

  store(url: string, setCookie: string): void {
    const u = new URL(url);
    const [pair = '', ...attrs] = setCookie.split(';');
    const eq = pair.indexOf('=');
    if (eq <= 0) return;
    const c: StoredCookie = {
      name: pair.slice(0, eq).trim(),
      value: pair.slice(eq + 1).trim(),
      host: u.hostname,
      path: u.pathname.slice(0, Math.max(1, u.pathname.lastIndexOf('/'))) || '/',
      secure: false,
      httpOnly: false,
      sameSite: undefined,
      expires: undefined,
    };
    let maxAge: number | undefined;
    for (const a of attrs) {
      const i = a.indexOf('=');
      const k = (i < 0 ? a : a.slice(0, i)).trim().toLowerCase();
      const v = i < 0 ? '' : a.slice(i + 1).trim();
      if (k === 'path' && v.startsWith('/')) c.path = v;
      else if (k === 'secure') c.secure = true;
      else if (k === 'httponly') c.httpOnly = true;
      else if (k === 'samesite') c.sameSite = v;
      else if (k === 'max-age') maxAge = Number(v);
      else if (k === 'expires' && maxAge === undefined) c.expires = Date.parse(v);
    }
    if (maxAge !== undefined) c.expires = Date.now() + maxAge * 1000;
    // a Secure cookie is only set over https
    if (c.secure && u.protocol !== 'https:') return;
    const at = this.cookies.findIndex((o) => o.name === c.name && o.host === c.host && o.path === c.path);
    if (at >= 0) this.cookies.splice(at, 1);
    if (c.expires === undefined || c.expires > Date.now()) this.cookies.push(c);
  }

  /** One request with this browser's cookies, redirects not followed. */
  async request(
    url: string,
    init: { method?: string; headers?: Record<string, string>; body?: string } = {},
  ) {
    // undici's request, not fetch: fetch sends its own Sec-Fetch-Mode (cors) whatever it is told
    const headers: Record<string, string> = { ...NAVIGATION_HEADERS, ...init.headers };
    const cookie = this.cookieHeader(url);
    if (cookie) headers['cookie'] = cookie;
    const r = await request(url, {
      method: (init.method ?? 'GET') as 'GET',
      headers,
      ...(init.body !== undefined ? { body: init.body } : {}),
    });
    const out = new Headers();
    for (const [k, v] of Object.entries(r.headers))
      for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) out.append(k, one);
    for (const c of out.getSetCookie()) this.store(url, c);
    return { status: r.statusCode, headers: out, text: await r.body.text() };
  }

  /**
   * Goes to `url` as a user does: follows redirects (a 303, or a 302 after a POST, becomes a GET)
   * and, at the identity provider's interaction pages, logs in as `account` and consents.
   */
  async navigate(url: string, opts: NavigateOptions = {}): Promise<Page> {
    let at = url;
    let init: { method?: string; headers?: Record<string, string>; body?: string } = {
      ...(opts.method ? { method: opts.method } : {}),
      ...(opts.headers ? { headers: opts.headers } : {}),
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    };
    const hops: string[] = [];
    for (let hop = 0; hop < 20; hop++) {
      const u = new URL(at);
      if (opts.stopAt?.(u)) return { status: 0, url: at, headers: new Headers(), text: '', hops };
      hops.push(at);
      if (/^\/interaction\/[^/]+$/.test(u.pathname)) {
        // the test identity provider's login and consent: it says which prompt is pending
        const pending = await this.request(at, { headers: { accept: 'application/json' } });
        const { prompt } = JSON.parse(pending.text) as { prompt: string };
        if (prompt === 'login' && opts.account === undefined)
          throw new Error(`${at} asks to log in: pass an account`);
        init = {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ account: opts.account ?? '' }).toString(),
        };
        at = `${at}/${prompt === 'login' ? 'login' : 'confirm'}`;
        continue;
      }
      const r = await this.request(at, init);
      const location = r.headers.get('location');
      if (r.status < 300 || r.status >= 400 || !location)
        return { status: r.status, url: at, headers: r.headers, text: r.text, hops };
      const method = init.method ?? 'GET';
      init = r.status === 307 || r.status === 308 ? init : {};
      if (r.status !== 307 && r.status !== 308 && method === 'HEAD') init = { method: 'HEAD' };
      at = new URL(location, at).toString();
    }
    throw new Error(`too many redirects from ${url}`);
  }
}
