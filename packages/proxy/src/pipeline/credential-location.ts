// Where a credential travels (header with prefix, query parameter or cookie): reading it, and removing
// it after validation so it is not forwarded unless the policy says to keep it.
import { type CelProgram, compileCel } from '../cel/cel.ts';
import type { RequestContext } from './context.ts';

/** As written in config. */
export type CredentialLocationConfig =
  | { header: { name: string; prefix?: string | undefined } }
  | { queryParameter: { name: string } }
  | { cookie: { name: string } }
  | { expression: string };

/** Ready to read: an expression is compiled once, when the policy is built. */
export type CredentialLocation =
  | { header: { name: string; prefix?: string | undefined } }
  | { queryParameter: { name: string } }
  | { cookie: { name: string } }
  | { expression: CelProgram };

export function compileLocation(
  loc: CredentialLocationConfig | undefined,
  fallback: CredentialLocation,
): CredentialLocation {
  if (!loc) return fallback;
  return 'expression' in loc ? { expression: compileCel(loc.expression) } : loc;
}

export interface Credential {
  value: string;
  remove(ctx: RequestContext): void;
}

export function readCredential(ctx: RequestContext, loc: CredentialLocation): Credential | undefined {
  if ('expression' in loc) {
    // The credential is wherever the expression finds it, so there is nothing to remove afterwards.
    const v = loc.expression.eval(ctx.celContext());
    return typeof v === 'string' && v !== '' ? { value: v, remove: () => {} } : undefined;
  }
  if ('header' in loc) {
    const name = loc.header.name.toLowerCase();
    const raw = ctx.headers[name];
    const v = Array.isArray(raw) ? raw[0] : raw;
    if (v === undefined) return undefined;
    const prefix = loc.header.prefix;
    let value = v;
    if (prefix) {
      // Auth schemes are case-insensitive ("bearer" works as well as "Bearer").
      if (v.length <= prefix.length || v.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase())
        return undefined;
      value = v.slice(prefix.length).trim();
    }
    return { value, remove: (c) => delete c.headers[name] };
  }
  if ('queryParameter' in loc) {
    const params = new URLSearchParams(ctx.query);
    const value = params.get(loc.queryParameter.name);
    if (value === null) return undefined;
    return {
      value,
      remove: (c) => {
        const p = new URLSearchParams(c.query);
        p.delete(loc.queryParameter.name);
        const q = p.toString();
        c.query = q ? `?${q}` : '';
      },
    };
  }
  const cookie = ctx.headers.cookie;
  const all = Array.isArray(cookie) ? cookie.join('; ') : (cookie ?? '');
  for (const part of all.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === loc.cookie.name) {
      const value = decodeURIComponent(part.slice(eq + 1).trim());
      return {
        value,
        remove: (c) => {
          const rest = all
            .split(';')
            .filter((p) => p.split('=')[0]?.trim() !== loc.cookie.name)
            .map((p) => p.trim())
            .filter(Boolean);
          if (rest.length > 0) c.headers.cookie = rest.join('; ');
          else delete c.headers.cookie;
        },
      };
    }
  }
  return undefined;
}

export const BEARER: CredentialLocation = { header: { name: 'authorization', prefix: 'Bearer ' } };

export type Mode = 'strict' | 'optional' | 'permissive';
export const normalizeMode = (m: string | undefined): Mode => (m ? (m.toLowerCase() as Mode) : 'strict');
