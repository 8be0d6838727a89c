// A listener's TLS handshake settings (agentgateway's tls.minTlsVersion/maxTlsVersion, cipherSuites,
// keyExchangeGroups) hold for real clients, with and without SNI, and follow a reload.
import assert from 'node:assert/strict';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import tls, { type ConnectionOptions } from 'node:tls';
import { makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';

type Outcome = { protocol: string; cipher: string; group: string | undefined } | { refused: string };

describe('listener tls handshake settings', () => {
  let pki: TestPki;
  let up: TestServer;
  let p: TestProxy;

  const config = (tlsFields: string) => {
    const cert = pki.servers['gw.test']!;
    return `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}${tlsFields ? `, ${tlsFields}` : ''}}
    routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`;
  };

  before(async () => {
    pki = await makeTestPki(['gw.test']);
    up = await startUpstream('echo');
    p = await startProxy(config('minTlsVersion: TLS_V1_3'));
  });
  after(async () => {
    await p.close();
    await up.close();
    await pki.cleanup();
  });

  /** A TLS handshake with the gateway (SNI gw.test unless `sni` is false): what was agreed, or the error. */
  function handshake(opts: ConnectionOptions, sni = true): Promise<Outcome> {
    return new Promise((resolve) => {
      const s = tls.connect({
        host: '127.0.0.1',
        port: p.port(0),
        ca: pki.ca,
        ...(sni ? { servername: 'gw.test' } : { checkServerIdentity: () => undefined }),
        ...opts,
      });
      s.once('secureConnect', () => {
        const key = s.getEphemeralKeyInfo();
        resolve({
          protocol: s.getProtocol() ?? '',
          cipher: s.getCipher().standardName,
          group: key && 'name' in key ? key.name : undefined,
        });
        s.destroy();
      });
      s.once('error', (err: NodeJS.ErrnoException) => resolve({ refused: err.code ?? err.message }));
    });
  }

  /** A GET through the gateway over a connection made with `opts`: the status. */
  function get(opts: ConnectionOptions): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = https.get(
        {
          host: '127.0.0.1',
          port: p.port(0),
          path: '/',
          ca: pki.ca,
          servername: 'gw.test',
          agent: false,
          ...opts,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
    });
  }

  test('minTlsVersion TLS_V1_3: a client limited to TLS 1.2 is refused, with or without SNI', async () => {
    assert.deepEqual(await handshake({ maxVersion: 'TLSv1.2' }), {
      refused: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
    });
    assert.deepEqual(await handshake({ maxVersion: 'TLSv1.2' }, false), {
      refused: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
    });
    const ok = await handshake({});
    assert.ok(!('refused' in ok));
    assert.equal(ok.protocol, 'TLSv1.3');
    assert.equal(await get({}), 200);
  });

  test('maxTLSVersion TLS_V1_2 (after a reload): a TLS 1.3-only client is refused, others speak 1.2', async () => {
    await p.reload(config('maxTLSVersion: TLS_V1_2'));
    assert.deepEqual(await handshake({ minVersion: 'TLSv1.3' }), {
      refused: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
    });
    const ok = await handshake({});
    assert.ok(!('refused' in ok));
    assert.equal(ok.protocol, 'TLSv1.2');
    assert.equal(await get({}), 200);
  });

  test('cipherSuites: only the listed suites are agreed; TLS 1.2 names alone mean TLS 1.2', async () => {
    await p.reload(config('cipherSuites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]'));
    const ok = await handshake({});
    assert.ok(!('refused' in ok));
    assert.deepEqual([ok.protocol, ok.cipher], ['TLSv1.2', 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256']);
    assert.ok(
      'refused' in (await handshake({ ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384', maxVersion: 'TLSv1.2' })),
    );
    assert.ok('refused' in (await handshake({ minVersion: 'TLSv1.3' })));
    assert.equal(await get({}), 200);

    await p.reload(config('cipherSuites: [TLS13_AES_128_GCM_SHA256, ECDHE-ECDSA-AES256-GCM-SHA384]'));
    const v13 = await handshake({});
    assert.ok(!('refused' in v13));
    assert.deepEqual([v13.protocol, v13.cipher], ['TLSv1.3', 'TLS_AES_128_GCM_SHA256']);
    assert.ok('refused' in (await handshake({ ciphers: 'TLS_AES_256_GCM_SHA384', minVersion: 'TLSv1.3' })));
    const v12 = await handshake({ maxVersion: 'TLSv1.2' });
    assert.ok(!('refused' in v12));
    assert.equal(v12.cipher, 'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384');
  });

  test('keyExchangeGroups: a client offering none of them is refused; the listed group is used', async () => {
    await p.reload(config('keyExchangeGroups: [P-384]'));
    assert.ok('refused' in (await handshake({ ecdhCurve: 'X25519' })));
    assert.ok('refused' in (await handshake({ ecdhCurve: 'X25519' }, false)));
    const ok = await handshake({ ecdhCurve: 'X25519:P-384' });
    assert.ok(!('refused' in ok));
    assert.equal(ok.group, 'secp384r1');
    assert.equal(await get({ ecdhCurve: 'X25519:P-384' }), 200);
  });
});

test('frontendPolicies.tls gives every TLS listener the settings it leaves out', async (t) => {
  const pki = await makeTestPki(['gw.test']);
  t.after(() => pki.cleanup());
  const up = await startUpstream('echo');
  t.after(() => up.close());
  const cert = pki.servers['gw.test']!;
  const tlsOf = (extra: string) =>
    `{cert: ${JSON.stringify(cert.certFile)}, key: ${JSON.stringify(cert.keyFile)}${extra}}`;
  const p = await startProxy(`frontendPolicies:
  tls: {minVersion: TLS_V1_3, keyExchangeGroups: [P-256]}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: ${tlsOf('')}
    routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: ${tlsOf(', minTlsVersion: TLS_V1_2, maxTlsVersion: TLS_V1_2')}
    routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
`);
  t.after(() => p.close());
  const connect = (port: number, opts: tls.ConnectionOptions) =>
    new Promise<string>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port, ca: pki.ca, servername: 'gw.test', ...opts });
      s.once('secureConnect', () => {
        const key = s.getEphemeralKeyInfo();
        resolve(`${s.getProtocol()} ${key && 'name' in key ? key.name : ''}`);
        s.destroy();
      });
      s.once('error', (err: NodeJS.ErrnoException) => resolve(`refused ${err.code}`));
    });
  assert.equal(
    await connect(p.port(0), { maxVersion: 'TLSv1.2' }),
    'refused ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
  );
  assert.equal(await connect(p.port(0), { ecdhCurve: 'X25519:P-256' }), 'TLSv1.3 prime256v1');
  // the listener's own versions win; the groups still come from frontendPolicies
  assert.equal(await connect(p.port(1), { ecdhCurve: 'X25519:P-256' }), 'TLSv1.2 prime256v1');
  assert.match(await connect(p.port(1), { ecdhCurve: 'X25519' }), /^refused /);
});
