// The oidc policy's cookies: sealed with AES-256-GCM under a key derived (HKDF) from SESSION_KEY, the
// key MCP session ids use, so any worker or replica with the key can open them and nobody else can
// read or forge one. The cookie's kind and the policy's id are authenticated with it, so a login
// cookie cannot stand in for a session, nor one policy's session for another's. A session too big for
// one cookie (browsers keep about 4 KB each) is split over numbered cookies.
import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import type { Headers } from '../../pipeline/context.ts';

/** Every cookie of this policy starts with it; none of them is passed on to the upstream. */
export const COOKIE_PREFIX = 'gw_oidc_';
/** Below the ~4 KiB browsers keep per cookie, leaving room for the name and attributes. */
export const CHUNK = 3800;
/** At most this many chunks (about 30 KB); a bigger session is the provider's tokens at fault. */
export const MAX_CHUNKS = 8;

const INFO = Buffer.from('gw oidc cookie v1');

export type CookieKind = 's' | 'x';

export class CookieSealer {
  readonly #key: KeyObject;
  constructor(secret: string) {
    this.#key = createSecretKey(
      Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), INFO, 32)),
    );
  }

  seal(kind: CookieKind, policy: string, value: unknown): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.#key, iv);
    c.setAAD(Buffer.from(`${kind}|${policy}`));
    const body = Buffer.concat([c.update(JSON.stringify(value), 'utf8'), c.final()]);
    return Buffer.concat([iv, body, c.getAuthTag()]).toString('base64url');
  }

  /** The value, or undefined for a cookie this key did not seal for this kind and policy. */
  open(kind: CookieKind, policy: string, text: string): unknown {
    if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
    const raw = Buffer.from(text, 'base64url');
    if (raw.length < 12 + 16 + 2) return undefined;
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
      d.setAAD(Buffer.from(`${kind}|${policy}`));
      d.setAuthTag(raw.subarray(raw.length - 16));
      const plain = Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]);
      return JSON.parse(plain.toString('utf8'));
    } catch {
      return undefined;
    }
  }
}

let shared: CookieSealer | undefined;
/**
 * The sealer of this process: SESSION_KEY, or (standalone without one) the key the CLI generated at
 * start and put in the environment before the workers started, so every worker shares it.
 */
export function cookieSealer(): CookieSealer {
  if (!shared) {
    let key = process.env.SESSION_KEY;
    if (!key) {
      key = randomBytes(32).toString('base64');
      process.env.SESSION_KEY = key;
    }
    shared = new CookieSealer(key);
  }
  return shared;
}

/** The request's cookies by name (the first of a repeated name wins, as browsers send the most specific first). */
export function readCookies(headers: Headers): Map<string, string> {
  const out = new Map<string, string>();
  const h = headers['cookie'];
  if (h === undefined) return out;
  for (const line of Array.isArray(h) ? h : [h])
    for (const part of line.split(';')) {
      const eq = part.indexOf('=');
      if (eq <= 0) continue;
      const name = part.slice(0, eq).trim();
      if (!out.has(name)) out.set(name, part.slice(eq + 1).trim());
    }
  return out;
}

/** The Cookie header without this policy's cookies (the upstream gets the application's own only). */
export function stripCookies(headers: Headers): void {
  const h = headers['cookie'];
  if (h === undefined) return;
  const kept: string[] = [];
  for (const line of Array.isArray(h) ? h : [h])
    for (const part of line.split(';')) {
      const p = part.trim();
      if (p !== '' && !p.startsWith(COOKIE_PREFIX)) kept.push(p);
    }
  if (kept.length === 0) delete headers['cookie'];
  else headers['cookie'] = kept.join('; ');
}

export interface CookieAttributes {
  secure: boolean;
  path: string;
}

export function setCookie(name: string, value: string, maxAge: number, a: CookieAttributes): string {
  return `${name}=${value}; Path=${a.path}; Max-Age=${Math.max(0, Math.floor(maxAge))}; HttpOnly; SameSite=Lax${a.secure ? '; Secure' : ''}`;
}

export function clearCookie(name: string, a: CookieAttributes): string {
  return setCookie(name, '', 0, a);
}

/** The names a value under `base` is kept in: `base` alone, or `base.0`, `base.1`, … when split. */
export function chunkNames(base: string, cookies: Map<string, string>): string[] {
  const out: string[] = [];
  if (cookies.has(base)) out.push(base);
  for (let i = 0; i < MAX_CHUNKS && cookies.has(`${base}.${i}`); i++) out.push(`${base}.${i}`);
  return out;
}

/** The value kept under `base`, joined from its chunks; undefined when there is none. */
export function readChunked(base: string, cookies: Map<string, string>): string | undefined {
  const single = cookies.get(base);
  if (single !== undefined) return single;
  let v = '';
  for (let i = 0; i < MAX_CHUNKS; i++) {
    const part = cookies.get(`${base}.${i}`);
    if (part === undefined) break;
    v += part;
  }
  return v === '' ? undefined : v;
}

/**
 * Set-Cookie headers that keep `value` under `base` (split when longer than CHUNK), and clear the
 * request's cookies under `base` the new value does not use. Undefined when it needs more than
 * MAX_CHUNKS cookies.
 */
export function writeChunked(
  base: string,
  value: string,
  maxAge: number,
  a: CookieAttributes,
  present: Map<string, string>,
): string[] | undefined {
  const n = Math.ceil(value.length / CHUNK);
  if (n > MAX_CHUNKS) return undefined;
  const names = n === 1 ? [base] : Array.from({ length: n }, (_, i) => `${base}.${i}`);
  const out = names.map((name, i) => setCookie(name, value.slice(i * CHUNK, (i + 1) * CHUNK), maxAge, a));
  for (const old of chunkNames(base, present)) if (!names.includes(old)) out.push(clearCookie(old, a));
  return out;
}
