// agentgateway's CEL functions beyond standard CEL and cel-js's own, so its users' expressions compile
// and mean the same here: encodings and digests under namespaces (`base64.encode`, `url.encode`,
// `form.decode`, `sha256.encode`, …), `math.*`, string helpers cel-js lacks (`charAt`, `replace`,
// `regexReplace`, `regexReplaceAll`), map helpers (`merge`, `mapValues`, `filterKeys`), `uuid()`, `isIP()`, `fail()`,
// `unvalidatedJwtPayload()`, `ip()` values (family, isLoopback, …), and the macros `coalesce(…)` and
// `x.with(name, expr)`. Namespaces are constants of a type of their own, so `url` is no variable a
// request could set.
import { createHash, randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import type { Environment } from '@marcbachmann/cel-js';
import { userRegExp } from '../checks/regex.ts';
import { parseJson } from './values.ts';

type Bytes = Uint8Array;
const text = (v: string | Bytes) => (typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.from(v));

/** RFC 3986's unreserved characters pass; every other byte is %XX (as agentgateway's url.encode). */
function percentEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function base64Decode(v: string | Bytes): Bytes {
  const s = (typeof v === 'string' ? v : Buffer.from(v).toString('latin1')).replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/]*$/.test(s) || s.length % 4 === 1) throw new Error('base64.decode: not base64');
  return new Uint8Array(Buffer.from(s, 'base64'));
}

function formEncode(m: Map<string, unknown> | Record<string, unknown>): string {
  const entries = m instanceof Map ? [...m.entries()] : Object.entries(m);
  const out = new URLSearchParams();
  for (const [k, v] of entries) {
    for (const item of Array.isArray(v) ? v : [v]) {
      if (item !== null && typeof item === 'object')
        throw new Error(`form.encode: the value of ${k} is not a string, number or list of them`);
      out.append(String(k), String(item));
    }
  }
  return out.toString();
}

function formDecode(s: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(s)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/** A JWT's payload, its signature not checked (agentgateway's unvalidatedJwtPayload). */
function jwtPayload(token: string): unknown {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[1] === undefined)
    throw new Error('unvalidatedJwtPayload: not a JWT (three dot-separated parts)');
  return parseJson(Buffer.from(parts[1], 'base64url').toString('utf8'));
}

const num = (v: number | bigint) => Number(v);
function extreme(name: string, values: unknown[], pick: (a: number, b: number) => boolean): unknown {
  if (values.length === 0) throw new Error(`math.${name}: no values`);
  let best = values[0];
  for (const v of values) {
    if (typeof v !== 'number' && typeof v !== 'bigint') throw new Error(`math.${name}: not a number`);
    if (pick(num(v), num(best as number))) best = v;
  }
  return best;
}

/** The type-checker and evaluator calls a binding macro makes (cel-js's own `cel.bind` uses them). */
interface BindContext {
  forkWithVariable(name: string, type: unknown): BindContext;
  reuse(ctx: unknown): { setIterValue(v: unknown, ev: unknown): unknown };
}
interface MacroArgs {
  ast: unknown;
  args: { op: string; args: unknown }[];
  receiver?: unknown;
}

/** An IP address value (Kubernetes CEL's, as agentgateway has it): `ip("10.0.0.1").family()`. */
export class CelIp {
  readonly text: string;
  readonly family: 4 | 6;
  /** The 4 or 16 bytes. */
  readonly bytes: Uint8Array;
  constructor(text: string) {
    const a = text.startsWith('::ffff:') && isIP(text.slice(7)) === 4 ? text.slice(7) : text;
    const family = isIP(a);
    if (family === 0) throw new Error(`ip: ${JSON.stringify(text)} is not an IP address`);
    this.text = a;
    this.family = family as 4 | 6;
    this.bytes = family === 4 ? new Uint8Array(a.split('.').map(Number)) : ipv6Bytes(a);
  }
}

