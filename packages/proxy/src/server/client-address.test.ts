// The client's address reaches CEL, network authorization, the access log and x-forwarded-for on
// every protocol a bind serves: HTTP/1.1, h2c (prior knowledge) and h2 over TLS.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, test } from 'node:test';
import { type Echo, httpGet, makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

type Protocol = 'HTTP/1.1' | 'h2c' | 'h2';
const PROTOCOLS: Protocol[] = ['HTTP/1.1', 'h2c', 'h2'];
const LOOPBACK = 'cidr("127.0.0.0/8").containsIP(source.address)';
const ELSEWHERE = 'cidr("10.0.0.0/8").containsIP(source.address)';

describe('the client address on every protocol', () => {
  let pki: TestPki;
  let up: TestServer;
  let p: TestProxy;

  /** One plain bind (HTTP/1.1 and h2c) and one TLS bind (h2 by ALPN), both under the given rules. */
  const config = (routeRule: string | undefined, networkRule: string | undefined) => {
    const cert = pki.servers['gw.test']!;
    const policies = routeRule ? `policies: {authorization: {rules: [{require: '${routeRule}'}]}}` : '';
    const network = networkRule
      ? `frontendPolicies:\n  networkAuthorization:\n    rules: [{require: '${networkRule}'}]\n`
      : '';
    const route = `routes: [{${policies ? `${policies}, ` : ''}backends: [{host: "127.0.0.1:${up.port}"}]}]`;
    return `${network}binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - ${route}
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}}
    ${route}
`;
  };

  before(async () => {
    pki = await makeTestPki(['gw.test']);
    up = await startUpstream('echo');
    p = await startProxy(config(undefined, undefined));
  });
  after(async () => {
    await p.close();
    await up.close();
    await pki.cleanup();
  });

  /** One GET over `proto`; rejects when the connection is refused before an answer. */
  async function send(proto: Protocol, path: string): Promise<{ status: number; body: string }> {
    if (proto === 'HTTP/1.1') {
      const r = await httpGet(p.port(0), path);
      return { status: r.status, body: r.body };
    }
    const session =
      proto === 'h2c'
        ? http2.connect(`http://127.0.0.1:${p.port(0)}`)
        : http2.connect(`https://127.0.0.1:${p.port(1)}`, { ca: pki.ca, servername: 'gw.test' });
    try {
      return await new Promise((resolve, reject) => {
        session.on('error', reject);
        session.on('close', () => reject(new Error('session closed before an answer')));
        const s = session.request({ ':path': path });
        let status = 0;
        let body = '';
        s.on('response', (h) => {
          status = Number(h[':status']);
        });
        s.setEncoding('utf8');
        s.on('data', (c: string) => {
          body += c;
        });
        // A stream of a session that closes before any answer ends too, without a status.
        s.on('end', () =>
          status ? resolve({ status, body }) : reject(new Error('stream ended without an answer')),
        );
        s.on('error', reject);
      });
    } finally {
      session.destroy();
    }
  }

  for (const proto of PROTOCOLS) {
    test(`${proto}: x-forwarded-for and the access log carry the client's address`, async () => {
      await p.reload(config(undefined, undefined));
      const path = `/addr/${proto.replace('/', '')}`;
      const r = await send(proto, path);
      assert.equal(r.status, 200);
      const echo = JSON.parse(r.body) as Echo;
      assert.equal(echo.headers['x-forwarded-for'], '127.0.0.1');
      const line = p.accessLog.find((l) => l['http.path'] === path);
      assert.ok(line, 'an access log line for the request');
      const m = /^127\.0\.0\.1:([0-9]+)$/.exec(String(line['src.addr']));
      assert.ok(m, `src.addr is the client's address, got ${String(line['src.addr'])}`);
      assert.ok(Number(m[1]) > 0, 'with the client port');
    });

    test(`${proto}: an authorization rule on source.address allows loopback and denies elsewhere`, async () => {
      await p.reload(config(LOOPBACK, undefined));
      assert.equal((await send(proto, '/authz')).status, 200);
      await p.reload(config(ELSEWHERE, undefined));
      assert.equal((await send(proto, '/authz')).status, 403);
    });

    test(`${proto}: networkAuthorization allows loopback and refuses elsewhere`, async () => {
      await p.reload(config(undefined, LOOPBACK));
      assert.equal((await send(proto, '/net')).status, 200);
      await p.reload(config(undefined, ELSEWHERE));
      const before = up.seen.length;
      await assert.rejects(send(proto, '/net'));
      assert.equal(up.seen.length, before, 'the upstream saw nothing');
    });
  }
});
