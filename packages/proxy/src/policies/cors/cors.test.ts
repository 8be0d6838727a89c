import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CLOSED_PORT, oneRoute, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

let up: TestServer;
let proxy: TestProxy;
before(async () => {
  up = await startUpstream();
  proxy = await startProxy(
    oneRoute(
      up.port,
      `cors:
  allowOrigins: ["https://app.example.com", "https://*.trusted.dev"]
  allowMethods: [GET, POST]
  allowHeaders: [x-custom]
  exposeHeaders: [x-upstream]
  allowCredentials: true
  maxAge: 10m`,
    ),
  );
});
after(async () => {
  await proxy.close();
  await up.close();
});

test('a preflight from an allowed origin is answered by the gateway', async () => {
  const before = up.seen.length;
  const res = await fetch(proxy.url('/x'), {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
  assert.equal(res.headers.get('access-control-allow-methods'), 'GET, POST');
  assert.equal(res.headers.get('access-control-allow-headers'), 'x-custom');
  assert.equal(res.headers.get('access-control-max-age'), '600');
  assert.equal(res.headers.get('access-control-allow-credentials'), 'true');
  assert.equal(up.seen.length, before, 'preflight must not reach the upstream');
});

test('wildcard origins match one label', async () => {
  const res = await fetch(proxy.url('/x'), { headers: { origin: 'https://a.trusted.dev' } });
  await res.arrayBuffer();
  assert.equal(res.headers.get('access-control-allow-origin'), 'https://a.trusted.dev');
  assert.equal(res.headers.get('access-control-expose-headers'), 'x-upstream');
  assert.match(res.headers.get('vary') ?? '', /Origin/);
});

test('a disallowed origin gets no CORS headers; its preflight is answered here, not by the backend', async () => {
  const res = await fetch(proxy.url('/x'), { headers: { origin: 'https://evil.example' } });
  await res.arrayBuffer();
  assert.equal(res.headers.get('access-control-allow-origin'), null);
  const before = up.seen.length;
  const pre = await fetch(proxy.url('/x'), {
    method: 'OPTIONS',
    headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
  });
  await pre.arrayBuffer();
  assert.equal(pre.status, 200);
  assert.equal(pre.headers.get('access-control-allow-origin'), null);
  assert.equal(pre.headers.get('access-control-allow-methods'), null);
  // the backend's own CORS answer (it might allow anything) is never asked for
  assert.equal(up.seen.length, before);
  // a plain OPTIONS (no Access-Control-Request-Method) still goes to the backend
  await (
    await fetch(proxy.url('/x'), { method: 'OPTIONS', headers: { origin: 'https://evil.example' } })
  ).arrayBuffer();
  assert.equal(up.seen.length, before + 1);
});

test('* in allowMethods and allowHeaders answers a preflight with what it asks for, with credentials or without', async (t) => {
  const wild = (credentials: boolean) =>
    startProxy(
      oneRoute(
        up.port,
        `cors:
  allowOrigins: ["*"]
  allowMethods: ["*"]
  allowHeaders: ["*"]
  allowCredentials: ${credentials}`,
      ),
    );
  const preflight = (p: TestProxy, headers: Record<string, string>) =>
    fetch(p.url('/x'), {
      method: 'OPTIONS',
      headers: { origin: 'https://x.example', 'access-control-request-method': 'PUT', ...headers },
    });
  const withCreds = await wild(true);
  t.after(() => withCreds.close());
  const res = await preflight(withCreds, { 'access-control-request-headers': 'x-a, content-type' });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), 'https://x.example');
  assert.equal(res.headers.get('access-control-allow-credentials'), 'true');
  assert.equal(res.headers.get('access-control-allow-methods'), 'PUT');
  assert.equal(res.headers.get('access-control-allow-headers'), 'x-a, content-type');
  assert.match(res.headers.get('vary') ?? '', /Access-Control-Request-Headers/);
  // no headers asked for: none allowed, rather than a * the browser would not honour
  const bare = await preflight(withCreds, {});
  assert.equal(bare.headers.get('access-control-allow-headers'), null);

  const anonymous = await wild(false);
  t.after(() => anonymous.close());
  // a bearer token's Authorization is never covered by `Access-Control-Allow-Headers: *`: it is named
  const any = await preflight(anonymous, { 'access-control-request-headers': 'authorization, x-a' });
  assert.equal(any.headers.get('access-control-allow-origin'), '*');
  assert.equal(any.headers.get('access-control-allow-methods'), 'PUT');
  assert.equal(any.headers.get('access-control-allow-headers'), 'authorization, x-a');
  assert.equal(any.headers.get('vary'), 'Access-Control-Request-Method, Access-Control-Request-Headers');
});

test('an error the gateway answers for an allowed origin carries the CORS headers: a browser sees the error', async (t) => {
  const p = await startProxy(
    oneRoute(
      CLOSED_PORT,
      `cors: {allowOrigins: ["https://app.example"], exposeHeaders: [x-trace]}
apiKey: {keys: [k-1]}`,
    ),
  );
  t.after(() => p.close());
  const get = (headers: Record<string, string>) =>
    fetch(p.url('/x'), { headers: { origin: 'https://app.example', ...headers } });
  // refused by a policy after cors (401), and the backend unreachable (503)
  for (const [r, status] of [
    [await get({}), 401],
    [await get({ authorization: 'Bearer k-1' }), 503],
  ] as const) {
    assert.equal(r.status, status);
    assert.equal(r.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.equal(r.headers.get('access-control-expose-headers'), 'x-trace');
    assert.equal(r.headers.get('vary'), 'Origin');
    await r.arrayBuffer();
  }
  // another origin gets no CORS headers on an error either
  const other = await fetch(p.url('/x'), { headers: { origin: 'https://evil.example' } });
  assert.equal(other.headers.get('access-control-allow-origin'), null);
  await other.arrayBuffer();
});
