// A reload that changes what a port speaks (HTTP to HTTPS, or to TCP) or the address its bind listens
// on, on a data plane of one worker: without SO_REUSEPORT the new socket cannot open beside the old,
// so the old stops accepting first. The reload was refused (EADDRINUSE) and only a restart applied it.
import assert from 'node:assert/strict';
import https from 'node:https';
import { after, before, test } from 'node:test';
import { httpGet, makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import pino from 'pino';
import { loadConfigText } from '../config/load.ts';
import { DataPlane } from './data-plane.ts';

let pki: TestPki;
let up: TestServer;
before(async () => {
  pki = await makeTestPki(['gw.test']);
  up = await startUpstream('echo');
});
after(async () => {
  await up.close();
  await pki.cleanup();
});

const load = (yaml: string) => loadConfigText('t.yaml', yaml, process.cwd()).ir;

function httpsGet(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port, path: '/', servername: 'gw.test', ca: pki.ca, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
  });
}

test('one worker: a port turns from HTTP to HTTPS, and its bind gains an address, at a reload', async (t) => {
  const quiet = pino({ level: 'silent' });
  const plane = new DataPlane({ log: quiet, accessLog: quiet, worker: 0, workers: 1 });
  t.after(() => plane.drain(100));
  const first = await plane.apply(
    load(`binds:
- port: 0
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`),
  );
  const port = Object.values(first)[0] as number;
  assert.equal((await httpGet(port, '/')).status, 200);

  const tls = pki.servers['gw.test'];
  assert.ok(tls);
  await plane.apply(
    load(`binds:
- port: ${port}
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(tls.certFile)}, key: ${JSON.stringify(tls.keyFile)}}
    routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`),
  );
  assert.equal(await httpsGet(port), 200, 'HTTPS on the port once the reload applied');

  await plane.apply(
    load(`binds:
- port: ${port}
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`),
  );
  assert.equal((await httpGet(port, '/')).status, 200, 'plain HTTP again, on 127.0.0.1 only');
});
