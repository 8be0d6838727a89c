// The comparison behind hack/compat.ts: walks a reference JSON Schema (agentgateway's) beside gw's and
// says, per field path of the reference, whether gw accepts that field with a compatible shape. Pure:
// schemas in, findings out; reading files and printing live in compat.ts.
//
// Both sides are reduced to variants (one per alternative of anyOf/oneOf, per entry of a `type` list,
// after resolving $ref and merging allOf and a parent's keywords into each branch), so unions, nullable
// types and serde's flattened enums compare the same way whichever way a schema writes them.

export type Json = Record<string, unknown>;

/** `config` compares what a file may say (type, enum, required); `crd` adds the validation limits. */
export type Mode = 'config' | 'crd';

export type ConfigVerdict = 'same' | 'not supported' | 'missing' | 'different';
export type CrdVerdict =
  | 'same'
  | 'not supported'
  | 'spec-mandated'
  | 'missing'
  | 'different type'
  | 'different limits';
/**
 * Config paths whose objects the reference's schema leaves open but agentgateway's parser reads with
 * fixed, strictly checked fields (the local `services` and `workloads`).
 */
const PARSER_TYPED: ReadonlySet<string> = new Set(['services[]', 'workloads[]']);

export type Verdict = ConfigVerdict | CrdVerdict;

export const CONFIG_VERDICTS: readonly ConfigVerdict[] = ['same', 'not supported', 'missing', 'different'];
export const CRD_VERDICTS: readonly CrdVerdict[] = [
  'same',
  'not supported',
  'spec-mandated',
  'missing',
  'different type',
  'different limits',
];

/** What gw's NotYet fields say (as their description in the published schema) and refuse with. */
export const NOT_SUPPORTED_MARKER = 'not supported by this build';

type ReasonKind = 'type' | 'enum' | 'required' | 'limits';
export interface Reason {
  kind: ReasonKind;
  text: string;
}

export interface Finding {
  path: string;
  verdict: Verdict;
  reasons: string[];
  /** For missing and not-supported fields: how many reference fields lie below (not listed themselves). */
  below?: number;
}

export interface GwOnly {
  path: string;
  required: boolean;
}

export interface DescriptionDiff {
  path: string;
  reference: string;
  gw: string;
}

export interface Comparison {
  mode: Mode;
  findings: Finding[];
  gwOnly: GwOnly[];
  descriptions: DescriptionDiff[];
}

const MAX_DEPTH = 40;
const MAX_VARIANTS = 256;
/** A $ref met again on the same path is compared once (at its first occurrence), not again. */
const RECURSIVE = 'x-compat-recursive';

type Kind =
  | 'any'
  | 'notYet'
  | 'recursive'
  | 'null'
  | 'boolean'
  | 'string'
  | 'integer'
  | 'number'
  | 'array'
  | 'object';
const SCALARS = new Set<Kind>(['boolean', 'string', 'integer', 'number']);

interface Raw {
  node: Json;
  refs: readonly string[];
}
interface Variant extends Raw {
  kind: Kind;
}

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON pointer into the document (`#/$defs/Name`, `#/definitions/Name`, `#`). */
function resolve(ref: string, root: Json): unknown {
  if (!ref.startsWith('#')) throw new Error(`only local $refs are supported, not ${ref}`);
  let at: unknown = root;
  for (const part of ref.slice(1).split('/').filter(Boolean)) {
    const key = decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~');
    if (!isObj(at) || !(key in at)) throw new Error(`unresolvable $ref ${ref}`);
    at = at[key];
  }
  return at;
}

const typesOf = (node: Json): string[] | undefined =>
  typeof node['type'] === 'string'
    ? [node['type']]
    : Array.isArray(node['type'])
      ? (node['type'] as string[])
      : undefined;

