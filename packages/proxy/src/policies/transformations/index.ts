// transformations: CEL expressions rewrite the request before it goes on and the response before it
// goes back, in agentgateway's order: metadata (stored for later policies as `metadata.*`), replace
// (the whole header set), add, set, remove, then body. Each expression sees the message as the steps
// before it left it. A header whose expression fails or gives no string is removed, so a failed
// expression never passes on what the client sent under that name. Pseudo-headers: `:method`,
// `:path`, `:authority` rewrite the request, `:status` the response. A body is read into memory (up to
// the buffer limit: 413 / 502 over it) only when an expression names it (`request.body`,
// `response.body`); a rewritten body gets its Content-Length.
import type { Readable } from 'node:stream';
import type { LocalTransform, Transformations } from '@gw/api';
import { type CelContext, type CelProgram, celToJson, compileCel } from '../../cel/cel.ts';
import { GwError } from '../../errors.ts';
import { bufferUpTo, contentLength, discard } from '../../pipeline/body.ts';
import { type Headers, HOP_BY_HOP, hostOf, type RequestContext } from '../../pipeline/context.ts';
import { withConditional } from '../conditional.ts';
import type { BuildEnv } from '../types.ts';

type Pseudo = ':method' | ':scheme' | ':authority' | ':path' | ':status';
const PSEUDO = new Set<string>([':method', ':scheme', ':authority', ':path', ':status']);
const TOKEN = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;

interface Side {
  metadata: [string, CelProgram][];
  replace: CelProgram | undefined;
  add: [string, CelProgram][];
  set: [string, CelProgram][];
  remove: string[];
  body: CelProgram | undefined;
}

/** What one phase did, for the trace. */
interface Applied {
  metadata: string[];
  replaced?: boolean;
  added: string[];
  set: string[];
  /** Removed by `remove`, or because their expression gave no value. */
  removed: string[];
  body: 'rewritten' | 'kept' | 'unchanged';
}

function compileSide(t: LocalTransform | undefined): Side | undefined {
  if (!t) return undefined;
  const entries = (m: Record<string, string> | undefined, lower: boolean) =>
    Object.entries(m ?? {}).map(
      ([k, v]) => [lower ? k.toLowerCase() : k, compileCel(v)] as [string, CelProgram],
    );
  return {
    metadata: entries(t.metadata, false),
    replace: t.replace !== undefined ? compileCel(t.replace) : undefined,
    add: entries(t.add, true),
    set: entries(t.set, true),
    remove: (t.remove ?? []).map((h) => h.toLowerCase()),
    body: t.body !== undefined ? compileCel(t.body) : undefined,
  };
}

function programsOf(s: Side | undefined): CelProgram[] {
  if (!s) return [];
  return [
    ...s.metadata.map(([, p]) => p),
    ...(s.replace ? [s.replace] : []),
    ...s.add.map(([, p]) => p),
    ...s.set.map(([, p]) => p),
    ...(s.body ? [s.body] : []),
  ];
}

