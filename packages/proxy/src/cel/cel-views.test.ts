// agentgateway's views in CEL: header maps with methods (redacted, join, raw, split, cookie), query
// accessors on URL strings, request.uri, variables() and flatten() / flattenRecursive() in the access log.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { celHeaderMap, setCelField } from '@gw/api/runtime';
import { httpGet, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy } from '@gw/testkit/proxy';
import { type CelContext, celToJson, compileCel } from './cel.ts';

/** A request as the proxy shows it: `x-m` sent twice (Node joins it), a cookie, a credential. */
function ctx(): CelContext {
  const headers = { 'x-m': '1, 2', cookie: 'a=1; session=abc', authorization: 'Bearer sk', accept: '*/*' };
  const received = { headersDistinct: { 'x-m': ['1', '2'], cookie: ['a=1; session=abc'] } };
  return {
    request: {
      path: '/api/test',
      pathAndQuery: '/api/test?foo=bar&foo=baz&x=a%20b',
      uri: 'http://example.com/api/test?foo=bar&foo=baz&x=a%20b',
      headers: celHeaderMap(headers, 'example.com', received),
    },
  };
}

const v = (src: string) => celToJson(compileCel(src).eval(ctx()));
const fails = (src: string) => assert.equal(compileCel(src).eval(ctx()), undefined, src);

test('header views: a lookup is one string; redacted(), join(), raw(), split() and cookie() as agentgateway has them', () => {
  assert.equal(v('request.headers["x-m"]'), '1, 2');
  assert.equal(v('request.headers.host'), 'example.com');
  // the entries as received: Node's join of the repeated header undone
  assert.deepEqual(v('request.headers.raw()["x-m"]'), ['1', '2']);
  assert.equal(v('request.headers.join()["x-m"]'), '1,2');
  assert.deepEqual(v('request.headers.split()["x-m"]'), ['1', '2']);
  assert.deepEqual(v('request.headers.split()["cookie"]'), ['a=1; session=abc']);
  // the credentials gw's traces hide: authorization, proxy-authorization, cookie, set-cookie, x-api-key
  assert.equal(v('request.headers.redacted().authorization'), '<redacted>');
  assert.equal(v('request.headers.redacted().accept'), '*/*');
  // redacted() combines with the others, either way round
  assert.deepEqual(v('request.headers.redacted().raw()["cookie"]'), ['<redacted>']);
  assert.deepEqual(v('request.headers.raw().redacted()["authorization"]'), ['<redacted>']);
  assert.deepEqual(v('request.headers.redacted().split()["x-m"]'), ['1', '2']);
  assert.equal(v('request.headers.cookie("session")'), 'abc');
  assert.equal(v('request.headers.cookie("a")'), '1');
  // a missing cookie is an error, as a missing key is: default() gives the fallback
  fails('request.headers.cookie("nope")');
  assert.equal(v('default(request.headers.cookie("nope"), "none")'), 'none');
  // a map the expression built works too (its values are the entries)
  assert.deepEqual(v('{"k": "a, b"}.split()'), { k: ['a', 'b'] });
});

test('header names in any case find the header; the map itself keeps lower-case keys', () => {
  assert.equal(v('request.headers["X-M"]'), '1, 2');
  assert.equal(v('request.headers["Accept"] == "*/*"'), true);
  assert.equal(v('"ACCEPT" in request.headers'), true);
  assert.equal(v('has(request.headers.accept)'), true);
  fails('request.headers["X-Nope"]');
  assert.equal(v('"X-Nope" in request.headers'), false);
  assert.deepEqual(Object.keys(v('request.headers') as object).sort(), [
    'accept',
    'authorization',
    'cookie',
    'host',
    'x-m',
  ]);
  assert.deepEqual(v('request.headers.raw()["X-M"]'), ['1', '2']);
});