/** Both nodes at once (allOf, or a parent's keywords and one of its branches). */
function merge(a: Json, b: Json): Json {
  const out: Json = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    if (prev === undefined) out[k] = v;
    else if (k === 'properties' && isObj(prev) && isObj(v)) {
      const props: Json = { ...prev };
      for (const [p, s] of Object.entries(v)) {
        props[p] = props[p] === undefined || props[p] === s ? s : { allOf: [props[p], s] };
      }
      out[k] = props;
    } else if (k === 'required' && Array.isArray(prev) && Array.isArray(v)) {
      out[k] = [...new Set([...prev, ...v])];
    } else if (k === 'type') {
      const ta = typesOf(a) ?? [];
      const tb = typesOf(b) ?? [];
      // integer is a number: `number` and `integer` meet at integer
      const both = ta.flatMap((t) =>
        tb.includes(t) ? [t] : t === 'number' && tb.includes('integer') ? ['integer'] : [],
      );
      for (const t of tb) if (t === 'integer' && ta.includes('number') && !both.includes(t)) both.push(t);
      out[k] = both;
    } else if (
      (k === 'additionalProperties' || k === 'unevaluatedProperties') &&
      (prev === false || v === false)
    ) {
      out[k] = false;
    } else out[k] = v;
  }
  return out;
}

function cross(as: Raw[], bs: Raw[]): Raw[] {
  const out: Raw[] = [];
  for (const a of as) {
    for (const b of bs) {
      if (out.length >= MAX_VARIANTS) return out;
      out.push({ node: merge(a.node, b.node), refs: [...new Set([...a.refs, ...b.refs])] });
    }
  }
  return out;
}

/** The alternatives a schema accepts, each a plain node without $ref, anyOf, oneOf or allOf. */
function flatten(schema: unknown, root: Json, refs: readonly string[], depth = 0): Raw[] {
  if (schema === true || schema === undefined) return [{ node: {}, refs }];
  if (schema === false || !isObj(schema)) return [];
  if (depth > MAX_DEPTH) return [{ node: { [RECURSIVE]: 'depth' }, refs }];
  const { $ref, anyOf, oneOf, allOf, ...base } = schema;
  let acc: Raw[] = [{ node: base, refs }];
  if (typeof $ref === 'string') {
    if (refs.includes($ref)) return [{ node: { ...base, [RECURSIVE]: $ref }, refs }];
    // the target first, so the referring node's own keywords (description, default) win
    const target = flatten(resolve($ref, root), root, [...refs, $ref], depth + 1);
    acc = cross(target, acc);
  }
  for (const alternatives of [anyOf, oneOf]) {
    if (Array.isArray(alternatives)) {
      acc = cross(
        acc,
        alternatives.flatMap((s) => flatten(s, root, refs, depth + 1)),
      );
    }
  }
  if (Array.isArray(allOf)) {
    for (const s of allOf) acc = cross(acc, flatten(s, root, refs, depth + 1));
  }
  return acc;
}

