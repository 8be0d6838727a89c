// The admin port of the real `bin/gw` against what a web page can send it: an <img> GET of
// /quitquitquit, a DNS-rebinding Host, a cross-site form POST. gw keeps serving through all of them.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { cleanupGw, configBlock, type GwProcess, startGw } from './support/gw-process.ts';

let g: GwProcess;
let proxyPort: number;

before(async () => {
  g = await startGw({
    yaml: `${configBlock()}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {directResponse: {status: 200, body: "up\\n"}}
`,
  });
  proxyPort = await g.proxyPort(0);
});
after(() => cleanupGw());

function call(
  base: string | number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; allow: string | undefined; body: string }> {
  const port = typeof base === 'number' ? base : Number(new URL(base).port);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          allow: res.headers.allow,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

test('GET /quitquitquit (an <img> tag) is 405 and gw keeps serving', async () => {
  const r = await call(g.admin, 'GET', '/quitquitquit', { 'sec-fetch-site': 'none' });
  assert.equal(r.status, 405);
  assert.equal(r.allow, 'POST');
  const served = await call(proxyPort, 'GET', '/');
  assert.equal(served.status, 200);
  assert.equal(served.body, 'up\n');
  assert.equal(g.child.exitCode, null, 'gw is still running');
});

test('a foreign Host (DNS rebinding) cannot read /config_dump', async () => {
  const r = await call(g.admin, 'GET', '/config_dump', { host: 'rebind.attacker.example:15000' });
  assert.equal(r.status, 403);
  assert.doesNotMatch(r.body, /binds/);
  const local = await call(g.admin, 'GET', '/config_dump', { host: 'localhost:15000' });
  assert.equal(local.status, 200, 'a port-forward sends localhost:<its port>');
});

test('a cross-site POST /quitquitquit is refused; a plain POST stops gw', async () => {
  const cross = await call(g.admin, 'POST', '/quitquitquit', {
    origin: 'https://attacker.example',
    'sec-fetch-site': 'cross-site',
  });
  assert.equal(cross.status, 403);
  assert.equal((await call(proxyPort, 'GET', '/')).status, 200);
  const ok = await call(g.admin, 'POST', '/quitquitquit');
  assert.equal(ok.status, 200);
  const exit = await g.exited;
  assert.equal(exit.code, 0);
});
