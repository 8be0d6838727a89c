// CEL conformance pass rates per library: every simple test shipped in @bufbuild/cel-spec, run through
// each candidate's adapter and compared with the expected value, error or deduced type.
// `node bench/cel/conformance.ts` prints the summary; bench/cel/run.ts records it.
import { readFileSync } from 'node:fs';
import type { SimpleTest } from '@bufbuild/cel-spec/cel/expr/conformance/test/simple_pb.js';
import type { Value } from '@bufbuild/cel-spec/cel/expr/value_pb.js';
import { getTestRegistry } from '@bufbuild/cel-spec/testdata/registry.js';
import { getConformanceSuite, type IncrementalTestSuite } from '@bufbuild/cel-spec/testdata/tests.js';
import type { Registry } from '@bufbuild/protobuf';
import { CANDIDATES, type Candidate, type ConformanceCase, type Outcome } from './candidates.ts';
import { type Canon, canonEqual, canonFromValue, normalizeTypeName, showCanon, typeName } from './values.ts';

type Expected =
  | { kind: 'value'; value: Canon }
  | { kind: 'error' }
  | { kind: 'typed'; type: string; value: Canon | undefined }
  | { kind: 'unsupported'; reason: string };

export interface Tally {
  pass: number;
  fail: number;
  skip: number;
}

export interface LibraryConformance {
  name: string;
  version: string;
  setup: string;
  total: Tally;
  /** Sections of the CEL language itself, without the optional extension libraries. */
  core: Tally;
  /** Tests that use no protobuf message types: the part a JSON-context gateway relies on. */
  withoutMessages: Tally;
  /** Core sections, without protobuf message types. */
  coreWithoutMessages: Tally;
  sections: Record<string, Tally>;
  /** Why tests failed, counted: "unsupported", "error in parse|check|eval", "wrong value", ... */
  failureKinds: Record<string, number>;
  /** Failed core tests that use no protobuf message types (the ones that matter for the gateway). */
  coreFailuresWithoutMessages: string[];
}

export interface ConformanceReport {
  specPackage: string;
  specVersion: string;
  upstreamCelSpec: string;
  tests: number;
  /** Tests no candidate can express at all; skipped for every library. */
  skippedForAll: Array<{ test: string; reason: string }>;
  libraries: LibraryConformance[];
}

interface FlatTest {
  section: string;
  path: string;
  test: SimpleTest;
}

function flatten(suite: IncrementalTestSuite, prefix: string[], out: FlatTest[]): FlatTest[] {
  for (const t of suite.tests) {
    out.push({ section: prefix[0] ?? suite.name, path: [...prefix, t.name].join('/'), test: t.original });
  }
  for (const s of suite.suites) flatten(s, [...prefix, s.name], out);
  return out;
}

function toCase(t: SimpleTest): ConformanceCase {
  const decls: Array<{ name: string; type: ConformanceCase['decls'][number]['type'] }> = [];
  const functionDecls: string[] = [];
  for (const d of t.typeEnv) {
    if (d.declKind.case === 'ident') decls.push({ name: d.name, type: d.declKind.value.type });
    else functionDecls.push(d.name);
  }
  const bindings: Record<string, Value> = {};
  const nonValueBindings: string[] = [];
  for (const [name, b] of Object.entries(t.bindings)) {
    if (b.kind.case === 'value') bindings[name] = b.kind.value;
    else nonValueBindings.push(name);
  }
  return {
    expr: t.expr,
    container: t.container,
    disableCheck: t.disableCheck,
    checkOnly: t.checkOnly,
    wantType: t.resultMatcher.case === 'typedResult',
    decls,
    functionDecls,
    bindings,
    nonValueBindings,
  };
}

function expectation(t: SimpleTest, registry: Registry): Expected {
  const m = t.resultMatcher;
  switch (m.case) {
    case undefined:
      return { kind: 'value', value: { k: 'bool', v: true } };
    case 'value':
      return { kind: 'value', value: canonFromValue(m.value, registry) };
    case 'evalError':
    case 'anyEvalErrors':
      return { kind: 'error' };
    case 'typedResult': {
      const type = typeName(m.value.deducedType);
      if (type === undefined) return { kind: 'unsupported', reason: 'unspellable deduced type' };
      const value = m.value.result && canonFromValue(m.value.result, registry);
      return { kind: 'typed', type, value };
    }
    default:
      return { kind: 'unsupported', reason: `result matcher ${m.case}` };
  }
}

