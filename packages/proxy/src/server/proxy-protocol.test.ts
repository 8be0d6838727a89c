// frontendPolicies.proxyProtocol: a PROXY header (v1 text, v2 binary) in front of a connection names
// the client, on HTTP/1.1, h2c, TLS (h1 and h2) and TCP binds. The headers are built by
// proxy-protocol-js, an implementation of its own, so the parser is checked against someone else's
// reading of the protocol.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net, { type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { makeTestPki, startUpstream, type TestPki, type TestServer } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import pp from 'proxy-protocol-js';
import { frame } from './proxy-protocol.ts';

const v1 = (src: string, port: number) =>
  Buffer.from(
    new pp.V1ProxyProtocol(
      src.includes(':') ? pp.INETProtocol.TCP6 : pp.INETProtocol.TCP4,
      new pp.Peer(src, port),
      new pp.Peer(src.includes(':') ? '::1' : '127.0.0.1', 443),
    ).build(),
    'latin1',
  );
const v2v4 = (src: [number, number, number, number], port: number, command = pp.Command.PROXY) =>
  Buffer.from(
    new pp.V2ProxyProtocol(
      command,
      pp.TransportProtocol.STREAM,
      new pp.IPv4ProxyAddress(
        pp.IPv4Address.createFrom(src),
        port,
        pp.IPv4Address.createFrom([10, 0, 0, 1]),
        443,
      ),
    ).build(),
  );
