// config.customFunctions: the block's grammar and its errors (with the block's line), what a call
// means (arguments evaluated once, `this`, variadic lists, functions calling functions, the caller's
// variables and nothing else of it), and the whole path through a gateway: policies calling them, a
// body that reads request.body making the policy read it, reloads that change or break the block.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { celEnvironment, parseCustomFunctions, withCustomFunctions } from '@gw/api/cel/environment';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../config/load.ts';
import { celTrue, compileCel, useCelFunctions } from './cel.ts';

const BLOCK = `
# helpers shared by the policies below
isInternal() { request.headers["x-env"] == "internal" }
this.joined(prefix, parts...) { prefix + this + parts.join("") }
same(x) { x == x }
twice(x) { x + x }
shout(s) { twice(s) + "!" }   tag() { "}" + '{' }
multi(a, b) {
  a +
  b
}
model() { json(request.body).model }
shadow(request) { request + "?" }
`;

/** Evaluates `expr` with BLOCK's functions, over `ctx`. */
function run(expr: string, ctx: object = {}): unknown {
  const restore = useCelFunctions(BLOCK);
  try {
    return compileCel(expr).eval(ctx);
  } finally {
    restore();
  }
}

const problemsOf = (block: string) =>
  withCustomFunctions(
    celEnvironment({ Cidr: class {} as never, containsIP: () => false, random: Math.random }),
    block,
  ).problems.map((p) => `${p.line}: ${p.message}`);

