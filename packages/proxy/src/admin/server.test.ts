// The admin server refuses what a web page could make it do: GET /quitquitquit, a foreign Host (DNS
// rebinding) and browser-originated cross-site requests; gwctl's and curl's requests still work.
import assert from 'node:assert/strict';
import http from 'node:http';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { loadConfigText } from '../config/load.ts';
import { LogHub } from '../observability/logger.ts';
import type { Supervisor } from '../server/supervisor.ts';
import { parseListenAddress } from './address.ts';
import { allowedHost, hostOf, refuse } from './guard.ts';
import { startAdmin } from './server.ts';

const { ir, startup } = loadConfigText(
  'admin.yaml',
  `config: {adminAddr: "127.0.0.1:0"}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {directResponse: {status: 200}}
`,
  process.cwd(),
);

const shutdowns: string[] = [];
const logs = new LogHub(
  'info',
  'json',
  new Writable({
    write(_c, _e, cb) {
      cb();
    },
  }),
);
const supervisor = {
  ir,
  ports: {},
  workers: [{ index: 0, version: ir.version }],
  broadcast: async () => [],
} as unknown as Supervisor;

let close: () => Promise<unknown>;
let port: number;
before(async () => {
  const a = await startAdmin({
    supervisor,
    logs,
    startup,
    lastError: () => undefined,
    shutdown: (reason) => shutdowns.push(reason),
  });
  close = () => a.close();
  port = Number(a.address?.split(':').at(-1));
});
after(() => close());

function call(
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('state changes are POST only', () => {
  test('GET /quitquitquit is 405 with Allow: POST and does not stop gw', async () => {
    const r = await call('GET', '/quitquitquit');
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, 'POST');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(shutdowns, []);
    assert.equal((await call('GET', '/config_dump')).status, 200, 'still serving');
  });

  test('GET /logging reads, POST /logging sets; other methods are 405', async () => {
    assert.match((await call('GET', '/logging')).body, /current log level is info/);
    const put = await call('PUT', '/logging?level=debug');
    assert.equal(put.status, 405);
    assert.equal(put.headers.allow, 'GET, POST');
    assert.equal(logs.filter, 'info');
    const post = await call('POST', '/config_dump');
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET');
    assert.equal((await call('GET', '/nope')).status, 404);
  });

  test('POST /quitquitquit shuts down', async () => {
    const r = await call('POST', '/quitquitquit');
    assert.equal(r.status, 200);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(shutdowns, ['admin /quitquitquit']);
    shutdowns.length = 0;
  });
});

describe('only loopback Host names are answered', () => {
  test('a rebinding page (foreign Host) cannot read /config_dump', async () => {
    for (const host of ['evil.example', `evil.example:${port}`, 'localhost.evil.example', '10.0.0.1']) {
      const r = await call('GET', '/config_dump', { host });
      assert.equal(r.status, 403, host);
      assert.match(r.body, /Host .* is not allowed/);
    }
  });

  test('loopback names with any port are answered (gwctl through a port-forward)', async () => {
    for (const host of [`127.0.0.1:${port}`, 'localhost:8080', 'localhost', '[::1]:15000', 'LOCALHOST.']) {
      assert.equal((await call('GET', '/config_dump', { host })).status, 200, host);
    }
  });
});

describe('browser-originated requests from other sites are refused', () => {
  test('a cross-site or foreign-origin POST is 403 and changes nothing', async () => {
    const attempts: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: `http://localhost:${port + 1}` },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const h of attempts) {
      const r = await call('POST', '/logging?level=debug', h);
      assert.equal(r.status, 403, JSON.stringify(h));
      const q = await call('POST', '/quitquitquit', h);
      assert.equal(q.status, 403, JSON.stringify(h));
    }
    assert.equal(logs.filter, 'info');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(shutdowns, []);
  });

  test('the admin page itself and non-browser clients may POST', async () => {
    const same = await call('POST', '/logging?level=debug', {
      origin: `http://127.0.0.1:${port}`,
      'sec-fetch-site': 'same-origin',
    });
    assert.equal(same.status, 200);
    assert.equal((await call('POST', '/logging?level=info')).status, 200);
    assert.equal(logs.filter, 'info');
  });

  test('an image tag on another site cannot start a profile or arm a trace', async () => {
    const r = await call('GET', '/debug/trace', { 'sec-fetch-site': 'cross-site' });
    assert.equal(r.status, 403);
  });
});

describe('the Host rule', () => {
  test('host names are parsed from Host headers', () => {
    assert.equal(hostOf('[::1]:80'), '::1');
    assert.equal(hostOf('LocalHost:1'), 'localhost');
    assert.equal(hostOf('a:b:c'), undefined);
    assert.equal(hostOf('[::1]x'), undefined);
  });

  test('a non-loopback bind also answers its own address; a wildcard bind any IP literal', () => {
    const own = parseListenAddress('10.0.0.5:15000');
    assert.equal(allowedHost(own, '10.0.0.5'), true);
    assert.equal(allowedHost(own, '10.0.0.6'), false);
    assert.equal(allowedHost(own, '127.0.0.1'), true);
    const any = parseListenAddress('0.0.0.0:15000');
    assert.equal(allowedHost(any, '192.168.1.9'), true);
    assert.equal(allowedHost(any, 'fe80::1'), true);
    assert.equal(allowedHost(any, 'gw.example'), false);
  });

  test('a unix socket is not reachable from a browser: no header checks', () => {
    assert.equal(refuse(parseListenAddress('unix:/tmp/gw.sock'), { host: 'anything' }), undefined);
  });
});

describe('/config_dump', () => {
  test('a reload that lands while the workers report health is shown without the error it cleared', async () => {
    const fixed = loadConfigText(
      'fixed.yaml',
      `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - policies: {directResponse: {status: 204}}
`,
      process.cwd(),
    ).ir;
    let lastError: string | undefined = 'config.yaml:14:1: a broken edit';
    const reloading = {
      ir,
      ports: {},
      workers: [
        {
          index: 0,
          version: ir.version,
          // The fixed file applies while this worker answers: the config changes, the error clears.
          call: async () => {
            reloading.ir = fixed;
            lastError = undefined;
            return [];
          },
        },
      ],
    };
    const a = await startAdmin({
      supervisor: reloading as unknown as Supervisor,
      logs,
      startup,
      lastError: () => lastError,
      shutdown: () => {},
    });
    try {
      const res = await fetch(`http://${a.address}/config_dump`);
      const dump = (await res.json()) as { version: string; lastReloadError?: string };
      assert.notEqual(fixed.version, ir.version);
      assert.equal(dump.version, fixed.version);
      assert.equal(dump.lastReloadError, undefined);
    } finally {
      await a.close();
    }
  });
});
