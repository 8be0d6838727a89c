// hack/compat.ts: the comparison on small schema pairs, one per verdict and per way a schema can say
// the same thing (refs, oneOf, nullable, maps, arrays), so its logic is checked without the real
// schemas; then the script itself on the real files, when the reference is beside the checkout.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { applySpecMandated, compareCrds, DEFAULT_REFERENCE, main } from './compat.ts';
import {
  type Comparison,
  compareSchemas,
  hasDifferences,
  type Json,
  splitPath,
  summaryLine,
} from './compat-compare.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const obj = (properties: Json, extra: Json = {}): Json => ({
  type: 'object',
  properties,
  additionalProperties: false,
  ...extra,
});
const str: Json = { type: 'string' };
const NOT_YET = { description: 'oidc is not supported by this build of gw yet' };

const config = (ref: Json, gw: Json) => compareSchemas(ref, gw, { mode: 'config' });
const crd = (ref: Json, gw: Json) => compareSchemas(ref, gw, { mode: 'crd', path: 'spec' });
/** path → verdict, and path → reasons joined. */
const verdicts = (c: Comparison) => Object.fromEntries(c.findings.map((f) => [f.path, f.verdict]));
const why = (c: Comparison, path: string) =>
  c.findings.find((f) => f.path === path)?.reasons.join('; ') ?? '';

