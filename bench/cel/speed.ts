// Evaluation and compile cost of typical gateway policy expressions per CEL library: each expression is
// compiled once, then evaluated in timed batches, libraries interleaved round by round (BENCHMARKS.md).
// `node bench/cel/speed.ts` prints the table; bench/cel/run.ts records it.
import { CANDIDATES, type Candidate, type PolicyEval } from './candidates.ts';

export const POLICY_EXPRESSIONS = [
  'request.headers["x-user"] == "alice"',
  'request.path.startsWith("/admin")',
  'jwt.sub == "u1" && "admin" in jwt.groups',
  'has(request.headers.authorization)',
  'request.method in ["GET","HEAD"] || source.port > 1024',
  'size(request.path) < 256 && request.headers["content-type"].contains("json")',
  // Beyond the six in issue 4: regex matching, where libraries differ in engine and per-call compilation.
  'request.path.matches("^/admin/users/[0-9]+$")',
] as const;

/** The shape the gateway builds per request (packages/proxy/src/pipeline/context.ts): plain objects. */
export function policyContext(): Record<string, unknown> {
  return {
    request: {
      method: 'POST',
      path: '/admin/users/42',
      pathAndQuery: '/admin/users/42?view=full',
      host: 'api.example.com',
      scheme: 'https',
      version: 'HTTP/1.1',
      headers: {
        host: 'api.example.com',
        'user-agent': 'curl/8.5.0',
        accept: '*/*',
        'accept-encoding': 'gzip, br',
        'content-type': 'application/json',
        'content-length': '348',
        authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig',
        'x-user': 'alice',
        'x-request-id': '3f6c1e0a-8d4b-4c1e-9a57-2b8e1f0c7d11',
        'x-forwarded-for': '203.0.113.7',
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
      query: '?view=full',
      startTime: new Date('2026-11-22T10:00:00Z'),
    },
    source: { address: '203.0.113.7', port: 50432 },
    route: { name: 'admin', gateway: 'default/gw', listener: 'https' },
    backend: { name: 'users' },
    jwt: {
      iss: 'https://issuer.example.com',
      sub: 'u1',
      aud: 'gw',
      exp: 1795000000,
      iat: 1794996400,
      groups: ['dev', 'ops', 'admin'],
      email: 'alice@example.com',
    },
  };
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface ExpressionSpeed {
  expr: string;
  /** False when the library cannot compile the expression or does not return `true` on the context. */
  supported: boolean;
  reason?: string;
  nsPerEval?: Spread;
  compileUs?: Spread;
}

export interface LibrarySpeed {
  name: string;
  version: string;
  /** How the request context was given: the gateway's plain objects, or the library's native form. */
  context: string;
  expressions: ExpressionSpeed[];
}

export interface SpeedReport {
  rounds: number;
  batchMs: number;
  libraries: LibrarySpeed[];
}

function spread(values: number[]): Spread {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]! };
}

let sink = 0;

/** Nanoseconds per call of `fn` over `n` calls. */
function timeEval(fn: PolicyEval, ctx: Record<string, unknown>, n: number): number {
  let hits = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) if (fn(ctx) === true) hits++;
  const ns = Number(process.hrtime.bigint() - t0);
  sink += hits;
  return ns / n;
}

function timeCompile(c: Candidate, expr: string, n: number): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sink += typeof c.compilePolicy(expr) === 'function' ? 1 : 0;
  return Number(process.hrtime.bigint() - t0) / n;
}

/** Calls per batch so one batch lasts about `ms`; doubles as warm-up. */
function calibrate(timeOne: (n: number) => number, ms: number): number {
  let n = 16;
  for (;;) {
    const perCall = timeOne(n);
    if (perCall * n >= ms * 1e6 * 0.25 || n >= 1 << 24) return Math.max(1, Math.round((ms * 1e6) / perCall));
    n *= 4;
  }
}

interface Variant {
  candidate: Candidate;
  context: string;
  ctx: Record<string, unknown>;
}

interface Slot {
  lib: number;
  expr: number;
  fn: PolicyEval;
  ctx: Record<string, unknown>;
  evalN: number;
  compileN: number;
  evals: number[];
  compiles: number[];
}

export function runSpeed(
  opts: { rounds?: number; batchMs?: number; candidates?: readonly Candidate[] } = {},
): SpeedReport {
  const rounds = opts.rounds ?? 7;
  const batchMs = opts.batchMs ?? 20;
  const candidates = opts.candidates ?? CANDIDATES;
  const plain = policyContext();
  const variants: Variant[] = candidates.flatMap((c) => {
    const native = c.nativeContext?.(policyContext());
    const base = { candidate: c, context: 'plain objects', ctx: plain };
    return native ? [base, { candidate: c, context: native.form, ctx: native.ctx }] : [base];
  });
  const libraries: LibrarySpeed[] = variants.map((v) => ({
    name: v.candidate.name,
    version: v.candidate.version,
    context: v.context,
    expressions: [],
  }));
  const slots: Slot[] = [];
  variants.forEach(({ candidate: c, ctx }, li) => {
    POLICY_EXPRESSIONS.forEach((expr, ei) => {
      let fn: PolicyEval;
      try {
        fn = c.compilePolicy(expr);
        const got = fn(ctx);
        if (got !== true) throw new Error(`returned ${String(got)} instead of true`);
      } catch (err) {
        const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
        libraries[li]!.expressions[ei] = { expr, supported: false, reason };
        return;
      }
      const evalN = calibrate((n) => timeEval(fn, ctx, n), batchMs);
      const compileN = calibrate((n) => timeCompile(c, expr, n), batchMs / 4);
      slots.push({ lib: li, expr: ei, fn, ctx, evalN, compileN, evals: [], compiles: [] });
    });
  });
  for (let r = 0; r < rounds; r++) {
    // Rotate which library goes first so no library always runs right after another's garbage.
    for (let ei = 0; ei < POLICY_EXPRESSIONS.length; ei++) {
      for (let k = 0; k < variants.length; k++) {
        const li = (k + r) % variants.length;
        const slot = slots.find((s) => s.lib === li && s.expr === ei);
        if (!slot) continue;
        slot.evals.push(timeEval(slot.fn, slot.ctx, slot.evalN));
        slot.compiles.push(
          timeCompile(variants[li]!.candidate, POLICY_EXPRESSIONS[ei]!, slot.compileN) / 1000,
        );
      }
    }
  }
  for (const s of slots) {
    libraries[s.lib]!.expressions[s.expr] = {
      expr: POLICY_EXPRESSIONS[s.expr]!,
      supported: true,
      nsPerEval: spread(s.evals),
      compileUs: spread(s.compiles),
    };
  }
  if (sink < 0) console.log(sink);
  return { rounds, batchMs, libraries };
}

if (import.meta.main) {
  const report = runSpeed({ rounds: Number(process.env['CEL_ROUNDS'] ?? 7) });
  for (const lib of report.libraries) {
    console.log(`${lib.name}@${lib.version}, context as ${lib.context}`);
    for (const e of lib.expressions) {
      const line = e.supported
        ? `${e.nsPerEval!.median.toFixed(0).padStart(7)} ns/eval  ${e.compileUs!.median.toFixed(1).padStart(7)} µs compile`
        : `unsupported: ${e.reason}`;
      console.log(`  ${line}  ${e.expr}`);
    }
  }
}
