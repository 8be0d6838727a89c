// transformations against a real echo upstream: what the upstream received and what the client got,
// header set/add/remove with pseudo-headers, body rewrites (and when a body is read at all), the
// conditional form, metadata, a backend's own transformation, the trace, and the config errors.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

let up: TestServer;
let proxy: TestProxy;

before(async () => {
  up = await startUpstream('echo', (req, res, echo) => {
    if (req.url?.startsWith('/text')) {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-internal': 'secret', 'content-length': 5 });
      res.end('hello');
      return;
    }
    if (req.url?.startsWith('/json')) {
      const body = JSON.stringify({ items: [1, 2, 3], next: 'abc' });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (req.url?.startsWith('/big')) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(4096, 97));
      return;
    }
    void echo;
  });
  const host = `127.0.0.1:${up.port}`;
  proxy = await startProxy(`frontendPolicies: {http: {maxBufferSize: 1024}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - name: headers
      matches: [{path: {pathPrefix: /headers}}]
      policies:
        transformations:
          request:
            add: {x-tag: "'added'", x-multi: "'two'"}
            set:
              x-path: request.path
              x-user: jwt.sub
              x-count: "string(size(request.headers))"
              ":path": "'/rewritten' + request.path + '?q=1'"
              ":method": "'PUT'"
              ":authority": "'api.example.com'"
            remove: [x-drop]
      backends: [{host: "${host}"}]
    - name: body
      matches: [{path: {pathPrefix: /body}}]
      policies:
        transformations:
          request:
            set: {x-model: "json(request.body).model"}
            body: "toJson({'model': 'gw-' + json(request.body).model, 'n': json(request.body).n + 1})"
      backends: [{host: "${host}"}]
    - name: fixed-body
      matches: [{path: {pathPrefix: /fixed}}]
      policies:
        transformations:
          request:
            set: {x-seen: "'yes'"}
            body: "'constant'"
      backends: [{host: "${host}"}]
    - name: response
      matches: [{path: {pathPrefix: /text}}]
      policies:
        transformations:
          response:
            set: {x-upper: "string(response.body) + '!'", ":status": "201"}
            remove: [x-internal]
            body: "'<' + string(response.body) + '>'"
      backends: [{host: "${host}"}]
    - name: json-response
      matches: [{path: {pathPrefix: /json}}]
      policies:
        transformations:
          response:
            body: "{'count': size(json(response.body).items), 'code': response.code}"
      backends: [{host: "${host}"}]
    - name: big-response
      matches: [{path: {pathPrefix: /big}}]
      policies:
        transformations:
          response: {body: "string(size(response.body))"}
      backends: [{host: "${host}"}]
    - name: conditional
      matches: [{path: {pathPrefix: /cond}}]
      policies:
        transformations:
          conditional:
          - condition: "request.headers['x-tier'] == 'gold'"
            request: {set: {x-route: "'gold'"}}
            response: {set: {x-answered: "'gold'"}}
          - request: {set: {x-route: "'default'"}}
      backends: [{host: "${host}"}]
    - name: metadata
      matches: [{path: {pathPrefix: /meta}}]
      policies:
        transformations:
          request:
            metadata: {tenant: "request.headers['x-tenant']", started: "request.path"}
            set: {x-tenant-seen: "metadata.tenant"}
          response:
            set: {x-tenant: "metadata.tenant + '@' + metadata.started"}
      backends: [{host: "${host}"}]
    - name: replace
      matches: [{path: {pathPrefix: /replace}}]
      policies:
        transformations:
          request:
            replace: "{'x-only': 'this', 'x-list': ['a', 'b'], 'x-num': 7}"
            add: {x-after: "string(size(request.headers))"}
      backends: [{host: "${host}"}]
    - name: layered
      matches: [{path: {pathPrefix: /layered}}]
      policies:
        transformations:
          request: {set: {x-route: "'route'"}}
          response: {set: {x-order: "response.headers['x-order'] + ',route'"}}
      backends:
      - host: "${host}"
        policies:
          transformations:
            request: {set: {x-backend: "request.headers['x-route'] + '+backend'"}}
            response: {set: {x-order: "'backend'"}}
`);
});
after(async () => {
  await proxy.close();
  await up.close();
});

async function send(
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | Readable } = {},
) {
  const r = await request(proxy.url(path), {
    method: (init.method ?? (init.body !== undefined ? 'POST' : 'GET')) as 'GET',
    headers: init.headers ?? {},
    body: init.body ?? null,
  });
  return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
}
const lastSeen = () => up.seen[up.seen.length - 1];