describe('config verdicts', () => {
  test('forms and values gw refuses by name beside those it takes are not supported, not different', () => {
    const refused = (v: Json) => ({ ...v, description: 'copilot is not supported by this build of gw yet' });
    const ref = obj({
      auth: { anyOf: [obj({ key: str }), { type: 'string', const: 'copilot' }] },
      protocol: { type: 'string', enum: ['HTTP', 'TCP'] },
      version: { type: 'string', enum: ['V2', 'V1'] },
    });
    const gw = obj({
      auth: { anyOf: [obj({ key: str }), refused({ type: 'string', enum: ['copilot'] })] },
      protocol: { anyOf: [{ type: 'string', enum: ['HTTP'] }, refused({ type: 'string', enum: ['TCP'] })] },
      version: { type: 'string', enum: ['V2'] },
    });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), {
      auth: 'not supported',
      'auth.key': 'same',
      protocol: 'not supported',
      version: 'different',
    });
    // only the refused form is unsupported: nothing below it is counted
    assert.equal(c.findings.find((f) => f.path === 'auth')?.below, undefined);
  });

  test('same, missing, not supported and different, each at its own path', () => {
    const ref = obj({
      name: str,
      port: { type: 'integer' },
      oidc: obj({ issuer: str, clientId: str }),
      tracing: obj({ endpoint: str, fields: obj({ add: str }) }),
    });
    const gw = obj({ name: str, port: str, oidc: NOT_YET });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), {
      name: 'same',
      port: 'different',
      oidc: 'not supported',
      tracing: 'missing',
    });
    assert.match(why(c, 'port'), /the reference accepts integer, gw only string/);
    assert.match(why(c, 'oidc'), /oidc is not supported by this build/);
    // the fields below a missing or unsupported one are counted there, not listed
    assert.equal(c.findings.find((f) => f.path === 'tracing')?.below, 3);
    assert.equal(c.findings.find((f) => f.path === 'oidc')?.below, 2);
    assert.equal(summaryLine('config', c), 'config: 1 same, 1 not supported, 1 missing, 1 different');
    assert.equal(hasDifferences(c), true);
  });

  test('gw may take more numbers and more enum values, in any case; not fewer', () => {
    const ref = obj({
      ratio: { type: 'integer' },
      mode: { type: 'string', enum: ['Static', 'DynamicCa'] },
      proto: { type: 'string', enum: ['grpc', 'http'] },
      level: { type: 'string' },
    });
    const gw = obj({
      ratio: { type: 'number' },
      mode: { type: 'string', enum: ['static', 'dynamicca', 'other'] },
      proto: { anyOf: [{ const: 'grpc' }, { type: 'string', enum: ['tcp'] }] },
      level: { type: 'string', enum: ['info', 'debug'] },
    });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), { ratio: 'same', mode: 'same', proto: 'different', level: 'different' });
    assert.equal(why(c, 'proto'), 'gw lacks the value(s) http');
    assert.equal(why(c, 'level'), 'the reference accepts any string, gw only info, debug');
  });

  test('a field gw requires where the reference does not is a difference; the other way round is not', () => {
    const ref = obj({ a: str, b: str }, { required: ['b'] });
    const gw = obj({ a: str, b: str }, { required: ['a'] });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), { a: 'different', b: 'same' });
    assert.equal(why(c, 'a'), 'required by gw, optional in the reference');
  });

  test("an object the reference's schema leaves open (any keys, none described): gw's fields are its own, not differences", () => {
    const ref = obj({ services: { type: 'array', items: { type: 'object', additionalProperties: true } } });
    const gw = obj({
      services: { type: 'array', items: obj({ name: str, port: str }, { required: ['name'] }) },
    });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), { services: 'same' });
    assert.deepEqual(
      c.gwOnly.map((g) => g.path),
      ['services[].name', 'services[].port'],
    );
  });

  test('$refs resolve, and oneOf alternatives are matched to the gw alternative sharing their fields', () => {
    const ref: Json = {
      type: 'object',
      additionalProperties: false,
      properties: { target: { $ref: '#/$defs/Target' } },
      $defs: {
        Target: {
          type: 'object',
          properties: { timeout: { $ref: '#/$defs/Duration' } },
          unevaluatedProperties: false,
          oneOf: [
            { type: 'object', properties: { host: str }, required: ['host'] },
            { type: 'object', properties: { service: obj({ name: str }) }, required: ['service'] },
          ],
        },
        Duration: str,
      },
    };
    // gw writes the same as a union of complete objects; it has no service form
    const gw = obj({
      target: { anyOf: [obj({ host: str, timeout: str }, { required: ['host'] })] },
    });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), {
      target: 'same',
      'target.host': 'same',
      'target.service': 'missing',
      'target.timeout': 'same',
    });
    // host is required by gw's only form, but another alternative of the reference has it: not "unknown"
    assert.equal(why(c, 'target.host'), '');
  });

  test('a scalar alternative gw lacks is a difference; serde\'s "invalid" alternative is not one', () => {
    const ref = obj({
      auth: { oneOf: [{ type: 'string', const: 'copilot' }, obj({ key: str }, { required: ['key'] })] },
      path: { oneOf: [{ type: 'string', enum: ['invalid'] }, obj({ exact: str }, { required: ['exact'] })] },
    });
    const gw = obj({ auth: obj({ key: str }), path: obj({ exact: str }) });
    const c = config(ref, gw);
    assert.equal(verdicts(c)['auth'], 'different');
    assert.equal(why(c, 'auth'), 'the reference accepts string, gw only object');
    assert.equal(verdicts(c)['path'], 'same');
  });

  test('nullable fields: type lists and anyOf with null compare as their non-null type', () => {
    const ref = obj({
      a: { type: ['string', 'null'] },
      b: { anyOf: [{ $ref: '#/$defs/B' }, { type: 'null' }], default: null },
      c: { type: ['integer', 'null'] },
    });
    ref['$defs'] = { B: obj({ x: str }) };
    const gw = obj({ a: str, b: obj({ x: { type: ['string', 'null'] } }), c: str });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), { a: 'same', b: 'same', 'b.x': 'same', c: 'different' });
  });

  test('maps compare their values at `.*`; a map where gw has fixed keys is a difference', () => {
    const ref = obj({
      headers: { type: 'object', additionalProperties: { type: 'string' } },
      backends: { type: 'object', additionalProperties: obj({ host: str, weight: { type: 'integer' } }) },
      labels: { type: 'object', additionalProperties: str },
    });
    const gw = obj({
      headers: { type: 'object', propertyNames: { minLength: 1 }, additionalProperties: { type: 'integer' } },
      backends: { type: 'object', additionalProperties: obj({ host: str }) },
      labels: obj({ app: str }),
    });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), {
      headers: 'different',
      backends: 'same',
      'backends.*.host': 'same',
      'backends.*.weight': 'missing',
      labels: 'different',
    });
    assert.equal(why(c, 'headers'), 'values: the reference accepts string, gw only integer');
    assert.equal(why(c, 'labels'), 'the reference is a map with any keys, gw takes only app');
  });

  test('arrays: item fields at `[]`, an item type mismatch on the list itself', () => {
    const ref = obj({
      listeners: { type: 'array', items: obj({ name: str, port: { type: 'integer' } }) },
      names: { type: 'array', items: str },
    });
    const gw = obj({
      listeners: { type: 'array', items: obj({ name: str }) },
      names: { type: 'array', items: { type: 'integer' } },
    });
    const c = config(ref, gw);
    assert.deepEqual(verdicts(c), {
      listeners: 'same',
      'listeners[].name': 'same',
      'listeners[].port': 'missing',
      names: 'different',
    });
    assert.equal(why(c, 'names'), 'items: the reference accepts string, gw only integer');
  });

  test('a recursive definition is compared at its first occurrence on a path, and the walk ends', () => {
    const ref: Json = {
      $ref: '#/$defs/Rule',
      $defs: { Rule: obj({ allow: str, and: { type: 'array', items: { $ref: '#/$defs/Rule' } } }) },
    };
    // gw inlines a few levels of the same
    const level = (inner: Json | undefined): Json =>
      obj({ allow: str, ...(inner ? { and: { type: 'array', items: inner } } : {}) });
    const c = config(ref, level(level(level(undefined))));
    assert.deepEqual(verdicts(c), { allow: 'same', and: 'same' });
    // compared there, a difference shows once, at the outer level
    const d = config(ref, level(undefined));
    assert.deepEqual(verdicts(d), { allow: 'same', and: 'missing' });
  });

  test('gw-only fields are listed apart; one gw requires is a difference', () => {
    const c = config(obj({ a: str }), obj({ a: str, extra: str, must: str }, { required: ['must'] }));
    assert.deepEqual(
      c.gwOnly.map((o) => o.path),
      ['extra'],
    );
    assert.equal(verdicts(c)['must'], 'different');
    assert.equal(why(c, 'must'), 'required by gw, unknown to the reference');
  });

  test('gw accepting any value (an empty schema without the NotYet marker) is the same', () => {
    const c = config(obj({ metadata: obj({ a: str }) }), obj({ metadata: {} }));
    assert.deepEqual(verdicts(c), { metadata: 'same' });
  });

  test('a field of an open (non-strict) gw object that gw does not define is missing: it would be ignored', () => {
    const c = config(obj({ a: str, b: str }), { type: 'object', properties: { a: str } });
    assert.deepEqual(verdicts(c), { a: 'same', b: 'missing' });
    assert.match(why(c, 'b'), /does not read it/);
  });
});