describe('the block', () => {
  test('definitions one after another, on a line or over several; # comments; braces in strings', () => {
    const defs = parseCustomFunctions(BLOCK);
    assert.deepEqual(
      defs.map((d) => [d.name, d.receiver, d.params, d.variadic, d.line]),
      [
        ['isInternal', false, [], false, 3],
        ['joined', true, ['prefix', 'parts'], true, 4],
        ['same', false, ['x'], false, 5],
        ['twice', false, ['x'], false, 6],
        ['shout', false, ['s'], false, 7],
        ['tag', false, [], false, 7],
        ['multi', false, ['a', 'b'], false, 8],
        ['model', false, [], false, 12],
        ['shadow', false, ['request'], false, 13],
      ],
    );
    assert.equal(defs.find((d) => d.name === 'tag')?.body, `"}" + '{'`);
    assert.deepEqual(parseCustomFunctions('  \n# only a comment\n'), []);
    assert.deepEqual(problemsOf(BLOCK), []);
  });

  test('braces in // comments and in triple-quoted strings do not end a body', () => {
    const defs = parseCustomFunctions(`f() {
  // a } in a comment, and a quote: don't
  true
}
g() { """a"b}""" + '''c'd{''' }
h() { 1 }`);
    assert.deepEqual(
      defs.map((d) => [d.name, d.line, d.bodyLine]),
      [
        ['f', 1, 2],
        ['g', 5, 5],
        ['h', 6, 6],
      ],
    );
    assert.deepEqual(problemsOf(`f() {\n  // a } in a comment\n  true\n}`), []);
  });

  test('grammar errors name the line of the block', () => {
    const cases: [string, RegExp][] = [
      ['ok() { 1 }\n\nf(a) a', /^3: "f\(a\) a" has no \{ body \}/],
      ['f(a) { a } junk', /^1: "junk" has no \{ body \}/],
      ['f() { "{" ', /^1: "f\(\)": the body has no closing '\}'/],
      ['f { 1 }', /^1: "f" has no parameter list/],
      ['f(a { 1 }', /^1: "f\(a": the parameter list has no closing '\)'/],
      ['1f(a) { a }', /^1: the function name "1f" is not a name/],
      ['a.b(x) { x }', /^1: the function name "a.b" is not a name/],
      ['this.this() { 1 }', /^1: the function name cannot be 'this'/],
      ['f(this) { 1 }', /^1: f: a parameter name cannot be 'this'/],
      ['loop() { 1 }', /^1: the function name cannot be loop: a reserved word in CEL/],
      ['f(a,) { a }', /^1: f: a parameter name is empty/],
      ['f(a, a) { a }', /^1: f: the parameter a is named twice/],
      ['f(a..., b) { a }', /^1: f: a parameter after the variadic one \(name\.\.\.\) must be last/],
      ['f() {   }', /^1: f: the body is empty/],
    ];
    for (const [block, want] of cases) {
      const got = problemsOf(block);
      assert.equal(got.length, 1, `${block}: ${got.join('; ')}`);
      assert.match(got[0] as string, want, block);
    }
  });

  test('bodies are compiled when the block is read: each problem names its function and line', () => {
    assert.deepEqual(problemsOf('size(x) { 1 }'), [
      '1: size(x): size is a CEL function already; choose another name',
    ]);
    assert.deepEqual(problemsOf('f(x) { 1 }\nf(y) { 2 }'), ['2: f(y): f is defined more than once']);
    assert.deepEqual(problemsOf('r(x) { x > 0 ? r(x - 1) : 0 }'), [
      '1: r(x): a function cannot call itself (r → r)',
    ]);
    assert.deepEqual(problemsOf('a() { b() }\nok() { 1 }\nb() { [1].map(x, a()) }\nc() { b() }'), [
      '1: a(): a function cannot call itself (a → b → a)',
      '3: b(): a function cannot call itself (b → a → b)',
      '4: c(): it calls a function that calls itself (b → a → b)',
    ]);
    assert.deepEqual(problemsOf('f(string) { string }'), [
      "1: f(string): the parameter string hides CEL's string (a type); rename it",
    ]);
    // a name the body does not have: a parameter of another function, or a typo
    assert.match(problemsOf('f(a) { a + b }\ng(b) { f(b) }').join(), /^1: f\(a\): Unknown variable: b/);
    assert.match(
      problemsOf('f(a) { nope(a) }').join(),
      /^1: f\(a\): found no matching overload for 'nope\(dyn\)'/,
    );
    assert.match(problemsOf('f(a) {\n  a +\n}').join(), /^2: f\(a\): Unexpected token: EOF/);
    // a problem inside a body is at the block's line it is on, the snippet numbered so
    assert.deepEqual(problemsOf('\n\nf() {\n 1 +\n "x"\n}'), [
      '4: f(): no such overload: int + string\n\n>    4 | 1 +\n         ^',
    ]);
    // a call in a body that matches no declaration says how the function is declared
    assert.match(
      problemsOf('f(a) { a }\ng() { f() }').join(),
      /^2: g\(\): found no matching overload for 'f\(\)'[\s\S]*declared f\(a\)/,
    );
    // a body sees neither the caller's comprehension variables nor other functions' parameters
    assert.match(problemsOf('g(x) { [1].map(y, y + x + z) }').join(), /Unknown variable: z/);
  });
});