describe('request headers', () => {
  test('add, set and remove reach the upstream; pseudo-headers rewrite method, path and authority', async () => {
    const r = await send('/headers/a', { headers: { 'x-drop': 'gone', 'x-multi': 'one' } });
    assert.equal(r.status, 200);
    const seen = lastSeen();
    assert.equal(seen?.method, 'PUT');
    assert.equal(seen?.url, '/rewritten/headers/a?q=1');
    assert.equal(seen?.headers.host, 'api.example.com');
    assert.equal(seen?.headers['x-tag'], 'added');
    assert.equal(seen?.headers['x-multi'], 'one, two', 'add appends to what the client sent');
    assert.equal(seen?.headers['x-path'], '/headers/a');
    assert.equal(seen?.headers['x-drop'], undefined);
  });

  test('a header whose expression fails is removed, not passed on as the client sent it', async () => {
    await send('/headers/b', { headers: { 'x-user': 'admin' } });
    assert.equal(lastSeen()?.headers['x-user'], undefined, 'jwt.sub has no value without jwtAuth');
  });

  test('replace sets the whole header set (Host kept), add works on top of it', async () => {
    await send('/replace', { headers: { 'x-client': 'c' } });
    const h = lastSeen()?.headers ?? {};
    assert.equal(h['x-client'], undefined);
    assert.equal(h['x-only'], 'this');
    assert.equal(h['x-list'], 'a, b');
    assert.equal(h['x-num'], '7');
    // x-only, x-list, x-num and host: the add saw the replaced set
    assert.equal(h['x-after'], '4');
  });
});

describe('request body', () => {
  test('the body expression becomes the body, with its Content-Length; headers can read it too', async () => {
    const r = await send('/body', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'small', n: 41 }),
    });
    assert.equal(r.status, 200);
    const seen = lastSeen();
    assert.deepEqual(JSON.parse(seen?.body ?? ''), { model: 'gw-small', n: 42 });
    assert.equal(seen?.headers['content-length'], String(Buffer.byteLength(seen?.body ?? '')));
    assert.equal(seen?.headers['transfer-encoding'], undefined);
    assert.equal(seen?.headers['x-model'], 'small');
  });

  test('a body expression that fails: 500, and the access log says why', async () => {
    const before = up.seen.length;
    const r = await send('/body/broken', {
      headers: { 'content-type': 'application/json' },
      body: 'not json',
    });
    assert.equal(r.status, 500);
    assert.match(r.text, /the transformation body expression failed/);
    assert.equal(up.seen.length, before, 'nothing reached the upstream');
    const line = proxy.accessLog.findLast((l) => String(l['http.path']).startsWith('/body/broken'));
    // the client's reason, then the expression's own error
    assert.match(String(line?.error), /^the transformation body expression failed: .+/);
  });

  test('a chunked body is replaced too (the upstream gets a length, not chunks)', async () => {
    const r = await send('/fixed', { body: Readable.from([Buffer.from('a'), Buffer.from('b')]) });
    assert.equal(r.status, 200);
    assert.equal(lastSeen()?.body, 'constant');
    assert.equal(lastSeen()?.headers['content-length'], '8');
  });

  test('a body is read only when an expression reads it', async () => {
    // The limit is 1024 bytes: a body route refuses more, a route whose expressions do not name the
    // body streams it on, however large.
    const big = 'x'.repeat(5000);
    const refused = await send('/body', { body: big });
    assert.equal(refused.status, 413);
    assert.match(refused.text, /larger than the buffer limit \(1024 bytes\)/);
    const streamed = await send('/headers/stream', { method: 'POST', body: Readable.from([big]) });
    assert.equal(streamed.status, 200);
    assert.equal(lastSeen()?.body.length, 5000);
    // /fixed replaces the body without reading it: also no limit
    const replaced = await send('/fixed', { body: Readable.from([big]) });
    assert.equal(replaced.status, 200);
    assert.equal(lastSeen()?.body, 'constant');
  });
});

describe('response', () => {
  test('headers, :status and body of the response are rewritten; Content-Length follows the body', async () => {
    const r = await send('/text');
    assert.equal(r.status, 201);
    assert.equal(r.text, '<hello>');
    assert.equal(r.headers['content-length'], '7');
    assert.equal(r.headers['x-upper'], 'hello!');
    assert.equal(r.headers['x-internal'], undefined);
  });

  test('a body expression giving a map is sent as JSON', async () => {
    const r = await send('/json');
    assert.deepEqual(JSON.parse(r.text), { count: 3, code: 200 });
  });

  test('a response body over the buffer limit that an expression reads: 502', async () => {
    const r = await send('/big');
    assert.equal(r.status, 502);
    assert.match(r.text, /larger than the buffer limit/);
  });
});