/**
 * Sections that test optional extension libraries (cel-go's ext package and optional types) rather than
 * the language definition; each library may or may not ship them.
 */
export const EXTENSION_SECTIONS = new Set([
  'bindings_ext',
  'block_ext',
  'encoders_ext',
  'math_ext',
  'string_ext',
  'optionals',
  'macros2',
]);

const MESSAGE_NAMES =
  /TestAllTypes|NestedMessage|GlobalEnum|google\.protobuf\.|cel\.expr\.conformance|proto[23]\./;
/** A message literal (`Int32Value{value: 1}`): protobuf type names start with a capital letter. */
const MESSAGE_LITERAL = /\b[A-Z]\w*\s*\{/;

/** True when the test needs protobuf message types: in the expression, a declaration, a binding or the result. */
function usesMessages(t: SimpleTest): boolean {
  if (MESSAGE_NAMES.test(t.expr) || MESSAGE_LITERAL.test(t.expr)) return true;
  if (t.typeEnv.some((d) => d.declKind.case === 'ident' && mentionsMessage(d.declKind.value.type)))
    return true;
  const values = Object.values(t.bindings).flatMap((b) => (b.kind.case === 'value' ? [b.kind.value] : []));
  if (t.resultMatcher.case === 'value') values.push(t.resultMatcher.value);
  return values.some(valueMentionsMessage);
}

function mentionsMessage(type: Parameters<typeof typeName>[0]): boolean {
  const k = type?.typeKind;
  if (k === undefined) return false;
  if (k.case === 'messageType' || k.case === 'wrapper') return true;
  if (k.case === 'wellKnown') return k.value === 1; // google.protobuf.Any
  if (k.case === 'listType') return mentionsMessage(k.value.elemType);
  if (k.case === 'mapType') return mentionsMessage(k.value.keyType) || mentionsMessage(k.value.valueType);
  return false;
}

function valueMentionsMessage(v: Parameters<typeof canonFromValue>[0]): boolean {
  const k = v.kind;
  switch (k.case) {
    case 'objectValue':
      // Timestamp and Duration are CEL's own types; every other Any is a protobuf message.
      return !/google\.protobuf\.(Timestamp|Duration)$/.test(k.value.typeUrl);
    case 'enumValue':
      return true;
    case 'listValue':
      return k.value.values.some(valueMentionsMessage);
    case 'mapValue':
      return k.value.entries.some(
        (e) => (e.key && valueMentionsMessage(e.key)) || (e.value && valueMentionsMessage(e.value)),
      );
    default:
      return false;
  }
}

/** undefined = pass; otherwise the reason it failed. */
function judge(expected: Expected, got: Outcome, registry: Registry, checkOnly: boolean): string | undefined {
  if (got.kind === 'unsupported') return `unsupported: ${got.reason}`;
  if (expected.kind === 'unsupported') return `unsupported expectation: ${expected.reason}`;
  if (expected.kind === 'error') {
    return got.kind === 'error' ? undefined : `wrong value: want an error, got ${show(got)}`;
  }
  if (got.kind === 'error') return `error in ${got.phase}: ${got.message.slice(0, 160)}`;
  if (expected.kind === 'typed') {
    if (got.type === undefined) return 'no deduced type';
    if (normalizeTypeName(got.type) !== normalizeTypeName(expected.type)) {
      return `wrong type: want ${expected.type}, got ${got.type}`;
    }
    if (checkOnly || expected.value === undefined) return undefined;
    if (got.value === undefined || !canonEqual(expected.value, got.value, registry)) {
      return `wrong value: want ${showCanon(expected.value)}, got ${show(got)}`;
    }
    return undefined;
  }
  if (got.value === undefined || !canonEqual(expected.value, got.value, registry)) {
    return `wrong value: want ${showCanon(expected.value)}, got ${show(got)}`;
  }
  return undefined;
}

function show(o: Outcome): string {
  if (o.kind === 'ok') return o.value === undefined ? 'no value' : showCanon(o.value).slice(0, 120);
  return o.kind === 'error' ? `error (${o.phase})` : 'unsupported';
}

function failureKind(reason: string): string {
  if (reason.startsWith('unsupported')) return 'unsupported';
  if (reason.startsWith('error in ')) return reason.slice(0, reason.indexOf(':'));
  return reason.slice(0, reason.indexOf(':') === -1 ? undefined : reason.indexOf(':'));
}

const zero = (): Tally => ({ pass: 0, fail: 0, skip: 0 });

export function runConformance(candidates: readonly Candidate[] = CANDIDATES): ConformanceReport {
  const registry = getTestRegistry();
  const tests = flatten(getConformanceSuite(), [], []);
  const libs: LibraryConformance[] = candidates.map((c) => ({
    name: c.name,
    version: c.version,
    setup: c.setup,
    total: zero(),
    core: zero(),
    withoutMessages: zero(),
    coreWithoutMessages: zero(),
    sections: {},
    failureKinds: {},
    coreFailuresWithoutMessages: [],
  }));
  const skippedForAll: ConformanceReport['skippedForAll'] = [];
  for (const { section, path, test } of tests) {
    let expected: Expected;
    try {
      expected = expectation(test, registry);
    } catch (err) {
      expected = { kind: 'unsupported', reason: (err as Error).message };
    }
    const kase = toCase(test);
    const outcomes = candidates.map((c) => c.runCase(kase, registry));
    const plain = !usesMessages(test);
    const core = !EXTENSION_SECTIONS.has(section);
    const nobody = expected.kind === 'unsupported' || outcomes.every((o) => o.kind === 'unsupported');
    if (nobody) {
      const first = outcomes[0];
      const reason =
        expected.kind === 'unsupported' ? expected.reason : first?.kind === 'unsupported' ? first.reason : '';
      skippedForAll.push({ test: path, reason });
    }
    for (const [i, got] of outcomes.entries()) {
      const lib = libs[i]!;
      lib.sections[section] ??= zero();
      const sec = lib.sections[section];
      const reason = nobody ? undefined : judge(expected, got, registry, test.checkOnly);
      const key: keyof Tally = nobody ? 'skip' : reason === undefined ? 'pass' : 'fail';
      lib.total[key]++;
      sec[key]++;
      if (plain) lib.withoutMessages[key]++;
      if (core) lib.core[key]++;
      if (core && plain) lib.coreWithoutMessages[key]++;
      if (reason === undefined) continue;
      const kind = failureKind(reason);
      lib.failureKinds[kind] = (lib.failureKinds[kind] ?? 0) + 1;
      if (plain && core) lib.coreFailuresWithoutMessages.push(`${path}: ${reason}`.slice(0, 160));
    }
  }
  return {
    specPackage: '@bufbuild/cel-spec',
    specVersion: specVersion(),
    upstreamCelSpec: upstreamRef(),
    tests: tests.length,
    skippedForAll,
    libraries: libs,
  };
}

function specPackageJson(): { version: string; upstreamCelSpecRef?: string } {
  const url = new URL('./node_modules/@bufbuild/cel-spec/package.json', import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')) as { version: string; upstreamCelSpecRef?: string };
}
function specVersion(): string {
  return specPackageJson().version;
}
function upstreamRef(): string {
  return specPackageJson().upstreamCelSpecRef ?? 'unknown';
}

export function rate(t: Tally): number {
  const run = t.pass + t.fail;
  return run === 0 ? Number.NaN : t.pass / run;
}

if (import.meta.main) {
  const report = runConformance();
  console.log(`${report.tests} tests, ${report.skippedForAll.length} skipped for all`);
  for (const lib of report.libraries) {
    const pct = (t: Tally) => `${(rate(t) * 100).toFixed(1)}% (${t.pass}/${t.pass + t.fail})`;
    console.log(`${lib.name}@${lib.version}: total ${pct(lib.total)}, core ${pct(lib.core)}`);
    console.log(
      `  without messages ${pct(lib.withoutMessages)}, core without messages ${pct(lib.coreWithoutMessages)}`,
    );
    console.log('  failures by kind:', JSON.stringify(lib.failureKinds));
  }
}