describe('CRD verdicts', () => {
  test('different type, different limits, same; descriptions are noted, not counted', () => {
    const ref = obj({
      name: { type: 'string', maxLength: 253, description: 'The name.' },
      size: { 'x-kubernetes-int-or-string': true, pattern: '^[0-9]+$' },
      mode: { type: 'string', enum: ['Strict', 'Permissive'] },
      header: { type: 'string', pattern: '^[A-Za-z\\x60]+$' },
      count: { type: 'integer', minimum: 1, default: 3 },
    });
    const gw = obj({
      name: { type: 'string', maxLength: 63, description: 'The object name.' },
      size: { type: 'string', pattern: '^[0-9]+$' },
      mode: { type: 'string', enum: ['strict', 'Permissive', 'Off'] },
      header: { type: 'string', pattern: '^[A-Za-z`]+$' },
      count: { type: 'integer', minimum: 1, default: 3 },
    });
    const c = crd(ref, gw);
    assert.deepEqual(verdicts(c), {
      spec: 'same',
      'spec.name': 'different limits',
      'spec.size': 'different type',
      'spec.mode': 'different limits',
      'spec.header': 'same',
      'spec.count': 'same',
    });
    assert.equal(why(c, 'spec.name'), 'maxLength: reference 253, gw 63 (gw stricter)');
    assert.match(why(c, 'spec.size'), /the reference accepts integer, gw only string/);
    // the API server compares enum values exactly
    assert.equal(
      why(c, 'spec.mode'),
      'gw lacks the value(s) Strict; gw also accepts strict, Off (gw looser)',
    );
    assert.deepEqual(
      c.descriptions.map((d) => d.path),
      ['spec.name'],
    );
    assert.equal(summaryLine('crds', c), 'crds: 3 same, 0 missing, 1 different type, 2 different limits');
  });

  test('a field gw does not define is missing (the API server prunes it), not accepted and ignored', () => {
    const c = crd(obj({ a: str, b: str }), { type: 'object', properties: { a: str } });
    assert.deepEqual(verdicts(c), { spec: 'same', 'spec.a': 'same', 'spec.b': 'missing' });
    assert.equal(why(c, 'spec.b'), '');
  });

  test('a preserve-unknown-fields object in gw takes anything below it', () => {
    const c = crd(
      obj({ raw: obj({ a: str }) }),
      obj({ raw: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }),
    );
    assert.deepEqual(verdicts(c), { spec: 'same', 'spec.raw': 'same' });
  });
});

