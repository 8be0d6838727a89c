import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modulesLoadedAfterEach } from '../routing/test-support.ts';
import { CelCompileError, celDurationMs, celTrue, compileCel } from './cel.ts';

test('request, source and jwt variables; a missing variable is no match, not an error', () => {
  const p = compileCel('request.headers["x-user"] == "alice" && request.path.startsWith("/admin")');
  assert.equal(celTrue(p, { request: { headers: { 'x-user': 'alice' }, path: '/admin/x' } }), true);
  assert.equal(celTrue(p, { request: { headers: {}, path: '/admin/x' } }), false);
  const j = compileCel('jwt.sub == "u1"');
  assert.equal(celTrue(j, {}), false);
  assert.equal(j.eval({}), undefined);
  assert.equal(celTrue(j, { jwt: { sub: 'u1' } }), true);
});

test('cidr().containsIP() on source.address, IPv4, IPv6 and mapped addresses', () => {
  const p = compileCel('cidr("10.0.0.0/8").containsIP(source.address)');
  assert.equal(celTrue(p, { source: { address: '10.1.2.3' } }), true);
  assert.equal(celTrue(p, { source: { address: '11.0.0.1' } }), false);
  assert.equal(celTrue(p, { source: { address: '::ffff:10.9.9.9' } }), true);
  assert.equal(
    celTrue(compileCel('cidr("::1/128").containsIP(source.address)'), { source: { address: '::1' } }),
    true,
  );
  assert.equal(
    celTrue(compileCel('cidr("bogus").containsIP(source.address)'), { source: { address: '1.1.1.1' } }),
    false,
  );
});

test('has(), duration(), random()', () => {
  assert.equal(
    celTrue(compileCel('has(request.headers.authorization)'), {
      request: { headers: { authorization: 'x' } },
    }),
    true,
  );
  assert.equal(celDurationMs(compileCel('duration("1m30s")').eval({})), 90_000);
  const r = compileCel('random() >= 0.0 && random() < 1.0');
  assert.equal(celTrue(r, {}), true);
});

test("default(value, fallback) (agentgateway's): the fallback for a missing key or a null, else the value", () => {
  const body = (json: string) => ({ request: { body: Buffer.from(json), headers: {} } });
  const tier = compileCel('default(json(request.body).metadata.tier, "economy")');
  assert.equal(tier.eval(body('{"metadata":{"tier":"premium"}}')), 'premium');
  assert.equal(tier.eval(body('{"metadata":{}}')), 'economy');
  assert.equal(tier.eval(body('{}')), 'economy');
  assert.equal(tier.eval(body('{"metadata":{"tier":null}}')), 'economy');
  const tokens = compileCel('default(json(request.body).max_tokens, 1024) > 4096');
  assert.equal(celTrue(tokens, body('{"max_tokens":8192}')), true);
  assert.equal(celTrue(tokens, body('{}')), false);
  assert.equal(compileCel('default(request.headers["x-team"], "none")').eval(body('{}')), 'none');
  // the fallback is evaluated only when needed, and may itself be an expression
  assert.equal(compileCel('default(1, 1 / 0)').eval({}), 1n);
  assert.throws(() => compileCel('default(1)'), /default/);
});