const v2v6 = (src: number[], port: number) =>
  Buffer.from(
    new pp.V2ProxyProtocol(
      pp.Command.PROXY,
      pp.TransportProtocol.STREAM,
      new pp.IPv6ProxyAddress(
        pp.IPv6Address.createFrom(src),
        port,
        pp.IPv6Address.createFrom([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
        443,
      ),
    ).build(),
  );
// 2001:db8::7
const V6 = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7];

describe('frame: reading a PROXY header off the first bytes', () => {
  test('v1 TCP4, TCP6 and UNKNOWN; v2 PROXY over IPv4 and IPv6, and LOCAL', () => {
    const req = Buffer.from('GET / HTTP/1.1\r\n');
    for (const [header, address, port] of [
      [v1('203.0.113.7', 5555), '203.0.113.7', 5555],
      [v1('2001:db8::7', 6666), '2001:db8::7', 6666],
      [v2v4([203, 0, 113, 8], 7777), '203.0.113.8', 7777],
      [v2v6(V6, 8888), '2001:db8::7', 8888],
    ] as const) {
      const f = frame(Buffer.concat([header, req]), 'all');
      assert.equal(f.kind, 'header');
      if (f.kind !== 'header') return;
      assert.equal(f.length, header.length, 'the request after it is not part of it');
      assert.deepEqual(f.peer, { address, port });
    }
    for (const h of [Buffer.from('PROXY UNKNOWN\r\n'), v2v4([1, 2, 3, 4], 1, pp.Command.LOCAL)]) {
      const f = frame(h, 'all');
      assert.ok(f.kind === 'header' && f.peer === undefined, 'the connection keeps its own address');
    }
  });

  test('a header in pieces asks for more; other traffic, the wrong version and bad headers are told apart', () => {
    const h = v2v4([203, 0, 113, 9], 1);
    for (const n of [1, 11, 12, 15, 16, h.length - 1])
      assert.equal(frame(h.subarray(0, n), 'all').kind, 'more', `${n}`);
    assert.equal(frame(v1('203.0.113.7', 1).subarray(0, 20), 'v1').kind, 'more');
    assert.equal(frame(Buffer.from('GET / HTTP/1.1\r\n'), 'all').kind, 'none');
    assert.equal(frame(Buffer.from('PRI * HTTP/2.0\r\n'), 'all').kind, 'none');
    assert.equal(frame(Buffer.from([0x16, 0x03, 0x01]), 'all').kind, 'none', 'a TLS ClientHello');
    assert.equal(frame(h, 'v1').kind, 'none', 'v2 where only v1 is accepted');
    assert.equal(frame(v1('203.0.113.7', 1), 'v2').kind, 'none', 'v1 where only v2 is accepted');
    for (const bad of [
      'PROXY TCP4 999.0.0.1 10.0.0.1 1 2\r\n',
      'PROXY TCP4 1.2.3.4 10.0.0.1 70000 2\r\n',
      'PROXY TCP9 a b 1 2\r\n',
    ])
      assert.equal(frame(Buffer.from(bad), 'all').kind, 'error', bad);
    assert.equal(
      frame(Buffer.from(`PROXY TCP4 ${'1'.repeat(120)}`), 'all').kind,
      'error',
      'no CRLF within 107 bytes',
    );
  });
});

describe('binds behind a PROXY-protocol load balancer', () => {
  let pki: TestPki;
  let up: TestServer;
  let strict: TestProxy;
  let optional: TestProxy;

  const config = (mode: string, version: string) => {
    const cert = pki.servers['gw.test']!;
    const route = `routes: [{backends: [{host: "127.0.0.1:${up.port}"}]}]`;
    return `frontendPolicies:
  proxyProtocol: {mode: ${mode}, version: ${version}}
  networkAuthorization:
    rules: [{require: 'source.address != "198.51.100.66"'}]
binds:
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
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`;
  };

  before(async () => {
    pki = await makeTestPki(['gw.test']);
    up = await startUpstream('echo');
    strict = await startProxy(config('strict', 'all'));
    optional = await startProxy(config('optional', 'v1'));
  });
  after(async () => {
    await strict?.close();
    await optional?.close();
    await up?.close();
    await pki?.cleanup();
  });

  /**
   * Everything the connection answers to `data` sent after `header` (one write, as a balancer
   * forwards the client's first packet), until gw closes it.
   */
  function raw(port: number, header: Buffer, data: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => s.write(Buffer.concat([header, Buffer.from(data)])));
      let got = '';
      s.setEncoding('utf8');
      s.on('data', (c: string) => {
        got += c;
      });
      s.on('close', () => resolve(got));
      s.on('error', reject);
    });
  }
  const GET = 'GET /who HTTP/1.1\r\nhost: gw.test\r\nconnection: close\r\n\r\n';
  /** The echo's view of the request: the X-Forwarded-For gw set from the client it saw. */
  const forwardedFor = (response: string) => {
    const body = response.slice(response.indexOf('\r\n\r\n') + 4);
    return (JSON.parse(body) as { headers: Record<string, string> }).headers['x-forwarded-for'];
  };

  test('HTTP/1.1: v1 and v2 headers name the client; a request in the same packet is served', async () => {
    assert.equal(forwardedFor(await raw(strict.port(0), v1('203.0.113.7', 5555), GET)), '203.0.113.7');
    assert.equal(forwardedFor(await raw(strict.port(0), v2v4([203, 0, 113, 8], 1), GET)), '203.0.113.8');
    assert.equal(forwardedFor(await raw(strict.port(0), v2v6(V6, 2), GET)), '2001:db8::7');
    // LOCAL (the balancer's health check): the connection's own address
    assert.equal(
      forwardedFor(await raw(strict.port(0), v2v4([1, 2, 3, 4], 1, pp.Command.LOCAL), GET)),
      '127.0.0.1',
    );
  });

  test('strict: no header, a malformed one or the wrong client for networkAuthorization: closed unanswered', async () => {
    assert.equal(await raw(strict.port(0), Buffer.alloc(0), GET), '', 'no PROXY header');
    assert.equal(await raw(strict.port(0), Buffer.from('PROXY TCP4 nope\r\n'), GET), '');
    assert.equal(await raw(strict.port(0), v1('198.51.100.66', 1), GET), '', 'refused by the header address');
    assert.equal(await raw(strict.port(2), v1('198.51.100.66', 1), 'x'), '', 'on a TCP bind too');
  });

  test('optional: connections with and without a header; a v2 header where only v1 is taken is not one', async () => {
    assert.equal(forwardedFor(await raw(optional.port(0), v1('203.0.113.9', 1), GET)), '203.0.113.9');
    assert.equal(forwardedFor(await raw(optional.port(0), Buffer.alloc(0), GET)), '127.0.0.1');
    const r = await raw(optional.port(0), v2v4([203, 0, 113, 8], 1), GET);
    assert.match(r, /^HTTP\/1\.1 400/, 'its bytes reach HTTP as they are');
  });

  test('h2c and TLS (HTTP/1.1 and h2 by ALPN): the header goes before the preface and the handshake', async () => {
    const h2 = async (connect: () => Socket | tls.TLSSocket, scheme: string) => {
      const session = http2.connect(`${scheme}://gw.test`, { createConnection: connect });
      try {
        return await new Promise<string>((resolve, reject) => {
          session.on('error', reject);
          const s = session.request({ ':path': '/who' });
          let body = '';
          s.setEncoding('utf8');
          s.on('data', (c: string) => {
            body += c;
          });
          s.on('end', () => resolve(body));
          s.on('error', reject);
        });
      } finally {
        session.close();
      }
    };
    const withHeader = (port: number, header: Buffer) => {
      const s = net.connect(port, '127.0.0.1');
      s.write(header);
      return s;
    };
    const xff = (body: string) =>
      (JSON.parse(body) as { headers: Record<string, string> }).headers['x-forwarded-for'];
    assert.equal(
      xff(await h2(() => withHeader(strict.port(0), v2v4([203, 0, 113, 10], 1)), 'http')),
      '203.0.113.10',
    );
    const overTls = (alpn: string, header: Buffer) =>
      tls.connect({
        socket: withHeader(strict.port(1), header),
        ca: pki.ca,
        servername: 'gw.test',
        ALPNProtocols: [alpn],
      });
    assert.equal(xff(await h2(() => overTls('h2', v1('203.0.113.11', 1)), 'https')), '203.0.113.11');
    const h1 = await new Promise<string>((resolve, reject) => {
      const s = overTls('http/1.1', v2v6(V6, 3));
      let got = '';
      s.on('secureConnect', () => s.write(GET));
      s.setEncoding('utf8');
      s.on('data', (c: string) => {
        got += c;
      });
      s.on('end', () => resolve(got));
      s.on('error', reject);
    });
    assert.equal(forwardedFor(h1), '2001:db8::7');
  });

  test('a TCP bind passes the bytes after the header to its backend', async () => {
    const r = await raw(strict.port(2), v1('203.0.113.12', 1), GET);
    assert.match(r, /^HTTP\/1\.1 200/);
    assert.equal(forwardedFor(r), undefined, 'TCP carries the request as it is');
    assert.equal(await raw(strict.port(2), Buffer.alloc(0), GET), '', 'strict: nothing without a header');
  });
});
