// frontendPolicies.networkExtAuthz against a real Envoy ext_authz v3 gRPC server: each new connection
// (HTTP, TLS-terminated and plain TCP binds) is checked once, by its client's address and the address
// it reached, before gw reads any of it; OK lets it on, a denial closes it, and without an answer the
// failure mode decides. networkAuthorization runs first (a peer it refuses costs no check), and behind
// a PROXY header the check sees the client the header names. The config refuses what needs a request.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  CLOSED_PORT,
  makeTestPki,
  startUpstream,
  type TestPki,
  type TestServer,
  tcpRoundTrip,
} from '@gw/testkit';
import { type AuthzServer, startAuthzServer } from '@gw/testkit/ext-authz-server';
import { startProxy } from '@gw/testkit/proxy';
import type { CheckRequest } from '@gw/xds-proto/envoy/service/auth/v3/external_auth';
import { configIssues } from '../config/test-support.ts';

const PERMISSION_DENIED = 7;

let up: TestServer;
let echo: net.Server;
let echoPort: number;
let pki: TestPki;
let authz: AuthzServer;
/** What the service answers next: allow or deny. */
let verdict: 'allow' | 'deny' = 'allow';
before(async () => {
  up = await startUpstream('echo');
  echo = net.createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as net.AddressInfo).port;
  pki = await makeTestPki(['gw.test']);
  authz = await startAuthzServer(() =>
    verdict === 'allow' ? { status: { code: 0 } } : { status: { code: PERMISSION_DENIED } },
  );
});
after(async () => {
  await up?.close();
  await new Promise((r) => echo?.close(r));
  await authz?.close();
  await pki?.cleanup();
});

const json = JSON.stringify;

/** An HTTP bind, an HTTPS bind and a TCP bind, all behind `frontend`. */
const config = (frontend: string) => {
  const cert = pki.servers['gw.test'];
  assert.ok(cert);
  return `frontendPolicies:
${frontend}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: HTTPS
    tls: {cert: ${json(cert.certFile)}, key: ${json(cert.keyFile)}}
    routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes: [{backends: [{host: "127.0.0.1:${echoPort}"}]}]
`;
};