function jsonKind(v: unknown): Kind {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

function kindsOf(node: Json): Kind[] {
  if (node[RECURSIVE] !== undefined) return ['recursive'];
  const types = typesOf(node);
  if (types) return types as Kind[];
  if (node['x-kubernetes-int-or-string'] === true) return ['integer', 'string'];
  if (node['properties'] !== undefined || isObj(node['additionalProperties'])) return ['object'];
  if (node['items'] !== undefined) return ['array'];
  if (Array.isArray(node['enum'])) return [...new Set((node['enum'] as unknown[]).map(jsonKind))];
  if ('const' in node) return [jsonKind(node['const'])];
  const d = node['description'];
  if (typeof d === 'string' && d.includes(NOT_SUPPORTED_MARKER)) return ['notYet'];
  return ['any'];
}

function variants(schema: unknown, root: Json, refs: readonly string[]): Variant[] {
  return flatten(schema, root, refs).flatMap((r) => kindsOf(r.node).map((kind) => ({ ...r, kind })));
}

/**
 * serde's catch-all `"invalid"` alternative (a string enum of that one value beside the real forms,
 * e.g. PathMatch): what agentgateway parses a bad value into, not a form a user writes.
 */
const isSerdeInvalid = (v: Variant) =>
  v.kind === 'string' && JSON.stringify(v.node['enum']) === '["invalid"]';

/** A pattern with `\xHH` escapes of plain characters written as the characters (`\x60` is a backtick). */
function normalizePattern(p: unknown): unknown {
  if (typeof p !== 'string') return p;
  return p.replace(/\\x([0-9a-fA-F]{2})/g, (m, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16));
    return /[\w`~!@#%&=;:'",<>/ -]/.test(c) ? c : m;
  });
}

const accepts = (gw: Kind, ref: Kind) => gw === ref || (gw === 'number' && ref === 'integer');

/**
 * An object that takes keys it does not define. In JSON Schema that is one without
 * `additionalProperties: false`; the API server prunes unknown fields of a CRD's object unless it
 * says x-kubernetes-preserve-unknown-fields.
 */
const isOpen = (node: Json, mode: Mode) =>
  node['additionalProperties'] === true ||
  node['x-kubernetes-preserve-unknown-fields'] === true ||
  (mode === 'config' && node['additionalProperties'] === undefined);
const mapValue = (node: Json) =>
  isObj(node['additionalProperties']) ? node['additionalProperties'] : undefined;
const propsOf = (node: Json) => (isObj(node['properties']) ? node['properties'] : {});
const requiredOf = (node: Json) =>
  new Set(Array.isArray(node['required']) ? (node['required'] as string[]) : []);
const valuesOf = (node: Json): unknown[] | undefined =>
  Array.isArray(node['enum']) ? (node['enum'] as unknown[]) : 'const' in node ? [node['const']] : undefined;

const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
const listOf = (vs: unknown[], max = 8) =>
  vs.length > max ? `${vs.slice(0, max).map(show).join(', ')}, … (${vs.length})` : vs.map(show).join(', ');
const kindList = (vs: Variant[]) => [...new Set(vs.map((v) => v.kind))].join('|') || 'nothing';

const SEVERITY: Record<Verdict, number> = {
  same: 0,
  'not supported': 1,
  'spec-mandated': 1,
  missing: 2,
  'different limits': 3,
  'different type': 4,
  different: 4,
};

const LIMITS = [
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
] as const;

interface ValueResult {
  reasons: Reason[];
  /** The message of a gw NotYet field. */
  notSupported?: string;
  /** Set when only some forms or values of the field are refused by name (the rest are the same). */
  partial?: boolean;
}

/**
 * A gw alternative refused by name: a NotYet field, or values gw knows and refuses (an enum or an
 * object form whose description carries the marker), beside the forms it implements.
 */
const isRefused = (v: Variant) =>
  v.kind === 'notYet' ||
  (typeof v.node['description'] === 'string' && v.node['description'].includes(NOT_SUPPORTED_MARKER));

class Comparer {
  readonly findings = new Map<string, Finding>();
  readonly gwOnly = new Map<string, GwOnly>();
  readonly descriptions: DescriptionDiff[] = [];

  readonly mode: Mode;
  readonly refRoot: Json;
  readonly gwRoot: Json;

  constructor(mode: Mode, refRoot: Json, gwRoot: Json) {
    this.mode = mode;
    this.refRoot = refRoot;
    this.gwRoot = gwRoot;
  }

  verdictOf(reasons: Reason[]): Verdict {
    if (this.mode === 'config') return reasons.length > 0 ? 'different' : 'same';
    if (reasons.some((r) => r.kind === 'type')) return 'different type';
    return reasons.length > 0 ? 'different limits' : 'same';
  }

  emit(path: string, verdict: Verdict, reasons: string[], below?: number): void {
    const prev = this.findings.get(path);
    if (!prev) {
      this.findings.set(path, { path, verdict, reasons, ...(below ? { below } : {}) });
      return;
    }
    // the same path reached through several variants of the reference: the worst case stands
    if (SEVERITY[verdict] > SEVERITY[prev.verdict]) prev.verdict = verdict;
    for (const r of reasons) if (!prev.reasons.includes(r)) prev.reasons.push(r);
    if (below && below > (prev.below ?? 0)) prev.below = below;
  }

  /** A field of an object: compares its value and records the finding at `path`. */
  field(
    path: string,
    ref: unknown,
    gw: unknown,
    refRefs: readonly string[],
    gwRefs: readonly string[],
    req: { ref: boolean; gw: boolean },
    depth: number,
  ): void {
    const res = this.value(path, ref, gw, refRefs, gwRefs, depth);
    if (res.notSupported !== undefined) {
      const below = res.partial ? undefined : this.countBelow(ref, refRefs);
      this.emit(path, 'not supported', [res.notSupported], below);
      return;
    }
    const reasons = res.reasons;
    if (req.gw && !req.ref)
      reasons.push({ kind: 'required', text: 'required by gw, optional in the reference' });
    if (this.mode === 'crd' && req.ref && !req.gw)
      reasons.push({ kind: 'required', text: 'required in the reference, optional in gw (gw looser)' });
    if (this.mode === 'crd') this.compareDescriptions(path, ref, gw);
    this.emit(
      path,
      this.verdictOf(reasons),
      reasons.map((r) => r.text),
    );
  }

  /** The shape of one value; fields below it are recorded as findings of their own. */
  value(
    path: string,
    ref: unknown,
    gw: unknown,
    refRefs: readonly string[],
    gwRefs: readonly string[],
    depth: number,
  ): ValueResult {
    const R = variants(ref, this.refRoot, refRefs).filter(
      (v) => v.kind !== 'null' && v.kind !== 'recursive' && !isSerdeInvalid(v),
    );
    const all = variants(gw, this.gwRoot, gwRefs).filter((v) => v.kind !== 'null');
    const refused = all.filter(isRefused);
    const G = all.filter((v) => !isRefused(v));
    if (all.length > 0 && G.length === 0) {
      return { reasons: [], notSupported: String(refused[0]?.node['description']) };
    }
    // a reference form or value that only a refused alternative of gw takes: "not supported" (partly)
    let partly: string | undefined;
    const refusedTakes = (kind: Kind, value?: unknown) =>
      refused.find(
        (g) =>
          g.kind === 'notYet' ||
          (accepts(g.kind, kind) &&
            (value === undefined ||
              (valuesOf(g.node)?.some((w) => JSON.stringify(w) === JSON.stringify(value)) ?? true))),
      );
    if (R.length === 0 || depth > MAX_DEPTH || G.some((g) => g.kind === 'any' || g.kind === 'recursive')) {
      return { reasons: [] };
    }
    const reasons: Reason[] = [];
    const lacking: unknown[] = [];
    // the fields of every alternative of the reference here: a field gw requires is "unknown to the
    // reference" only if no alternative has it
    const refKeys = new Set(R.flatMap((r) => (r.kind === 'object' ? Object.keys(propsOf(r.node)) : [])));
    for (const r of R) {
      if (r.kind === 'any' || r.kind === 'notYet') {
        if (
          !G.some(
            (g) =>
              g.kind === 'object' && isOpen(g.node, this.mode) && Object.keys(propsOf(g.node)).length === 0,
          )
        )
          reasons.push({ kind: 'type', text: `the reference accepts any value, gw only ${kindList(G)}` });
        continue;
      }
      const compatible = G.filter((g) => accepts(g.kind, r.kind));
      if (compatible.length === 0) {
        const by = refusedTakes(r.kind);
        if (by) {
          partly ??= String(by.node['description']);
          continue;
        }
        reasons.push({ kind: 'type', text: `the reference accepts ${r.kind}, gw only ${kindList(G)}` });
        continue;
      }
      if (SCALARS.has(r.kind)) reasons.push(...this.scalar(r, compatible, lacking));
      else if (r.kind === 'array') reasons.push(...this.array(path, r, compatible, depth));
      else if (r.kind === 'object') reasons.push(...this.object(path, r, compatible, refKeys, depth));
    }
    const unknown = lacking.filter((v) => {
      const by = refusedTakes(jsonKind(v), v);
      if (by) partly ??= String(by.node['description']);
      return !by;
    });
    if (unknown.length > 0)
      reasons.unshift({ kind: 'enum', text: `gw lacks the value(s) ${listOf(unknown)}` });
    if (reasons.length === 0 && partly !== undefined)
      return { reasons: [], notSupported: partly, partial: true };
    return { reasons: dedupe(reasons) };
  }

  /** A scalar's values; reference values gw does not take are added to `lacking`. */
  scalar(r: Variant, gs: Variant[], lacking: unknown[]): Reason[] {
    const out: Reason[] = [];
    const refValues = valuesOf(r.node);
    const gwValues = gs.some((g) => valuesOf(g.node) === undefined)
      ? undefined
      : gs.flatMap((g) => valuesOf(g.node) ?? []);
    const same = (a: unknown, b: unknown) =>
      typeof a === 'string' && typeof b === 'string' && this.mode === 'config'
        ? a.toLowerCase() === b.toLowerCase()
        : JSON.stringify(a) === JSON.stringify(b);
    if (gwValues !== undefined) {
      if (refValues === undefined) {
        out.push({ kind: 'enum', text: `the reference accepts any ${r.kind}, gw only ${listOf(gwValues)}` });
      } else {
        for (const v of refValues) if (!gwValues.some((w) => same(v, w))) lacking.push(v);
        if (this.mode === 'crd') {
          const extra = gwValues.filter((w) => !refValues.some((v) => same(v, w)));
          if (extra.length > 0)
            out.push({ kind: 'limits', text: `gw also accepts ${listOf(extra)} (gw looser)` });
        }
      }
    }
    if (this.mode === 'crd') out.push(...this.limits(r, gs));
    return out;
  }

  /** Validation limits and defaults (CRDs only): against the gw variant of the same kind. */
  limits(r: Variant, gs: Variant[]): Reason[] {
    const g = gs.find((x) => x.kind === r.kind) ?? gs[0];
    if (!g) return [];
    const out: Reason[] = [];
    for (const k of LIMITS) {
      const a = k === 'pattern' ? normalizePattern(r.node[k]) : r.node[k];
      const b = k === 'pattern' ? normalizePattern(g.node[k]) : g.node[k];
      if (JSON.stringify(a) === JSON.stringify(b)) continue;
      const direction =
        typeof a === 'number' && typeof b === 'number'
          ? (k.startsWith('min') || k.startsWith('exclusiveMin') ? b > a : b < a)
            ? ' (gw stricter)'
            : ' (gw looser)'
          : a === undefined
            ? ' (gw stricter)'
            : b === undefined
              ? ' (gw looser)'
              : '';
      out.push({
        kind: 'limits',
        text: `${k}: reference ${show(a ?? 'none')}, gw ${show(b ?? 'none')}${direction}`,
      });
    }
    if (JSON.stringify(r.node['default']) !== JSON.stringify(g.node['default'])) {
      out.push({
        kind: 'limits',
        text: `default: reference ${show(r.node['default'] ?? 'none')}, gw ${show(g.node['default'] ?? 'none')}`,
      });
    }
    return out;
  }

  array(path: string, r: Variant, gs: Variant[], depth: number): Reason[] {
    const items = gs.length === 1 ? gs[0]?.node['items'] : { anyOf: gs.map((g) => g.node['items'] ?? true) };
    const gwRefs = [...new Set(gs.flatMap((g) => g.refs))];
    const res = this.value(`${path}[]`, r.node['items'], items, r.refs, gwRefs, depth + 1);
    const out = res.reasons.map((x) => ({ ...x, text: `items: ${x.text}` }));
    if (res.notSupported !== undefined) out.push({ kind: 'type', text: `items: ${res.notSupported}` });
    if (this.mode === 'crd') out.push(...this.limits(r, gs));
    return out;
  }

  /** The gw object that a reference object is meant to be: the one sharing most of its fields. */
  pick(r: Variant, gs: Variant[]): Variant {
    const rp = propsOf(r.node);
    const rreq = requiredOf(r.node);
    let best = gs[0]!;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (const g of gs) {
      const gp = propsOf(g.node);
      let score = 0;
      for (const [k, s] of Object.entries(rp)) {
        if (!(k in gp)) continue;
        score += rreq.has(k) ? 3 : 1;
        const rv = isObj(s) ? valuesOf(s) : undefined;
        const gv = isObj(gp[k]) ? valuesOf(gp[k] as Json) : undefined;
        if (rv?.length === 1 && gv?.some((v) => JSON.stringify(v) === JSON.stringify(rv[0]))) score += 10;
      }
      for (const k of requiredOf(g.node)) if (!(k in rp)) score -= 5;
      if (score > bestScore) {
        best = g;
        bestScore = score;
      }
    }
    return best;
  }

  object(path: string, r: Variant, gs: Variant[], refKeys: ReadonlySet<string>, depth: number): Reason[] {
    const g = this.pick(r, gs);
    const rp = propsOf(r.node);
    const gp = propsOf(g.node);
    const open = isOpen(g.node, this.mode);
    const gwMap = mapValue(g.node);
    // an object gw takes whole (any keys, none of its own): nothing below to compare
    if (open && !gwMap && Object.keys(gp).length === 0) return [];
    const rreq = requiredOf(r.node);
    const greq = requiredOf(g.node);
    const join = (k: string) => (path ? `${path}.${k}` : k);
    for (const [k, s] of Object.entries(rp)) {
      const target = k in gp ? gp[k] : gwMap;
      if (target !== undefined) {
        this.field(join(k), s, target, r.refs, g.refs, { ref: rreq.has(k), gw: greq.has(k) }, depth + 1);
      } else {
        const reasons = open ? ['gw accepts the key but does not read it (its object is not strict)'] : [];
        this.emit(join(k), 'missing', reasons, this.countBelow(s, r.refs));
      }
    }
    // a reference alternative gw has no counterpart for shows as its fields missing; gw's own fields are
    // not "unknown to the reference" then, since another alternative of the reference may have them
    const related = Object.keys(rp).length === 0 || Object.keys(rp).some((k) => k in gp);
    // an object the reference's schema leaves open (any keys, none described) that agentgateway's
    // parser, which the schema does not show, reads strictly: gw's fields are its reading of that parser
    // (checked with agentgateway --validate-only), not differences
    const refOpen =
      this.mode === 'config' &&
      PARSER_TYPED.has(path) &&
      r.node['additionalProperties'] === true &&
      Object.keys(rp).length === 0;
    for (const k of Object.keys(gp)) {
      if (k in rp || mapValue(r.node) || !related || refKeys.has(k)) continue;
      if (greq.has(k) && !refOpen)
        this.emit(join(k), this.verdictOf([{ kind: 'required', text: '' }]), [
          'required by gw, unknown to the reference',
        ]);
      else if (!this.gwOnly.has(join(k))) this.gwOnly.set(join(k), { path: join(k), required: false });
    }
    const out: Reason[] = [];
    const refMap = mapValue(r.node);
    if (refMap) {
      if (gwMap) {
        const res = this.value(`${path}.*`, refMap, gwMap, r.refs, g.refs, depth + 1);
        out.push(...res.reasons.map((x) => ({ ...x, text: `values: ${x.text}` })));
        if (res.notSupported !== undefined) out.push({ kind: 'type', text: `values: ${res.notSupported}` });
      } else if (!open) {
        out.push({
          kind: 'type',
          text: `the reference is a map with any keys, gw takes only ${listOf(Object.keys(gp))}`,
        });
      }
    } else if (
      !refOpen &&
      r.node['additionalProperties'] === true &&
      Object.keys(rp).length === 0 &&
      !open &&
      !gwMap
    ) {
      out.push({ kind: 'type', text: `the reference takes any keys, gw only ${listOf(Object.keys(gp))}` });
    }
    if (this.mode === 'crd') out.push(...this.limits(r, [g]));
    return out;
  }

  compareDescriptions(path: string, ref: unknown, gw: unknown): void {
    const a = isObj(ref) && typeof ref['description'] === 'string' ? ref['description'].trim() : '';
    const b = isObj(gw) && typeof gw['description'] === 'string' ? gw['description'].trim() : '';
    if (a !== b) this.descriptions.push({ path, reference: a, gw: b });
  }

  /** The reference fields below a schema (deduplicated paths), for "missing (+N below)". */
  countBelow(schema: unknown, refs: readonly string[]): number {
    const seen = new Set<string>();
    const walk = (s: unknown, rs: readonly string[], prefix: string, depth: number) => {
      if (depth > MAX_DEPTH) return;
      for (const v of variants(s, this.refRoot, rs)) {
        if (v.kind === 'array') walk(v.node['items'], v.refs, `${prefix}[]`, depth + 1);
        if (v.kind !== 'object') continue;
        for (const [k, p] of Object.entries(propsOf(v.node))) {
          const path = `${prefix}.${k}`;
          if (seen.has(path)) continue;
          seen.add(path);
          walk(p, v.refs, path, depth + 1);
        }
        const m = mapValue(v.node);
        if (m) walk(m, v.refs, `${prefix}.*`, depth + 1);
      }
    };
    walk(schema, refs, '', 0);
    return seen.size;
  }
}

function dedupe(reasons: Reason[]): Reason[] {
  const seen = new Set<string>();
  return reasons.filter((r) => !seen.has(r.text) && seen.add(r.text));
}

/**
 * Compares two schemas from their roots (`path` names the root, '' for a config file's top level).
 * $refs resolve within each schema's own document (`refRoot`/`gwRoot`, defaulting to the schema).
 */
export function compareSchemas(
  ref: Json,
  gw: Json,
  opts: { mode: Mode; path?: string; refRoot?: Json; gwRoot?: Json },
): Comparison {
  const c = new Comparer(opts.mode, opts.refRoot ?? ref, opts.gwRoot ?? gw);
  const path = opts.path ?? '';
  if (path) c.field(path, ref, gw, [], [], { ref: false, gw: false }, 0);
  else {
    const res = c.value('', ref, gw, [], [], 0);
    if (res.notSupported !== undefined) c.emit('(root)', 'not supported', [res.notSupported]);
    else if (res.reasons.length > 0)
      c.emit(
        '(root)',
        c.verdictOf(res.reasons),
        res.reasons.map((r) => r.text),
      );
  }
  const byPath = (a: { path: string }, b: { path: string }) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
  return {
    mode: opts.mode,
    findings: [...c.findings.values()].sort(byPath),
    gwOnly: [...c.gwOnly.values()].filter((o) => !c.findings.has(o.path)).sort(byPath),
    descriptions: c.descriptions.sort(byPath),
  };
}

/** Findings per verdict, every verdict of the mode present (zero included). */
export function countVerdicts(c: Pick<Comparison, 'mode' | 'findings'>): Map<Verdict, number> {
  const order = c.mode === 'config' ? CONFIG_VERDICTS : CRD_VERDICTS;
  const counts = new Map<Verdict, number>(order.map((v) => [v, 0]));
  for (const f of c.findings) counts.set(f.verdict, (counts.get(f.verdict) ?? 0) + 1);
  // CRDs have no NotYet fields: leave the verdict out of their line unless one shows up (and so for
  // differences the spec mandates, which only hack/compat.ts's allow-list produces)
  if (c.mode === 'crd' && counts.get('not supported') === 0) counts.delete('not supported');
  if (c.mode === 'crd' && counts.get('spec-mandated') === 0) counts.delete('spec-mandated');
  return counts;
}

/** The one line for the issue's note, e.g. `config: 812 same, 40 not supported, 95 missing, 12 different`. */
export function summaryLine(label: string, c: Pick<Comparison, 'mode' | 'findings'>): string {
  return `${label}: ${[...countVerdicts(c)].map(([v, n]) => `${n} ${v}`).join(', ')}`;
}

/** Whether any finding is a shape or limit difference (the future CI gate). */
export const hasDifferences = (c: Pick<Comparison, 'findings'>) =>
  c.findings.some((f) => f.verdict.startsWith('different'));

/**
 * A field path's area (the policy it belongs to, else the backend kind, else its first segments) and
 * its tail from there: `routes[].policies.extAuthz.host` is area `policies.extAuthz`, tail
 * `extAuthz.host`. The same tail under many parents is one difference met in many places.
 */
export function splitPath(path: string): { area: string; tail: string } {
  const segs = path.split('.');
  const name = (i: number) => segs[i]?.replace(/\[\]$/, '');
  const at = (i: number, area: string) => ({ area, tail: segs.slice(i).join('.') });
  for (let i = segs.length - 2; i >= 0; i--) {
    const s = name(i);
    if (s === 'policies' || s === 'frontendPolicies') {
      // the top-level `policies[]` list wraps each policy in `policy:`
      const j = name(i + 1) === 'policy' && i + 2 < segs.length ? i + 2 : i + 1;
      return at(j, `${s}.${name(j)}`);
    }
  }
  for (let i = segs.length - 2; i >= 0; i--) {
    if (name(i) === 'backends') return at(i + 1, `backends.${name(i + 1)}`);
  }
  const first = name(0) ?? '';
  const area = (first === 'config' || first === 'spec') && segs.length > 1 ? `${first}.${name(1)}` : first;
  return { area, tail: path };
}