// The conditional form (the first entry whose condition holds) is policies/conditional.ts's.
export const transformations = withConditional({
  name: 'transformations',
  build(config: Transformations, env: BuildEnv) {
    const rule = { request: compileSide(config.request), response: compileSide(config.response) };
    // A body is held in memory only when an expression reads it.
    const readsRequestBody = [...programsOf(rule.request), ...programsOf(rule.response)].some((p) =>
      p.reads('request', 'body'),
    );
    const readsResponseBody = programsOf(rule.response).some((p) => p.reads('response', 'body'));
    const limit = env.global.maxBufferSize;

    return async (ctx, next) => {
      if (readsRequestBody) await bufferRequest(ctx, limit);
      if (rule.request) {
        const start = ctx.obs ? performance.now() : null;
        const applied = applyRequest(ctx, rule.request);
        ctx.obs?.event(ctx, 'transformation', { phase: 'request', ...summary(applied) }, start);
      }
      await next(ctx);
      const res = ctx.response;
      if (!rule.response || !res) return;
      const start = ctx.obs ? performance.now() : null;
      if (readsResponseBody && res.body && !Buffer.isBuffer(res.body)) {
        const r = await bufferUpTo(res.body, limit, contentLength(res.headers), ctx);
        if (!r.ok) {
          discard(r.stream);
          ctx.response = undefined;
          throw new GwError(
            'GW_ERR_RESPONSE_TOO_LARGE',
            `response body is larger than the buffer limit (${limit} bytes) for a transformation`,
          );
        }
        res.body = r.data;
        res.headers['content-length'] = String(r.data.length);
      }
      const applied = apply(rule.response, {
        cel: () => ctx.celContext(),
        headers: () => res.headers,
        setHeaders: (h) => (res.headers = h),
        pseudo: (name, v) => {
          if (name !== ':status') return false;
          const code = typeof v === 'bigint' || typeof v === 'number' ? Number(v) : Number.NaN;
          if (!Number.isInteger(code) || code < 100 || code > 599) return false;
          res.status = code;
          return true;
        },
        setBody: (b) => {
          discard(res.body);
          res.body = b;
        },
        metadata: () => (ctx.ext.metadata ??= {}),
      });
      const fields: Record<string, unknown> = { phase: 'response', ...summary(applied) };
      if (applied.set.includes(':status')) fields.status = res.status;
      ctx.obs?.event(ctx, 'transformation', fields, start);
    };
  },
});

/** Reads the request body into memory for the expressions that read it; 413 over the limit. */
async function bufferRequest(ctx: RequestContext, limit: number): Promise<void> {
  if (!ctx.body || Buffer.isBuffer(ctx.body)) return;
  const r = await bufferUpTo(ctx.body, limit, contentLength(ctx.headers), ctx);
  if (!r.ok) {
    r.stream.resume(); // drain, so the connection stays usable for the 413
    throw new GwError(
      'GW_ERR_REQUEST_TOO_LARGE',
      `request body is larger than the buffer limit (${limit} bytes) for a transformation`,
    );
  }
  ctx.body = r.data;
  ctx.headers['content-length'] = String(r.data.length);
}