/** The HTTP status over plain HTTP on a new connection, or the error code when it was closed. */
function httpStatus(port: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/checked', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** The status over HTTPS (a TLS handshake with the test CA), or 'closed'. */
async function httpsStatus(port: number): Promise<number | string> {
  const tls = await import('node:tls');
  return new Promise((resolve) => {
    const s = tls.connect({ port, host: '127.0.0.1', servername: 'gw.test', ca: pki.ca }, () =>
      s.write('GET /checked HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\n\r\n'),
    );
    let got = '';
    s.on('data', (d: Buffer) => {
      got += d.toString();
    });
    s.on('close', () => {
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      resolve(m ? Number(m[1]) : 'closed');
    });
    s.on('error', () => {});
  });
}

const sourceOf = (r: CheckRequest | undefined) => {
  const a = r?.attributes?.source?.address?.address;
  return a?.case === 'socketAddress' ? a.value : undefined;
};
const destinationPort = (r: CheckRequest | undefined) => {
  const a = r?.attributes?.destination?.address?.address;
  return a?.case === 'socketAddress' && a.value.portSpecifier.case === 'portValue'
    ? a.value.portSpecifier.value
    : undefined;
};

describe('networkExtAuthz', () => {
  test('each connection is checked once, by its addresses; OK lets it on, a denial closes it', async () => {
    const proxy = await startProxy(
      config(`  networkExtAuthz:
    host: ${authz.host}
    protocol: {grpc: {context: {bind: edge}}}`),
    );
    try {
      verdict = 'allow';
      const before = authz.seen.length;
      assert.equal(await httpStatus(proxy.port(0)), 200);
      assert.equal(authz.seen.length, before + 1, 'one check for the connection');
      const req = authz.seen.at(-1);
      assert.equal(sourceOf(req)?.address, '127.0.0.1');
      assert.equal(destinationPort(req), proxy.port(0));
      assert.deepEqual(req?.attributes?.contextExtensions, { bind: 'edge' });
      assert.equal(req?.attributes?.request, undefined, 'a connection check has no HTTP request');
      assert.equal(await httpsStatus(proxy.port(1)), 200);
      assert.equal(destinationPort(authz.seen.at(-1)), proxy.port(1));
      assert.equal(await tcpRoundTrip(proxy.port(2), 'hello'), 'hello');
      assert.equal(destinationPort(authz.seen.at(-1)), proxy.port(2));

      verdict = 'deny';
      const seenBefore = up.seen.length;
      assert.notEqual(await httpStatus(proxy.port(0)), 200);
      assert.equal(await httpsStatus(proxy.port(1)), 'closed');
      assert.equal(await tcpRoundTrip(proxy.port(2), 'hello'), '');
      assert.equal(up.seen.length, seenBefore, 'nothing of a denied connection reached the upstream');
    } finally {
      verdict = 'allow';
      await proxy.close();
    }
  });

  test('networkAuthorization first: a peer it refuses costs no check', async () => {
    const proxy = await startProxy(
      config(`  networkAuthorization: {rules: ['source.address != "127.0.0.1"']}
  networkExtAuthz: {host: ${authz.host}}`),
    );
    try {
      const before = authz.seen.length;
      assert.notEqual(await httpStatus(proxy.port(0)), 200);
      assert.equal(await tcpRoundTrip(proxy.port(2), 'x'), '');
      assert.equal(authz.seen.length, before);
    } finally {
      await proxy.close();
    }
  });

  test('behind a PROXY header the check sees the client it names', async () => {
    const proxy = await startProxy(
      config(`  proxyProtocol: {version: v1}
  networkExtAuthz: {host: ${authz.host}}`),
    );
    try {
      const got = await new Promise<string>((resolve) => {
        const c = net.connect(proxy.port(2), '127.0.0.1', () =>
          c.write('PROXY TCP4 203.0.113.7 127.0.0.1 40000 443\r\nping'),
        );
        let text = '';
        c.on('data', (d: Buffer) => {
          text += d.toString();
          if (text === 'ping') c.end();
        });
        c.on('close', () => resolve(text));
        c.on('error', () => resolve(text));
      });
      assert.equal(got, 'ping');
      assert.deepEqual(
        { address: sourceOf(authz.seen.at(-1))?.address, port: portOf(authz.seen.at(-1)) },
        { address: '203.0.113.7', port: 40000 },
      );
    } finally {
      await proxy.close();
    }
  });

  test('no answer: failClosed (the default) closes the connection, failOpen lets it on', async () => {
    // a port nothing listens on
    const deadPort = CLOSED_PORT;
    for (const [mode, expected] of [
      ['deny', ''],
      ['allow', 'hi'],
    ] as const) {
      const proxy = await startProxy(
        config(`  networkExtAuthz: {host: "127.0.0.1:${deadPort}", failureMode: ${mode}}`),
      );
      try {
        assert.equal(await tcpRoundTrip(proxy.port(2), 'hi'), expected, `failureMode ${mode}`);
      } finally {
        await proxy.close();
      }
    }
  });

  test('the config refuses what needs a request, by field', () => {
    const issues = (block: string) => configIssues(config(`  networkExtAuthz: ${block}`));
    assert.match(
      issues('{host: "127.0.0.1:9000", protocol: {http: {}}}'),
      /networkExtAuthz\.protocol: the http protocol needs an HTTP request/,
    );
    assert.match(
      issues('{host: "127.0.0.1:9000", includeRequestBody: {}}'),
      /networkExtAuthz\.includeRequestBody: includeRequestBody needs an HTTP request/,
    );
    assert.match(
      issues('{host: "127.0.0.1:9000", protocol: {grpc: {metadata: {a: "request.path"}}}}'),
      /networkExtAuthz\.protocol\.grpc\.metadata: metadata \(CEL over the request\) needs an HTTP request/,
    );
    assert.match(issues('{backend: nope}'), /networkExtAuthz\.backend: no backend named "nope"/);
    assert.equal(issues('{host: "127.0.0.1:9000", failureMode: allow}'), '');
  });
});

function portOf(r: CheckRequest | undefined): number | undefined {
  const a = sourceOf(r);
  return a?.portSpecifier.case === 'portValue' ? a.portSpecifier.value : undefined;
}