function ipv6Bytes(a: string): Uint8Array {
  // an embedded IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) as two groups
  let s = a;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)?.[1];
  if (v4) {
    const b = v4.split('.').map(Number) as [number, number, number, number];
    s = `${s.slice(0, -v4.length)}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? (s.split('::') as [string, string]) : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = Number.parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  });
  return out;
}

/** A CIDR's address and prefix length, from its text (`10.0.0.0/8`; an address alone is all of it). */
export function cidrParts(text: string): { ip: CelIp; bits: number } {
  const slash = text.indexOf('/');
  const ip = new CelIp(slash === -1 ? text : text.slice(0, slash));
  const bits = slash === -1 ? ip.bytes.length * 8 : Number(text.slice(slash + 1));
  return { ip, bits };
}

/** The address with every bit past the first `bits` cleared, as text. */
export function maskedText(ip: CelIp, bits: number): string {
  const b = ip.bytes.map((x, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    return x & ((0xff << (8 - keep)) & 0xff);
  });
  if (ip.family === 4) return [...b].join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((b[i] ?? 0) << 8) | (b[i + 1] ?? 0)).toString(16));
  // the URL parser writes an IPv6 address in its shortest form
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}

const ipClass = (ip: CelIp) => {
  const b = ip.bytes;
  const zero = b.every((x) => x === 0);
  if (ip.family === 4) {
    const [a0 = 0, a1 = 0] = b;
    return {
      unspecified: zero,
      loopback: a0 === 127,
      linkLocalMulticast: a0 === 224 && a1 === 0 && b[2] === 0,
      linkLocalUnicast: a0 === 169 && a1 === 254,
      // as Go's net.IP.IsGlobalUnicast: private ranges count as global
      globalUnicast:
        !zero && a0 !== 127 && a0 < 224 && !(a0 === 169 && a1 === 254) && !b.every((x) => x === 255),
    };
  }
  const [a0 = 0, a1 = 0] = b;
  const loopback = b.slice(0, 15).every((x) => x === 0) && b[15] === 1;
  return {
    unspecified: zero,
    loopback,
    linkLocalMulticast: a0 === 0xff && (a1 & 0x0f) === 0x02,
    linkLocalUnicast: a0 === 0xfe && (a1 & 0xc0) === 0x80,
    globalUnicast: !zero && !loopback && a0 !== 0xff && !(a0 === 0xfe && (a1 & 0xc0) === 0x80),
  };
};

/**
 * A receiver macro `x.<method>(name, expr)`, as cel-js's own `cel.bind`: `expr` is checked with
 * `name` declared (as `x`'s type when `nameIsReceiver`, else dyn); `run` gets `x` and a function
 * evaluating `expr` with `name` bound to a value.
 */
function bindingMacro(
  method: string,
  nameIsReceiver: boolean,
  run: (receiver: unknown, exprWith: (value: unknown) => unknown) => unknown,
) {
  return ({ ast, args, receiver }: MacroArgs) => {
    const [name, expr] = args;
    if (name?.op !== 'id') throw new Error(`${method}(name, expr): the first argument is a name`);
    let bound: BindContext | undefined;
    return {
      ast,
      async: false,
      typeCheck(
        checker: { check(n: unknown, c: unknown): unknown; getType(t: string): unknown },
        _m: unknown,
        ctx: BindContext,
      ) {
        const type = checker.check(receiver, ctx);
        bound = ctx.forkWithVariable(name.args as string, nameIsReceiver ? type : checker.getType('dyn'));
        const result = checker.check(expr, bound);
        return nameIsReceiver ? result : checker.getType('dyn');
      },
      evaluate(ev: { run(n: unknown, c: unknown): unknown }, _m: unknown, ctx: unknown) {
        const b = bound as BindContext;
        return run(ev.run(receiver, ctx), (value) => ev.run(expr, b.reuse(ctx).setIterValue(value, ev)));
      },
    };
  };
}

export function registerExtensions(e: Environment): void {
  // namespaces: constants of their own types, whose methods are the functions
  const ns = (name: string) => {
    const T = class {};
    Object.defineProperty(T, 'name', { value: `${name}Namespace` });
    e.registerType(`${name}Namespace`, T);
    e.registerConstant(name, `${name}Namespace`, new T());
    return `${name}Namespace`;
  };
  const B64 = ns('base64');
  for (const t of ['string', 'bytes']) {
    e.registerFunction(`${B64}.encode(${t}): string`, (_: unknown, v: string | Bytes) =>
      text(v).toString('base64'),
    );
    e.registerFunction(`${B64}.decode(${t}): bytes`, (_: unknown, v: string | Bytes) => base64Decode(v));
    e.registerFunction(`base64Encode(${t}): string`, (v: string | Bytes) => text(v).toString('base64'));
    e.registerFunction(`base64Decode(${t}): bytes`, (v: string | Bytes) => base64Decode(v));
  }
  for (const [name, alg] of [
    ['sha1', 'sha1'],
    ['sha256', 'sha256'],
    ['md5', 'md5'],
  ] as const) {
    const N = ns(name);
    for (const t of ['string', 'bytes'])
      e.registerFunction(`${N}.encode(${t}): string`, (_: unknown, v: string | Bytes) =>
        createHash(alg).update(text(v)).digest('hex'),
      );
  }
  const URL_NS = ns('url');
  e.registerFunction(`${URL_NS}.encode(string): string`, (_: unknown, s: string) => percentEncode(s));
  e.registerFunction(`${URL_NS}.decode(string): string`, (_: unknown, s: string) => decodeURIComponent(s));
  const FORM = ns('form');
  e.registerFunction(`${FORM}.encode(map): string`, (_: unknown, m: Map<string, unknown>) => formEncode(m));
  e.registerFunction(`${FORM}.decode(string): map<string, dyn>`, (_: unknown, s: string) => formDecode(s));

  const MATH = ns('math');
  const numbers = ['int', 'uint', 'double'];
  for (const t of numbers) {
    e.registerFunction(`${MATH}.least(list<${t}>): ${t}`, (_: unknown, l: unknown[]) =>
      extreme('least', l, (a, b) => a < b),
    );
    e.registerFunction(`${MATH}.greatest(list<${t}>): ${t}`, (_: unknown, l: unknown[]) =>
      extreme('greatest', l, (a, b) => a > b),
    );
    for (const n of [2, 3, 4]) {
      const params = Array(n).fill(t).join(', ');
      e.registerFunction(`${MATH}.least(${params}): ${t}`, (_: unknown, ...l: unknown[]) =>
        extreme('least', l, (a, b) => a < b),
      );
      e.registerFunction(`${MATH}.greatest(${params}): ${t}`, (_: unknown, ...l: unknown[]) =>
        extreme('greatest', l, (a, b) => a > b),
      );
    }
  }
  for (const f of ['ceil', 'floor', 'round', 'trunc'] as const)
    e.registerFunction(`${MATH}.${f}(double): double`, (_: unknown, x: number) => Math[f](x));
  e.registerFunction(
    `${MATH}.isInf(double): bool`,
    (_: unknown, x: number) => x === Infinity || x === -Infinity,
  );
  e.registerFunction(`${MATH}.isNaN(double): bool`, (_: unknown, x: number) => Number.isNaN(x));
  e.registerFunction(`${MATH}.isFinite(double): bool`, (_: unknown, x: number) => Number.isFinite(x));
  e.registerFunction(`${MATH}.sqrt(double): double`, (_: unknown, x: number) => Math.sqrt(x));
  e.registerFunction(`${MATH}.sqrt(int): double`, (_: unknown, x: bigint) => Math.sqrt(Number(x)));
  e.registerFunction(`${MATH}.abs(double): double`, (_: unknown, x: number) => Math.abs(x));
  e.registerFunction(`${MATH}.abs(int): int`, (_: unknown, x: bigint) => {
    if (x === -(2n ** 63n)) throw new Error('math.abs: int overflow');
    return x < 0n ? -x : x;
  });
  e.registerFunction(`${MATH}.sign(double): double`, (_: unknown, x: number) => Math.sign(x));
  e.registerFunction(`${MATH}.sign(int): int`, (_: unknown, x: bigint) => (x > 0n ? 1n : x < 0n ? -1n : 0n));

  // strings cel-js does not have
  e.registerFunction('string.charAt(int): string', (s: string, i: bigint) => {
    const chars = [...s];
    const n = Number(i);
    if (n < 0 || n > chars.length) throw new Error(`charAt: index ${n} out of range`);
    return chars[n] ?? '';
  });
  e.registerFunction('string.replace(string, string): string', (s: string, from: string, to: string) =>
    s.split(from).join(to),
  );
  e.registerFunction(
    'string.replace(string, string, int): string',
    (s: string, from: string, to: string, n: bigint) => {
      if (n < 0n) return s.split(from).join(to);
      const parts = s.split(from);
      const k = Math.min(Number(n), parts.length - 1);
      return (
        parts.slice(0, k + 1).join(to) + (k + 1 < parts.length ? from + parts.slice(k + 1).join(from) : '')
      );
    },
  );
  // the first match replaced, $1 … naming its groups; the pattern in either regex dialect
  e.registerFunction('string.regexReplace(string, string): string', (s: string, re: string, to: string) =>
    s.replace(celRegExp(re, ''), to),
  );
  // every match replaced (agentgateway's name for it)
  e.registerFunction('string.regexReplaceAll(string, string): string', (s: string, re: string, to: string) =>
    s.replace(celRegExp(re, 'g'), to),
  );
  e.registerFunction('map.merge(map): map', (a: Map<unknown, unknown>, b: Map<unknown, unknown>) => {
    const out = new Map(a instanceof Map ? a : Object.entries(a));
    for (const [k, v] of b instanceof Map ? b : Object.entries(b)) out.set(k, v);
    return out;
  });
  // CEL's string() of a duration, a timestamp and a type, which the library leaves out: "90s",
  // "1.5s"; RFC 3339 ("2024-01-02T03:04:05Z"); the type's name ("int")
  e.registerFunction('string(google.protobuf.Duration): string', (d: { seconds: bigint; nanos: number }) =>
    durationText(d),
  );
  e.registerFunction('string(google.protobuf.Timestamp): string', (t: Date) =>
    t.toISOString().replace(/\.?0+Z$/, 'Z'),
  );
  e.registerFunction('string(type): string', (t: { name: string }) => t.name);
  e.registerFunction('uuid(): string', () => randomUUID());
  e.registerFunction('isIP(string): bool', (s: string) => isIP(s) !== 0);
  e.registerType('IP', CelIp);
  e.registerFunction('ip(string): IP', (s: string) => new CelIp(s));
  e.registerFunction('IP.family(): int', (ip: CelIp) => BigInt(ip.family));
  e.registerFunction('IP.string(): string', (ip: CelIp) => ip.text);
  e.registerFunction('string(IP): string', (ip: CelIp) => ip.text);
  for (const [name, key] of [
    ['isUnspecified', 'unspecified'],
    ['isLoopback', 'loopback'],
    ['isLinkLocalMulticast', 'linkLocalMulticast'],
    ['isLinkLocalUnicast', 'linkLocalUnicast'],
    ['isGlobalUnicast', 'globalUnicast'],
  ] as const)
    e.registerFunction(`IP.${name}(): bool`, (ip: CelIp) => ipClass(ip)[key]);
  e.registerFunction('fail(string): dyn', (msg: string) => {
    throw new Error(`fail() called: ${msg}`);
  });
  e.registerFunction('unvalidatedJwtPayload(string): dyn', (t: string) => jwtPayload(t));

  // coalesce(a, b, …): the first argument that evaluates without an error to something not null
  for (const n of [1, 2, 3, 4, 5, 6]) {
    e.registerFunction(
      `coalesce(${Array(n).fill('ast').join(', ')}): dyn`,
      ({ args }: { args: unknown[] }) => ({
        args,
        async: false,
        typeCheck(
          checker: { check(n: unknown, c: unknown): unknown; getType(t: string): unknown },
          m: { args: unknown[] },
          ctx: unknown,
        ) {
          for (const a of m.args) checker.check(a, ctx);
          return checker.getType('dyn');
        },
        evaluate(ev: { tryEval(n: unknown, c: unknown): unknown }, m: { args: unknown[] }, ctx: unknown) {
          let last: unknown = null;
          let sawNull = false;
          for (const a of m.args) {
            const v = ev.tryEval(a, ctx);
            if (v instanceof Error) last = v;
            else if (v === null || v === undefined) sawNull = true;
            else return v;
          }
          if (sawNull || !(last instanceof Error)) return null;
          throw last;
        },
      }),
    );
  }

  // m.mapValues(v, expr) and m.filterKeys(k, pred): a map with each value replaced by expr over it,
  // or with the keys pred holds for
  for (const [method, binds] of [
    ['mapValues', 'value'],
    ['filterKeys', 'key'],
  ] as const)
    e.registerFunction(
      `map.${method}(ast, ast): dyn`,
      bindingMacro(method, false, (src, exprWith) => {
        if (!(src instanceof Map) && (src === null || typeof src !== 'object' || Array.isArray(src)))
          throw new Error(`${method}: the receiver is not a map`);
        const out = new Map<unknown, unknown>();
        for (const [k, v] of src instanceof Map ? src : Object.entries(src)) {
          const r = exprWith(binds === 'value' ? v : k);
          if (r instanceof Error) throw r;
          if (binds === 'value') out.set(k, r);
          else if (r === true) out.set(k, v);
          else if (r !== false) throw new Error('filterKeys: the predicate is not a bool');
        }
        return out;
      }),
    );

  // x.with(name, expr): expr with `name` bound to x (cel.bind's form as a method)
  e.registerFunction(
    'dyn.with(ast, ast): dyn',
    bindingMacro('with', true, (x, exprWith) => exprWith(x)),
  );
}

/** A CEL duration as CEL writes it: seconds, with a fraction only when there is one ("-1.5s"). */
function durationText(d: { seconds: bigint; nanos: number }): string {
  const total = d.seconds * 1_000_000_000n + BigInt(d.nanos);
  const abs = total < 0n ? -total : total;
  const whole = abs / 1_000_000_000n;
  const frac = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${total < 0n ? '-' : ''}${whole}${frac ? `.${frac}` : ''}s`;
}

/** Compiled patterns of regexReplace(All), by flags and source: a CEL program names the same ones each time. */
const celRegExps = new Map<string, RegExp>();

/** A pattern (either regex dialect) for String.replace, which starts a global one from its beginning. */
function celRegExp(pattern: string, flags: '' | 'g'): RegExp {
  const key = `${flags}/${pattern}`;
  let re = celRegExps.get(key);
  if (!re) {
    re = userRegExp(pattern, flags);
    if (celRegExps.size >= 256) celRegExps.delete(celRegExps.keys().next().value as string);
    celRegExps.set(key, re);
  }
  return re;
}