describe('conditional form, metadata, backend transformations', () => {
  test('the first entry whose condition holds applies, on the request and on the response', async () => {
    const gold = await send('/cond', { headers: { 'x-tier': 'gold' } });
    assert.equal(lastSeen()?.headers['x-route'], 'gold');
    assert.equal(gold.headers['x-answered'], 'gold');
    const other = await send('/cond');
    assert.equal(lastSeen()?.headers['x-route'], 'default');
    assert.equal(other.headers['x-answered'], undefined);
  });

  test('metadata is set first and read by later expressions and by the response phase', async () => {
    const r = await send('/meta/x', { headers: { 'x-tenant': 'acme' } });
    assert.equal(lastSeen()?.headers['x-tenant-seen'], 'acme');
    assert.equal(r.headers['x-tenant'], 'acme@/meta/x');
  });

  test("a backend's transformation sees the route's request and answers first on the way back", async () => {
    const r = await send('/layered');
    assert.equal(lastSeen()?.headers['x-route'], 'route');
    assert.equal(lastSeen()?.headers['x-backend'], 'route+backend');
    assert.equal(r.headers['x-order'], 'backend,route');
  });

  test('the trace shows what each phase changed', async () => {
    const t = proxy.trace();
    await send('/text', { headers: { 'x-anything': '1' } });
    const events = (await t).map((e) => e.message).filter((m) => m.type === 'transformation');
    assert.deepEqual(events, [
      {
        type: 'transformation',
        phase: 'response',
        set: ['x-upper', ':status'],
        removed: ['x-internal'],
        body: 'rewritten',
        status: 201,
      },
    ]);
    const t2 = proxy.trace();
    await send('/headers/t', { headers: { 'x-drop': '1' } });
    const [req] = (await t2).map((e) => e.message).filter((m) => m.type === 'transformation');
    assert.deepEqual(req?.removed, ['x-drop']);
    assert.equal(req?.body, 'unchanged');
    assert.deepEqual(req?.added, ['x-tag', 'x-multi']);
  });
});

describe('transformations config', () => {
  const load = (policy: string, where: 'route' | 'backend' = 'route') =>
    loadConfigText(
      't.yaml',
      where === 'route'
        ? `binds: [{port: 8080, listeners: [{routes: [{policies: {transformations: ${policy}}, backends: [{host: "127.0.0.1:1"}]}]}]}]`
        : `binds: [{port: 8080, listeners: [{routes: [{backends: [{host: "127.0.0.1:1", policies: {transformations: ${policy}}}]}]}]}]`,
      process.cwd(),
    );
  const rejects = (fn: () => unknown, re: RegExp) =>
    assert.throws(fn, (e: unknown) => e instanceof ConfigError && re.test(e.message), String(re));

  test("agentgateway's shape loads: null sides and fields, the conditional form, on a backend", () => {
    load(
      '{request: {set: {a: "1"}, add: {}, remove: [], replace: null, body: null, metadata: {}}, response: null}',
    );
    load('{conditional: [{condition: "true", request: {set: {a: \'"1"\'}}}, {response: {body: "null"}}]}');
    load('{request: {body: "\'x\'"}}', 'backend');
  });

  test('an expression that does not compile is an error naming its field', () => {
    rejects(
      () => load('{request: {set: {x-a: "request.path +"}}}'),
      /routes\[0\]\.policies\.transformations\.request\.set\.x-a: invalid CEL expression: Unexpected token: EOF/,
    );
    rejects(
      () => load('{response: {body: "nosuch.x"}}', 'backend'),
      /policies\.transformations\.response\.body: invalid CEL expression.*Unknown variable: nosuch/s,
    );
  });

  test('header names: no invalid names, no unknown pseudo-headers, no removing a pseudo-header', () => {
    rejects(
      () => load('{request: {set: {"bad name": "1"}}}'),
      /set\["bad name"\]: invalid header name "bad name"/,
    );
    rejects(() => load('{request: {add: {":nope": "1"}}}'), /invalid header name ":nope"/);
    rejects(
      () => load('{request: {remove: [":path"]}}'),
      /remove\[0\]: pseudo-header :path cannot be removed/,
    );
  });

  test('the conditional form: only the last entry may go without a condition; no conditional on a backend', () => {
    rejects(
      () => load('{conditional: [{request: {set: {a: "1"}}}, {condition: "true"}]}'),
      /transformations\.conditional\[0\]: only the last entry may leave out condition/,
    );
    rejects(() => load('{conditional: [{condition: "true"}]}', 'backend'), /policies\.transformations/);
  });

  test('on a gateway: its own field without listeners, on each listener with them', () => {
    const gw = (body: string) =>
      loadConfigText(
        't.yaml',
        `gateways: {default: {port: 8080, ${body}}}\nroutes: [{backends: [{host: "127.0.0.1:1"}]}]`,
        process.cwd(),
      );
    const ir = gw('transformations: {request: {set: {x-gw: "\'1\'"}}}');
    const route = ir.ir.binds[0]?.listeners[0]?.routes[0];
    assert.ok(route?.policies.transformations, 'the gateway transformation reaches its routes');
    gw('listeners: [{name: a, transformations: {response: {remove: [server]}}}]');
    rejects(
      () => gw('transformations: {request: {}}, listeners: [{name: a}]'),
      /gateways\.default\.transformations: transformations belongs on each listener/,
    );
    rejects(
      () => gw('transformations: {request: {set: {x: "1 +"}}}'),
      /gateways\.default\.transformations\.request\.set\.x: invalid CEL/,
    );
  });
});