function applyRequest(ctx: RequestContext, side: Side): Applied {
  return apply(side, {
    cel: () => ctx.celContext(),
    headers: () => ctx.headers,
    setHeaders: (h) => {
      // The request keeps its Host unless the map names one (the upstream needs one).
      if (h.host === undefined && ctx.headers.host !== undefined) h.host = ctx.headers.host;
      ctx.headers = h;
    },
    pseudo: (name, v) => {
      const s = text(v);
      if (s === undefined) return false;
      switch (name) {
        case ':method':
          if (!TOKEN.test(s)) return false;
          ctx.method = s;
          return true;
        case ':path': {
          if (!s.startsWith('/') || /[\s#]/.test(s)) return false;
          const q = s.indexOf('?');
          ctx.path = q === -1 ? s : s.slice(0, q);
          ctx.query = q === -1 ? '' : s.slice(q);
          return true;
        }
        case ':authority':
          if (s === '' || /[\s/?#@]/.test(s)) return false;
          ctx.authority = s;
          ctx.host = hostOf(s);
          ctx.headers.host = s;
          return true;
        default:
          // :scheme is accepted as agentgateway does; the scheme to a backend follows its TLS settings.
          // :status has no meaning on a request.
          return false;
      }
    },
    setBody: (b) => {
      // The client's body is not sent: read it to its end so the connection stays usable.
      if (ctx.body && !Buffer.isBuffer(ctx.body)) (ctx.body as Readable).resume();
      ctx.body = b;
    },
    metadata: () => (ctx.ext.metadata ??= {}),
  });
}

interface Target {
  /** The CEL view of the message as it is now. */
  cel(): CelContext;
  headers(): Headers;
  setHeaders(h: Headers): void;
  /** Applies a pseudo-header's value; false when it does not apply here or the value is not valid. */
  pseudo(name: Pseudo, value: unknown): boolean;
  setBody(b: Buffer): void;
  metadata(): Record<string, unknown>;
}

function apply(side: Side, t: Target): Applied {
  const applied: Applied = { metadata: [], added: [], set: [], removed: [], body: 'unchanged' };
  // Each expression sees what the steps before it changed; the view is rebuilt only after a change.
  let view: CelContext | undefined;
  const evaluate = (p: CelProgram) => {
    view ??= t.cel();
    return p.eval(view);
  };
  const changed = () => {
    view = undefined;
  };

  for (const [name, p] of side.metadata) {
    const v = evaluate(p);
    if (v === undefined) continue;
    t.metadata()[name] = v;
    applied.metadata.push(name);
    changed();
  }
  if (side.replace) {
    const headers = headerMap(evaluate(side.replace));
    // A failed expression (or one that gives no map) leaves the headers as they are.
    if (headers) {
      t.setHeaders(headers);
      applied.replaced = true;
      changed();
    }
  }
  for (const [mode, list] of [
    ['add', side.add],
    ['set', side.set],
  ] as const) {
    for (const [name, p] of list) {
      const v = evaluate(p);
      if (PSEUDO.has(name)) {
        if (t.pseudo(name as Pseudo, v)) {
          applied.set.push(name);
          changed();
        }
        continue;
      }
      if (HOP_BY_HOP.has(name)) continue;
      const h = t.headers();
      const value = text(v);
      if (value === undefined || !validValue(value)) {
        if (h[name] !== undefined) {
          delete h[name];
          applied.removed.push(name);
          changed();
        }
        continue;
      }
      const cur = h[name];
      h[name] =
        mode === 'set' || cur === undefined ? value : Array.isArray(cur) ? [...cur, value] : [cur, value];
      (mode === 'add' ? applied.added : applied.set).push(name);
      changed();
    }
  }
  for (const name of side.remove) {
    const h = t.headers();
    if (h[name] === undefined) continue;
    delete h[name];
    applied.removed.push(name);
    changed();
  }
  if (side.body) {
    const v = evaluate(side.body);
    if (v === undefined) {
      // why goes to the access log (the error's cause); the client gets the catalogue's reason
      // evaluate() has just made the view
      const why = side.body.failure(view as CelContext);
      throw new GwError('GW_ERR_INTERNAL', 'the transformation body expression failed', {
        ...(why ? { cause: new Error(why) } : {}),
      });
    }
    if (v === null) applied.body = 'kept';
    else {
      const b = bodyOf(v);
      t.setBody(b);
      const h = t.headers();
      delete h['transfer-encoding'];
      h['content-length'] = String(b.length);
      applied.body = 'rewritten';
    }
  }
  return applied;
}

/** A header value from a CEL value: a string, or bytes read as UTF-8; anything else is no value. */
function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
  return undefined;
}

// Field values must not break the message (RFC 9110 5.5): no CR, LF or NUL.
const validValue = (s: string) => !/[\r\n\0]/.test(s);

/** `replace`'s map: a value is a string, number or boolean, or a list of them; pseudo-headers are skipped. */
function headerMap(v: unknown): Headers | undefined {
  const entries =
    v instanceof Map
      ? [...v]
      : v && typeof v === 'object' && !Array.isArray(v)
        ? Object.entries(v)
        : undefined;
  if (!entries) return undefined;
  const out: Headers = {};
  const one = (x: unknown) =>
    typeof x === 'string'
      ? x
      : typeof x === 'number' || typeof x === 'bigint' || typeof x === 'boolean'
        ? String(x)
        : undefined;
  for (const [k, raw] of entries) {
    const name = String(k).toLowerCase();
    if (!TOKEN.test(name) || HOP_BY_HOP.has(name)) continue;
    const values = (Array.isArray(raw) ? raw.map(one) : [one(raw)]).filter(
      (x): x is string => x !== undefined && validValue(x),
    );
    if (values.length === 1) out[name] = values[0] as string;
    else if (values.length > 1) out[name] = values;
  }
  return out;
}

/** The body a CEL value stands for: a string or bytes as they are, anything else as JSON (directResponse too). */
export function bodyOf(v: unknown): Buffer {
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return Buffer.from(JSON.stringify(celToJson(v)) ?? 'null', 'utf8');
}

function summary(a: Applied): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (a.metadata.length) out.metadata = a.metadata;
  if (a.replaced) out.replaced = true;
  if (a.added.length) out.added = a.added;
  if (a.set.length) out.set = a.set;
  if (a.removed.length) out.removed = a.removed;
  out.body = a.body;
  return out;
}