describe('calls', () => {
  test('globals, methods and variadic lists; a function calling another', () => {
    assert.equal(run('"a".joined("p", "q", "r")'), 'paqr');
    assert.equal(run('"a".joined("p")'), 'pa');
    assert.equal(run('shout("z")'), 'zz!');
    assert.equal(run('tag()'), '}{');
    assert.equal(run('multi("a", "b")'), 'ab');
    assert.deepEqual(run('[1, 2].map(x, twice(x))'), [2n, 4n]);
    assert.equal(run('twice(twice(3))'), 12n);
  });

  test('an argument is evaluated once, as a value', () => {
    // by name, random() would be evaluated twice and differ
    for (let i = 0; i < 5; i++) assert.equal(run('same(random())'), true);
  });

  test("the body sees the caller's variables; a parameter hides one of the same name", () => {
    const req = { request: { headers: { 'x-env': 'internal' }, body: Buffer.from('{"model":"m1"}') } };
    assert.equal(run('isInternal()', req), true);
    assert.equal(run('isInternal()', { request: { headers: { 'x-env': 'prod' } } }), false);
    assert.equal(run('model()', req), 'm1');
    assert.equal(run('shadow("s")', req), 's?');
    // an error in the body (a missing header) is the call's error: default() catches it
    assert.equal(run('isInternal()', { request: { headers: {} } }), undefined);
    assert.equal(run('default(isInternal(), "no header")', { request: { headers: {} } }), 'no header');
  });

  test("a function another calls sees the expression's variables, never its caller's parameters", () => {
    const block = `f(request) { g() }
g() { request.path }
h(secret) { k() }
k() { variables() }`;
    const restore = useCelFunctions(block);
    try {
      const ctx = { request: { path: '/real' } };
      // f's parameter named request does not reach g: g reads the request's own path
      assert.equal(compileCel('f({"path": "/spoofed"})').eval(ctx), '/real');
      const vars = compileCel('h("s3cret")').eval(ctx) as Record<string, unknown>;
      assert.deepEqual(Object.keys(vars).sort(), ['request']);
    } finally {
      restore();
    }
  });

  test('calls that multiply (each function calling the next twice) stop at a bound, not a hung worker', () => {
    const chain = Array.from({ length: 16 }, (_, i) =>
      i === 0 ? 'e0(x) { 1 }' : `e${i}(x) { e${i - 1}(x) + e${i - 1}(x) }`,
    ).join('\n');
    const restore = useCelFunctions(chain);
    try {
      // 2^12 calls: within the bound
      assert.equal(compileCel('e12(0)').eval({}), 4096n);
      // 2^15 calls: the evaluation fails (no value), at once
      const t0 = performance.now();
      assert.equal(compileCel('e15(0)').eval({}), undefined);
      assert.ok(performance.now() - t0 < 2000);
      // what e15 reads is worked out once per function, not once per call
      assert.equal(compileCel('e15(0)').reads('request', 'body'), false);
    } finally {
      restore();
    }
  });

  test('a call that matches no declaration is refused at compile time, with the declaration', () => {
    const restore = useCelFunctions(BLOCK);
    try {
      assert.throws(() => compileCel('joined("a")'), /declared x\.joined\(prefix, parts\.\.\.\)/);
      assert.throws(() => compileCel('"a".twice()'), /declared twice\(x\)/);
      assert.throws(() => compileCel('twice(1, 2)'), /found no matching overload for 'twice\(int, int\)'/);
    } finally {
      restore();
    }
    // without the block, the functions are unknown again
    assert.throws(() => compileCel('twice(1)'), /found no matching overload/);
  });

  test('what an expression reads includes what the functions it calls read', () => {
    const restore = useCelFunctions(BLOCK);
    try {
      assert.equal(compileCel('model() == "x"').reads('request', 'body'), true);
      assert.equal(compileCel('shout(model())').reads('request', 'body'), true);
      assert.equal(compileCel('isInternal()').reads('request', 'body'), false);
      assert.equal(
        celTrue(compileCel('isInternal()'), { request: { headers: { 'x-env': 'internal' } } }),
        true,
      );
    } finally {
      restore();
    }
  });
});

