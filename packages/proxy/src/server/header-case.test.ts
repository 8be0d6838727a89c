// frontendPolicies.http.http1HeaderCase: header names reach an HTTP/1 backend, and come back to an
// HTTP/1 client, in lowercase, or, under preserve, as the client (going) and the backend (coming back)
// spelled them (names a policy adds, and HTTP/2 clients, stay lowercase).
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { startProxy } from '@gw/testkit/proxy';

/** An upstream that answers each request with the header names it received, as spelled on the wire. */
async function namesUpstream() {
  const server = http.createServer((req, res) => {
    const names = req.rawHeaders.filter((_, i) => i % 2 === 0);
    res.setHeader('content-type', 'application/json');
    res.setHeader('X-Upstream-Case', 'Mixed');
    res.end(JSON.stringify(names));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

const config = (port: number, headerCase?: string) => `${
  headerCase ? `frontendPolicies:\n  http: {http1HeaderCase: ${headerCase}}\n` : ''
}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies:
        requestHeaderModifier: {add: {X-Added-By-Policy: "yes"}}
        responseHeaderModifier: {add: {X-Response-Policy: "yes"}}
      backends: [{host: "127.0.0.1:${port}"}]
`;

/** One HTTP/1.1 request written byte for byte; the names the upstream saw. */
async function rawRequest(port: number, head: string): Promise<string[]> {
  return (await exchange(port, head)).seen;
}

/** One HTTP/1.1 request written byte for byte: the names the upstream saw, and those of the answer's head. */
function exchange(port: number, head: string): Promise<{ seen: string[]; answered: string[] }> {
  return new Promise((resolve, reject) => {
    let data = '';
    const sock = net.connect(port, '127.0.0.1', () => sock.write(head));
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => {
      data += c;
      const [top = '', body] = data.split('\r\n\r\n');
      if (body?.endsWith(']')) {
        sock.destroy();
        const answered = top
          .split('\r\n')
          .slice(1)
          .map((l) => l.slice(0, l.indexOf(':')));
        resolve({ seen: JSON.parse(body) as string[], answered });
      }
    });
    sock.on('error', reject);
  });
}

const HEAD =
  'GET /names HTTP/1.1\r\nHost: gw.test\r\nX-Case-Probe: 1\r\nX-Request-ID: abc\r\naccept: */*\r\nConnection: close\r\n\r\n';

test('http1HeaderCase preserve: an HTTP/1 client’s header names reach the backend as spelled; lowercase is the default', async (t) => {
  const up = await namesUpstream();
  t.after(() => up.server.close());

  const lower = await startProxy(config(up.port));
  t.after(() => lower.close());
  const plain = await rawRequest(lower.port(), HEAD);
  assert.ok(plain.includes('x-case-probe') && plain.includes('x-request-id'), plain.join());
  assert.ok(!plain.includes('X-Case-Probe'));

  const p = await startProxy(config(up.port, 'preserve'));
  t.after(() => p.close());
  const kept = await rawRequest(p.port(), HEAD);
  // undici writes the Host line itself, in lowercase
  assert.deepEqual(
    kept.filter((n) => n.toLowerCase() === 'host'),
    ['host'],
    'one Host header',
  );
  for (const name of ['X-Case-Probe', 'X-Request-ID', 'accept'])
    assert.ok(kept.includes(name), `${name} not among ${kept.join()}`);
  assert.ok(!kept.includes('x-case-probe'));
  // what a policy adds, and what gw sets itself, are gw's own lowercase names
  assert.ok(kept.includes('x-added-by-policy'), kept.join());
  assert.ok(kept.includes('x-forwarded-for'), kept.join());

  // an HTTP/2 client's names are lowercase by the protocol
  const session = http2.connect(`http://127.0.0.1:${p.port()}`);
  t.after(() => session.destroy());
  const s = session.request({ ':path': '/names', 'x-case-probe': '1' });
  let body = '';
  s.setEncoding('utf8');
  s.on('data', (c: string) => {
    body += c;
  });
  await new Promise((r) => s.once('end', r));
  const h2 = JSON.parse(body) as string[];
  assert.ok(h2.includes('x-case-probe'), h2.join());

  // a reload back to lowercase applies to the next request
  await p.reload(config(up.port, 'lowercase'));
  const again = await rawRequest(p.port(), HEAD);
  assert.ok(again.includes('x-case-probe') && !again.includes('X-Case-Probe'), again.join());
});

test('http1HeaderCase preserve: the answer to an HTTP/1 client keeps the names as the backend spelled them', async (t) => {
  const up = await namesUpstream();
  t.after(() => up.server.close());
  const lower = await startProxy(config(up.port));
  t.after(() => lower.close());
  const plain = (await exchange(lower.port(), HEAD)).answered;
  assert.ok(plain.includes('x-upstream-case') && !plain.includes('X-Upstream-Case'), plain.join());

  const p = await startProxy(config(up.port, 'preserve'));
  t.after(() => p.close());
  const kept = (await exchange(p.port(), HEAD)).answered;
  assert.ok(kept.includes('X-Upstream-Case'), kept.join());
  assert.ok(!kept.includes('x-upstream-case'), kept.join());
  // the backend's lowercase name stays so, and a policy's own name is gw's lowercase
  assert.ok(kept.includes('content-type'), kept.join());
  assert.ok(kept.includes('x-response-policy'), kept.join());
});