test('an allow-listed difference the spec mandates is counted apart, with its reason; others stay', () => {
  const c = crd(
    obj({ guard: obj({ matches: { type: 'array', items: str } }), other: { type: 'array', items: str } }),
    obj({
      guard: obj({ matches: { type: 'array', items: obj({ pattern: str }) } }),
      other: { type: 'array', items: obj({ pattern: str }) },
    }),
  );
  const list = [{ tail: 'guard.matches', verdict: 'different type' as const, reason: 'objects by the spec' }];
  const findings = applySpecMandated(c.findings, list);
  assert.deepEqual(verdicts({ ...c, findings }), {
    spec: 'same',
    'spec.guard': 'same',
    'spec.guard.matches': 'spec-mandated',
    'spec.other': 'different type',
  });
  assert.match(why({ ...c, findings }, 'spec.guard.matches'), /^spec: objects by the spec; items: /);
  assert.equal(
    summaryLine('crds', { ...c, findings }),
    'crds: 2 same, 1 spec-mandated, 0 missing, 1 different type, 0 different limits',
  );
  // a limit difference at the same path is not what the entry allows: it stays a difference
  const limits = applySpecMandated(
    [{ path: 'spec.guard.matches', verdict: 'different limits', reasons: [] }],
    list,
  );
  assert.equal(limits[0]?.verdict, 'different limits');
  assert.ok(!hasDifferences({ findings: findings.filter((f) => f.path !== 'spec.other') }));
});

test('splitPath groups a difference by the policy it belongs to', () => {
  assert.deepEqual(splitPath('binds[].listeners[].routes[].policies.extAuthz.protocol'), {
    area: 'policies.extAuthz',
    tail: 'extAuthz.protocol',
  });
  assert.deepEqual(splitPath('policies[].policy.jwtAuth.jwks'), {
    area: 'policies.jwtAuth',
    tail: 'jwtAuth.jwks',
  });
  assert.deepEqual(splitPath('config.tracing.fields'), {
    area: 'config.tracing',
    tail: 'config.tracing.fields',
  });
});

test('without the reference folder the script says it skipped and exits 0', (t) => {
  const logs: string[] = [];
  t.mock.method(console, 'log', (s: string) => logs.push(s));
  assert.equal(main(['--reference', join(root, 'no-such-reference'), '--fail-on-different']), 0);
  assert.match(logs.join('\n'), /does not exist; agentgateway comparison skipped/);
});

describe('on the real schemas', {
  skip: !existsSync(DEFAULT_REFERENCE) && 'no reference beside the checkout',
}, () => {
  const run = (...args: string[]) => {
    const r = spawnSync(process.execPath, [join(root, 'hack/compat.ts'), ...args], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    assert.equal(r.stderr, '');
    return r;
  };

  test('config --summary ends with the line for the issue, and NotYet fields count as not supported', () => {
    const r = run('--summary');
    assert.equal(r.status, 0);
    const last = r.stdout.trim().split('\n').at(-1) ?? '';
    const m = /^config: (\d+) same, (\d+) not supported, (\d+) missing, (\d+) different$/.exec(last);
    assert.ok(m, last);
    assert.ok(Number(m[1]) > 0 && Number(m[2]) > 0, last);
    const json = JSON.parse(run('--json').stdout) as Comparison & { summary: string };
    assert.equal(json.summary, last);
    // config.database is refused by name (CONFIG_NOT_BUILT_KEYS in schema.ts); the top-level mcp is built
    assert.equal(json.findings.find((f) => f.path === 'config.database')?.verdict, 'not supported');
    assert.equal(json.findings.find((f) => f.path === 'mcp')?.verdict, 'same');
    assert.equal(run('--fail-on-different').status, hasDifferences(json) ? 1 : 0);
  });

  test('--crds --summary ends with the line for the issue', () => {
    const r = run('--crds', '--summary');
    assert.equal(r.status, 0);
    const last = r.stdout.trim().split('\n').at(-1) ?? '';
    assert.match(
      last,
      /^crds: \d+ same, (\d+ not supported, )?(\d+ spec-mandated, )?\d+ missing, \d+ different type, \d+ different limits$/,
    );
    assert.match(r.stdout, /== AgentgatewayPolicy ↔ GwPolicy/);
  });

  test("the regex guard's matches (objects by the spec) are spec-mandated in every kind that has them", () => {
    const mandated = compareCrds(DEFAULT_REFERENCE).flatMap((k) =>
      k.findings.filter((f) => f.path.endsWith('regex.matches')).map((f) => [k.gw, f.verdict]),
    );
    assert.ok(mandated.length >= 6, JSON.stringify(mandated));
    assert.ok(
      mandated.every(([, v]) => v === 'spec-mandated'),
      JSON.stringify(mandated),
    );
  });
});