describe('through the gateway', () => {
  let up: TestServer;
  let proxy: TestProxy;
  const config = (block: string) => `config:
  customFunctions: |
${block
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: internal
      matches: [{path: {pathPrefix: /internal}}]
      policies:
        authorization:
          rules: ['isInternal()']
        transformations:
          request:
            set:
              x-label: 'request.path.joined("[", "]")'
              x-model: 'model()'
      backends: [{host: "127.0.0.1:${up.port}"}]
`;
  const send = (path: string, headers: Record<string, string> = {}, body?: string) =>
    request(`http://127.0.0.1:${proxy.port()}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers,
      ...(body === undefined ? {} : { body }),
    });
  const HELPERS = [
    'isInternal() { request.headers["x-env"] == "internal" }',
    'this.joined(prefix, parts...) { prefix + this + parts.join("") }',
    'model() { json(request.body).model }',
  ];

  before(async () => {
    up = await startUpstream('echo');
    proxy = await startProxy(config(HELPERS.join('\n')));
  });
  after(async () => {
    await proxy?.close();
    await up?.close();
  });

  test('an authorization rule and transformations call them; a body read in a function is read', async () => {
    const denied = await send('/internal/a', { 'x-env': 'prod' });
    assert.equal(denied.statusCode, 403);
    await denied.body.dump();
    const ok = await send(
      '/internal/a',
      { 'x-env': 'internal', 'content-type': 'application/json' },
      '{"model":"m7"}',
    );
    assert.equal(ok.statusCode, 200);
    const echoed = (await ok.body.json()) as { headers: Record<string, string>; body: string };
    assert.equal(echoed.headers['x-label'], '[/internal/a]');
    // model() reads request.body: the transformation buffered it (and passed it on unchanged)
    assert.equal(echoed.headers['x-model'], 'm7');
    assert.equal(echoed.body, '{"model":"m7"}');
  });

  test('a reload changes a function for every policy; a broken block keeps the running config', async () => {
    await proxy.reload(
      config([HELPERS[0]?.replace('"internal"', '"staging"'), ...HELPERS.slice(1)].join('\n')),
    );
    const now = await send('/internal/b', { 'x-env': 'staging' });
    assert.equal(now.statusCode, 200);
    await now.body.dump();
    await assert.rejects(
      proxy.reload(config(['isInternal() { request.headers["x-env"] == }', ...HELPERS.slice(1)].join('\n'))),
      (err: unknown) =>
        err instanceof ConfigError && /config\.customFunctions: line 1 of the block/.test(String(err)),
    );
    const still = await send('/internal/c', { 'x-env': 'staging' });
    assert.equal(still.statusCode, 200);
    await still.body.dump();
  });

  test('a metrics label calling a function follows the function across a reload', async () => {
    const withTier = (tier: string) => `config:
  customFunctions: 'tier() { "${tier}" }'
  metrics:
    fields:
      add: {tier: 'tier()'}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`;
    const p = await startProxy(withTier('gold'));
    try {
      const tiers = async () => {
        const r = await request(p.url('/m'));
        await r.body.dump();
        const m = (await p.metrics.registry.getMetricsAsJSON()).find((x) => x.name === 'gw_requests_total');
        return new Set(m?.values.map((v) => v.labels.tier));
      };
      assert.deepEqual(await tiers(), new Set(['gold']));
      await p.reload(withTier('silver'));
      assert.ok((await tiers()).has('silver'));
    } finally {
      await p.close();
    }
  });

  test('config errors: the block, and an expression calling a function it does not declare', () => {
    assert.throws(
      () =>
        loadConfigText(
          'c.yaml',
          'config:\n  customFunctions: |\n    f(x) { x }\n    g() { h() }\nbinds: []\n',
          process.cwd(),
        ),
      (err: unknown) =>
        err instanceof ConfigError &&
        /c\.yaml:2:\d+: config\.customFunctions: line 2 of the block: g\(\): found no matching overload for 'h\(\)'/.test(
          String(err),
        ),
    );
    assert.throws(
      () =>
        loadConfigText(
          'c.yaml',
          `config:\n  customFunctions: 'f(x) { x }'\nbinds:\n- port: 0\n  listeners:\n  - routes:\n    - policies:\n        authorization: {rules: ['f()']}\n      backends: [{host: "127.0.0.1:1"}]\n`,
          process.cwd(),
        ),
      (err: unknown) =>
        err instanceof ConfigError &&
        /rules\[0\]: invalid CEL expression: [\s\S]*declared f\(x\)/.test(String(err)),
    );
  });
});
