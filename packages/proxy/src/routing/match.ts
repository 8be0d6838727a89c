// Route matching: compiled matchers ordered by Gateway API precedence (hostname specificity, then
// exact path, longest prefix, regex, method, header count, query count, then definition order).
import type { RouteMatch } from '@gw/api';
import { userRegExp } from '@gw/api/runtime';

export interface MatchInput {
  method: string;
  path: string;
  /** Raw query string, with or without its leading `?`. */
  query: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface CompiledMatch<R> {
  route: R;
  /** The matched prefix for PathPrefix matches, used by prefix rewrites and redirects. */
  prefix: string | undefined;
  test(input: MatchInput): boolean;
  rank: number[];
  /** A route delegating to a routeGroup: once it matches, the group's routes are matched instead. */
  delegate?: HostRouter<R>;
}

const headerValue = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(',') : v);

type ValueTest = (v: string | undefined) => boolean;
function valueTest(m: { exact: string } | { regex: string }): ValueTest {
  if ('exact' in m) {
    const want = m.exact;
    return (v) => v === want;
  }
  const re = userRegExp(m.regex, '', true);
  return (v) => v !== undefined && re.test(v);
}

export function compileMatch<R>(route: R, m: RouteMatch, order: number): CompiledMatch<R> {
  const tests: ((i: MatchInput) => boolean)[] = [];
  let pathRank = 0;
  let pathLen = 0;
  let prefix: string | undefined;
  const p = m.path ?? { pathPrefix: '/' };
  if ('exact' in p) {
    const want = p.exact;
    tests.push((i) => i.path === want);
    pathRank = 3;
    pathLen = want.length;
  } else if ('pathPrefix' in p) {
    // Prefixes match whole path segments: /foo matches /foo and /foo/bar, not /foobar.
    const want =
      p.pathPrefix.length > 1 && p.pathPrefix.endsWith('/') ? p.pathPrefix.slice(0, -1) : p.pathPrefix;
    prefix = want;
    if (want !== '/') {
      tests.push(
        (i) => i.path.startsWith(want) && (i.path.length === want.length || i.path[want.length] === '/'),
      );
    }
    pathRank = 2;
    pathLen = want.length;
  } else {
    const re = userRegExp(Array.isArray(p.regex) ? p.regex[0] : p.regex, '', true);
    tests.push((i) => re.test(i.path));
    pathRank = 1;
    pathLen = 0;
  }
  if (m.method) {
    const want = m.method.toUpperCase();
    tests.push((i) => i.method === want);
  }
  for (const h of m.headers ?? []) {
    const name = h.name.toLowerCase();
    const t = valueTest(h.value);
    tests.push((i) => t(headerValue(i.headers[name])));
  }
  if (m.query && m.query.length > 0) {
    const qs = m.query.map((q) => ({ name: q.name, t: valueTest(q.value) }));
    tests.push((i) => {
      const params = new URLSearchParams(i.query);
      return qs.every((q) => q.t(params.get(q.name) ?? undefined));
    });
  }
  const test =
    tests.length === 0
      ? () => true
      : tests.length === 1
        ? (tests[0] as (i: MatchInput) => boolean)
        : (i: MatchInput) => {
            for (const t of tests) if (!t(i)) return false;
            return true;
          };
  return {
    route,
    prefix,
    test,
    rank: [pathRank, pathLen, m.method ? 1 : 0, m.headers?.length ?? 0, m.query?.length ?? 0, -order],
  };
}

export function byPrecedence<R>(a: CompiledMatch<R>, b: CompiledMatch<R>): number {
  for (let i = 0; i < a.rank.length; i++) {
    const d = (b.rank[i] as number) - (a.rank[i] as number);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Matchers grouped by hostname: exact hosts first, then wildcards from the longest suffix, then
 * routes without hostnames. The first group with a matching route wins, as in the Gateway API.
 */
export class HostRouter<R> {
  readonly #exact = new Map<string, CompiledMatch<R>[]>();
  readonly #wildcards: { suffix: string; matches: CompiledMatch<R>[] }[] = [];
  readonly #any: CompiledMatch<R>[] = [];

  add(hostnames: string[], matches: CompiledMatch<R>[]): void {
    if (hostnames.length === 0) {
      this.#any.push(...matches);
      return;
    }
    for (const h of hostnames) {
      if (h.startsWith('*.')) {
        const suffix = h.slice(1);
        let w = this.#wildcards.find((x) => x.suffix === suffix);
        if (!w) {
          w = { suffix, matches: [] };
          this.#wildcards.push(w);
        }
        w.matches.push(...matches);
      } else {
        const list = this.#exact.get(h) ?? [];
        list.push(...matches);
        this.#exact.set(h, list);
      }
    }
  }

  freeze(): void {
    for (const list of this.#exact.values()) list.sort(byPrecedence);
    for (const w of this.#wildcards) w.matches.sort(byPrecedence);
    this.#wildcards.sort((a, b) => b.suffix.length - a.suffix.length);
    this.#any.sort(byPrecedence);
  }

  /**
   * `host` is lower-case without port. A matching route that delegates to a routeGroup hands the
   * request to the group's routes; when none of those matches, there is no route (as agentgateway).
   */
  select(host: string, input: MatchInput): CompiledMatch<R> | undefined {
    const exact = this.#exact.get(host);
    if (exact) {
      for (const m of exact) if (m.test(input)) return m.delegate ? m.delegate.select(host, input) : m;
    }
    for (const w of this.#wildcards) {
      if (host.endsWith(w.suffix) && host.length > w.suffix.length) {
        for (const m of w.matches) if (m.test(input)) return m.delegate ? m.delegate.select(host, input) : m;
      }
    }
    for (const m of this.#any) if (m.test(input)) return m.delegate ? m.delegate.select(host, input) : m;
    return undefined;
  }

  /** Every candidate, in the order they are tried: what a trace shows as evaluated routes. */
  candidates(host: string): CompiledMatch<R>[] {
    const out: CompiledMatch<R>[] = [...(this.#exact.get(host) ?? [])];
    for (const w of this.#wildcards) if (host.endsWith(w.suffix)) out.push(...w.matches);
    return out.concat(this.#any);
  }
}

/** True when `host` falls under a listener hostname (exact or `*.suffix`); no hostname takes all. */
export function hostMatches(pattern: string | undefined, host: string): boolean {
  if (!pattern) return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return pattern === host;
}