test("agentgateway's functions: encodings, digests, math, strings, maps and the coalesce and with macros", () => {
  const v = (e: string, ctx: Record<string, unknown> = {}) => compileCel(e).eval(ctx);
  assert.equal(v('base64.encode("hi?")'), 'aGk/');
  assert.equal(v('string(base64.decode("aGk/"))'), 'hi?');
  assert.equal(v('string(base64.decode("aGk"))'), 'hi', 'padding is optional');
  assert.equal(v('base64Encode(b"hi?")'), 'aGk/');
  assert.equal(v('sha256.encode("a")'), 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb');
  assert.equal(v('md5.encode("a")'), '0cc175b9c0f1b6a831c399e269772661');
  assert.equal(v('sha1.encode("a")'), '86f7e437faa5a7fce15d1ddcb9eaeaea377667b8');
  assert.equal(v('url.encode("a b/c!~*")'), 'a%20b%2Fc%21~%2A');
  assert.equal(v('url.decode("a%20b+c")'), 'a b+c');
  assert.equal(v('form.encode({"q": "a b", "n": 1})'), 'q=a+b&n=1');
  assert.deepEqual(v('form.decode("a=1&b=x+y&a=2")'), { a: ['1', '2'], b: 'x y' });
  assert.equal(
    v('url.encode(request.headers["x-cert"])', {
      request: { headers: { 'x-cert': '-----BEGIN CERT-----' } },
    }),
    '-----BEGIN%20CERT-----',
  );
  assert.equal(v('math.least(3, 1, 2)'), 1n);
  assert.equal(v('math.greatest([1.5, 2.5])'), 2.5);
  assert.equal(v('math.ceil(1.2)'), 2);
  assert.equal(v('math.abs(-4)'), 4n);
  assert.equal(v('"héllo".charAt(1)'), 'é');
  assert.equal(v('"a-b-c".replace("-", "+")'), 'a+b+c');
  assert.equal(v('"a-b-c".replace("-", "+", 1)'), 'a+b-c');
  assert.equal(v('"gpt-4o-2024-08-06".regexReplace("-(\\\\d{4})-.*$", " ($1)")'), 'gpt-4o (2024)');
  assert.equal(v('"a1b22c333".regexReplaceAll("[0-9]+", "#")'), 'a#b#c#');
  assert.equal(v('"a1b22c333".regexReplace("[0-9]+", "#")'), 'a#b22c333');
  assert.deepEqual(Object.fromEntries(v('{"a": 1, "b": 2}.merge({"b": 3})') as Map<string, bigint>), {
    a: 1n,
    b: 3n,
  });
  // string() of a duration, a timestamp and a type, as CEL writes them (agentgateway's do too)
  assert.equal(v('string(duration("90s"))'), '90s');
  assert.equal(v('string(duration("-1.5s"))'), '-1.5s');
  assert.equal(v('string(timestamp("2024-01-02T03:04:05Z"))'), '2024-01-02T03:04:05Z');
  assert.equal(v('string(timestamp("2024-01-02T03:04:05.120Z"))'), '2024-01-02T03:04:05.12Z');
  assert.equal(v('string(type(1)) + "/" + string(type("a"))'), 'int/string');
  assert.match(String(v('uuid()')), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(v('isIP("::1") && !isIP("example.com")'), true);
  const jwt = `x.${Buffer.from('{"sub":"u1"}').toString('base64url')}.y`;
  assert.equal(v(`unvalidatedJwtPayload("${jwt}").sub`), 'u1');
  // coalesce: the first that evaluates to something not null
  assert.equal(
    v('coalesce(request.headers["x-a"], request.headers["x-b"], "none")', {
      request: { headers: { 'x-b': 'b' } },
    }),
    'b',
  );
  assert.equal(v('coalesce(null, 1)'), 1n);
  // with: a name for a value used twice
  assert.equal(
    v('json(request.body).with(b, b.model + "/" + string(b.n))', {
      request: { body: Buffer.from('{"model":"m","n":2}') },
    }),
    'm/2',
  );
  // mapValues, filterKeys: a new map
  assert.deepEqual(Object.fromEntries(v('{"a": 1, "b": 2}.mapValues(x, x * 10)') as Map<string, bigint>), {
    a: 10n,
    b: 20n,
  });
  assert.equal(
    v('request.headers.filterKeys(k, k.startsWith("x-")).size()', {
      request: { headers: { 'x-a': '1', b: '2' } },
    }),
    1n,
  );
  assert.equal(v('{"a": 1}.filterKeys(k, 1)'), undefined, 'a predicate that is not a bool is an error');
  // ip(): an address value, Kubernetes CEL's
  assert.equal(v('ip("10.0.0.1").family() == 4 && ip("::1").family() == 6'), true);
  assert.equal(v('ip(source.address).isLoopback()', { source: { address: '::ffff:127.0.0.1' } }), true);
  assert.equal(v('ip("fe80::1").isLinkLocalUnicast() && ip("169.254.0.9").isLinkLocalUnicast()'), true);
  assert.equal(v('ip("ff02::1").isLinkLocalMulticast() && ip("224.0.0.251").isLinkLocalMulticast()'), true);
  assert.equal(v('ip("0.0.0.0").isUnspecified() && ip("::").isUnspecified()'), true);
  assert.equal(v('ip("10.1.2.3").isGlobalUnicast() && !ip("127.0.0.1").isGlobalUnicast()'), true);
  assert.equal(v('cidr("10.0.0.0/8").containsIP(ip("10.9.8.7"))'), true);
  assert.equal(v('string(ip("::ffff:1.2.3.4"))'), '1.2.3.4');
  assert.equal(v('ip("not an address")'), undefined);
  // cidr() methods: prefix length, address, network, containment
  assert.equal(v('cidr("10.1.2.3/8").prefixLength()'), 8n);
  assert.equal(v('string(cidr("10.1.2.3/8").masked())'), '10.0.0.0/8');
  assert.equal(v('string(cidr("2001:db8::1/32").masked())'), '2001:db8::/32');
  assert.equal(v('string(cidr("192.168.1.7/24").ip())'), '192.168.1.7');
  assert.equal(
    v('cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16") && !cidr("10.0.0.0/16").containsCIDR("10.0.0.0/8")'),
    true,
  );
  assert.equal(
    v(
      'cidr("2001:db8::/32").containsCIDR(cidr("2001:db8:1::/48")) && !cidr("10.0.0.0/8").containsCIDR("::/0")',
    ),
    true,
  );
  // fail(): an error, as any failed expression (no value)
  assert.equal(celTrue(compileCel('fail("no") == "x"'), {}), false);
});

test('compile errors name the problem; unknown variables and over-long expressions are rejected', () => {
  assert.throws(() => compileCel('request.path =='), CelCompileError);
  assert.throws(() => compileCel('nosuchvar == 1'), /Unknown variable: nosuchvar/);
  assert.throws(() => compileCel(`"${'a'.repeat(16384)}"`), /longer than 16384/);
});

test('the CEL library loads with the first expression compiled: a data plane given a config without CEL never loads it', () => {
  const route = (policies: string) =>
    `binds:\n- port: 0\n  listeners:\n  - routes:\n    - policies: ${policies}\n`;
  const [plain, cel] = modulesLoadedAfterEach([
    route('{directResponse: {status: 204}}'),
    route('{directResponse: {status: 200, bodyExpression: "request.path"}}'),
  ]).map((urls) => urls.some((u) => u.includes('cel-js')));
  assert.deepEqual({ plain, cel }, { plain: false, cel: true });
});