test('query accessors on request.pathAndQuery and request.uri: query(), addQuery(), setQuery()', () => {
  assert.deepEqual(v('request.pathAndQuery.query("foo")'), ['bar', 'baz']);
  assert.deepEqual(v('request.uri.query("x")'), ['a b']);
  fails('request.pathAndQuery.query("missing")');
  assert.equal(v('request.pathAndQuery.addQuery("foo", "q z")'), '/api/test?foo=bar&foo=baz&x=a%20b&foo=q+z');
  // the other parameters stay as written, in their order
  assert.equal(v('request.pathAndQuery.setQuery("foo", "q")'), '/api/test?x=a%20b&foo=q');
  assert.equal(
    v('request.uri.setQuery("new", "1")'),
    'http://example.com/api/test?foo=bar&foo=baz&x=a%20b&new=1',
  );
  assert.equal(v('"/p".addQuery("a", "1")'), '/p?a=1');
  assert.equal(v('"/p?a=1#frag".setQuery("a", "2")'), '/p?a=2#frag');
  // still strings
  assert.equal(v('request.pathAndQuery.startsWith("/api")'), true);
});

test('variables(): every variable of the evaluation as one map', () => {
  assert.equal(v('variables().request.path'), '/api/test');
  assert.equal(v('size(variables())'), 1);
  assert.equal(v('"request" in variables() && !("jwt" in variables())'), true);
});

test('flatten() and flattenRecursive(): one record field per entry; elsewhere the value itself', () => {
  const rec: Record<string, unknown> = {};
  setCelField(rec, 'h', compileCel('flatten(request.headers.redacted())').eval(ctx()));
  assert.deepEqual(rec, {
    'h.x-m': '1, 2',
    'h.cookie': '<redacted>',
    'h.authorization': '<redacted>',
    'h.accept': '*/*',
    'h.host': 'example.com',
  });
  const nested = '{"a": {"b": 1, "c": [true, "x"]}, "d": "e"}';
  const one: Record<string, unknown> = {};
  setCelField(one, 'n', compileCel(`flatten(${nested})`).eval({}));
  assert.deepEqual(one, { 'n.a': { b: 1, c: [true, 'x'] }, 'n.d': 'e' });
  const all: Record<string, unknown> = {};
  setCelField(all, 'n', compileCel(`flattenRecursive(${nested})`).eval({}));
  assert.deepEqual(all, { 'n.a.b': 1, 'n.a.c.0': true, 'n.a.c.1': 'x', 'n.d': 'e' });
  assert.equal(v('toJson(flatten({"a": 1}))'), '{"a":1}');
});

describe('through the proxy', () => {
  let up: TestServer;
  before(async () => {
    up = await startUpstream('echo');
  });
  after(() => up.close());

  test('the access log flattens redacted headers; request.uri, query() and cookie() in a response header', async () => {
    const p = await startProxy(`frontendPolicies:
  accessLog:
    add:
      headers: 'flatten(request.headers.redacted())'
      repeated: 'request.headers.raw()["x-m"]'
      foo: 'request.pathAndQuery.query("foo")'
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
      policies:
        transformations:
          response:
            set:
              x-uri: 'request.uri'
              x-session: 'request.headers.cookie("session")'
              x-next: 'request.pathAndQuery.setQuery("page", "2")'
`);
    try {
      const r = await httpGet(p.port(), '/list?foo=a&foo=b', {
        headers: {
          authorization: 'Bearer sk-secret',
          cookie: 'session=s1; theme=dark',
          // sent as two header lines
          'x-m': ['1', '2'] as unknown as string,
        },
      });
      assert.equal(r.status, 200);
      assert.equal(r.headers['x-uri'], `http://127.0.0.1:${p.port()}/list?foo=a&foo=b`);
      assert.equal(r.headers['x-session'], 's1');
      assert.equal(r.headers['x-next'], '/list?foo=a&foo=b&page=2');
      await new Promise((done) => setTimeout(done, 50));
      const line = p.accessLog.find((l) => l['http.path'] === '/list?foo=a&foo=b');
      assert.ok(line, JSON.stringify(p.accessLog));
      assert.equal(line['headers.authorization'], '<redacted>');
      assert.equal(line['headers.cookie'], '<redacted>');
      assert.equal(line['headers.x-m'], '1, 2');
      assert.equal(line['headers.host'], `127.0.0.1:${p.port()}`);
      assert.ok(!('headers' in line), 'the flattened field itself is not written');
      assert.deepEqual(line.repeated, ['1', '2']);
      assert.deepEqual(line.foo, ['a', 'b']);
      assert.ok(!JSON.stringify(line).includes('sk-secret'));
    } finally {
      await p.close();
    }
  });
});
