// The xDS server (controller) and client (proxy) in one process: delta semantics, ACK/NACK, per-Gateway scoping, auth and reconnects.
// The xDS server against the proxy's real xDS client, in one process over loopback gRPC: per-Gateway
// resources, deltas, ACK/NACK, reconnect after a controller restart and the authentication hook.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { NamedResource } from '@gw/controller/translator/types';
import { startXdsServer, type XdsEvents, type XdsServer } from '@gw/controller/xds/server';
import type { ProxyIR } from '@gw/proxy/config/ir';
import { LogHub } from '@gw/proxy/observability/logger';
import { startXdsClient, type XdsClient } from '@gw/proxy/xds-client/client';
import { freePort, makeTestPki } from '@gw/testkit';

const dir = mkdtempSync(join(tmpdir(), 'gw-xds-'));
const cleanups: (() => unknown)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

/** Log lines of one client, parsed (the client logs every state change). */
function capture(): { lines: Record<string, unknown>[]; hub: LogHub } {
  const lines: Record<string, unknown>[] = [];
  const hub = new LogHub(process.env.GW_TEST_LOG ?? 'info', 'json', {
    write(s: string) {
      for (const l of s.split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
    },
  });
  return { lines, hub };
}

interface Proxy {
  client: XdsClient;
  configs: ProxyIR[];
  rejects: string[];
  lines: Record<string, unknown>[];
}

function proxy(
  port: number,
  gateway: string,
  extra: {
    tokenFile?: string;
    caFile?: string;
    scheme?: 'http' | 'https';
    host?: string;
    backoff?: { initialMs: number; maxMs: number };
  } = {},
): Proxy {
  const { lines, hub } = capture();
  const configs: ProxyIR[] = [];
  const rejects: string[] = [];
  const { scheme = 'http', host = '127.0.0.1', backoff = { initialMs: 50, maxMs: 400 }, ...files } = extra;
  const client = startXdsClient({
    address: `${scheme}://${host}:${port}`,
    gateway,
    ...files,
    log: hub.module('xds'),
    backoff,
    onConfig: ({ ir }) => {
      configs.push(ir);
    },
    onReject: (m) => rejects.push(m),
  });
  cleanups.push(() => client.close());
  return { client, configs, rejects, lines };
}

async function until<T>(what: string, f: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every `kind` event the server emits from now on. */
function events<K extends keyof XdsEvents>(srv: XdsServer, kind: K): XdsEvents[K][0][] {
  const seen: XdsEvents[K][0][] = [];
  srv.on(kind, ((e: XdsEvents[K][0]) => seen.push(e)) as never);
  return seen;
}

/** A Gateway's resources: one HTTP listener on `port` and one direct-response route per path. */
function gatewayResources(
  gw: string,
  port: number,
  routes: Record<string, string>,
  more: NamedResource[] = [],
): NamedResource[] {
  const listener = `${gw}/http`;
  return [
    {
      name: `bind/${port}`,
      resource: { bind: { port, listeners: [{ name: listener, gateway: gw, protocol: 'HTTP' }] } },
    },
    ...Object.entries(routes).map(([path, body], i) => ({
      name: `route/${port}/${listener}/${gw.split('/')[0]}/web/${i}`,
      resource: {
        route: {
          port,
          listener,
          namespace: gw.split('/')[0],
          name: 'web',
          matches: [{ path: { pathPrefix: path } }],
          policies: { directResponse: { status: 200, body } },
        },
      },
    })),
    ...more,
  ];
}

const routeBodies = (ir: ProxyIR | undefined) =>
  ir?.binds.flatMap((b) =>
    b.listeners.flatMap((l) =>
      l.routes.map((r) => (r.policies.directResponse as { body?: string } | undefined)?.body),
    ),
  );

describe('xDS server and client', () => {
  test('per-Gateway resources, deltas, NACK keeps the last good config, restart resyncs', async () => {
    // a port no other program can take while the server is down, as it comes back on the same one
    let srv = await startXdsServer({ port: await freePort(), host: '127.0.0.1', mode: 'plaintext' });
    cleanups.push(() => srv.close());
    const port = srv.port;
    srv.setResources('ns/a', gatewayResources('ns/a', 8081, { '/a': 'a0' }));
    srv.setResources('ns/b', gatewayResources('ns/b', 8082, { '/b': 'b0' }));
    let responses = events(srv, 'response');
    let nacks = events(srv, 'nack');
    const acks = events(srv, 'ack');

    const a = proxy(port, 'ns/a');
    const ir0 = await until('first config', () => a.configs[0]);
    // Only Gateway A's resources reached A, and they built the bind and route a file would.
    assert.deepEqual([...a.client.resources.keys()].sort(), ['bind/8081', 'route/8081/ns/a/http/ns/web/0']);
    assert.equal(ir0.binds.length, 1);
    assert.equal(ir0.binds[0]?.port, 8081);
    assert.equal(ir0.binds[0]?.listeners[0]?.gateway, 'ns/a');
    assert.deepEqual(
      ir0.binds[0]?.listeners[0]?.routes.map((r) => r.key),
      ['ns/a/http/ns/web/0'],
    );
    assert.deepEqual(routeBodies(ir0), ['a0']);
    await until('ACK', () => acks.find((e) => e.nonce === responses[0]?.nonce));
    assert.deepEqual(srv.metrics().connected, { 'ns/a': 1 });
    // where each proxy stands is what the Gateway's Programmed condition follows
    assert.deepEqual(
      srv.proxyStates('ns/a').map((p) => p.state),
      ['acked'],
    );
    assert.deepEqual(srv.proxyStates('ns/b'), []);
    assert.equal(a.client.state, 'connected');

    // One resource changes: only it is sent.
    responses.length = 0;
    srv.setResources('ns/a', gatewayResources('ns/a', 8081, { '/a': 'a1' }));
    await until('second config', () => a.configs[1]);
    assert.deepEqual(
      responses.map((r) => [r.gateway, r.resources, r.removed]),
      [['ns/a', ['route/8081/ns/a/http/ns/web/0'], []]],
    );
    assert.deepEqual(routeBodies(a.configs[1]), ['a1']);
    // B changing sends nothing to A.
    srv.setResources('ns/b', gatewayResources('ns/b', 8082, { '/b': 'b1' }));
    srv.setResources('ns/a', gatewayResources('ns/a', 8081, { '/a': 'a1' }));
    assert.equal(responses.length, 1);

    // A policy body the standalone schema refuses: NACKed with the issue, the config stays.
    const bad: NamedResource = {
      name: 'policy/ns/bad/0',
      resource: { policy: { name: 'ns/bad', target: { route: 'ns/web' }, traffic: { cors: { nope: 1 } } } },
    };
    srv.setResources('ns/a', gatewayResources('ns/a', 8081, { '/a': 'a1' }, [bad]));
    const nack = await until('NACK', () => nacks[0]);
    assert.equal(nack.gateway, 'ns/a');
    assert.equal(nack.nonce, responses.at(-1)?.nonce);
    assert.match(nack.message, /^policy\/ns\/bad\/0: traffic\.cors\.nope: unknown field "nope"$/m);
    assert.equal(srv.metrics().nacksTotal, 1);
    const [nacked] = srv.proxyStates('ns/a');
    assert.equal(nacked?.state, 'nacked');
    assert.equal(nacked?.message, nack.message);
    assert.equal(a.configs.length, 2);
    assert.equal(a.client.version, a.configs[1]?.version);
    assert.equal(a.rejects.length, 1);
    // Removing the bad policy sends just the removal; the config is the good one again (same version).
    // The server does not answer a NACK by sending the same thing again: the next response after the
    // NACKed one is this removal (responses go out in order on the stream, so a resend would come first).
    const afterNack = responses.length;
    srv.setResources('ns/a', gatewayResources('ns/a', 8081, { '/a': 'a1' }));
    const removal = await until('the removal', () => responses[afterNack]);
    await until('ACK of the removal', () => acks.find((e) => e.nonce === removal.nonce));
    assert.equal(responses.length, afterNack + 1, 'nothing was sent between the NACK and the removal');
    assert.deepEqual(removal.resources, []);
    assert.deepEqual(removal.removed, ['policy/ns/bad/0']);
    assert.equal(srv.proxyStates('ns/a')[0]?.state, 'acked');
    // a Gateway change that sends this proxy nothing leaves it acknowledged at the new version
    srv.setResources('ns/a', gatewayResources('ns/a', 8081, { '/a': 'a1' }));
    assert.equal(srv.proxyStates('ns/a')[0]?.state, 'acked');
    responses.length = 0;
    assert.equal(a.configs.length, 2);

    // The controller goes away: the proxy keeps its config and retries.
    await srv.close();
    await until('backoff', () => a.client.state === 'backoff');
    assert.equal(a.client.version, a.configs[1]?.version);
    assert.ok(a.lines.some((l) => l.msg === 'xDS disconnected'));

    // A controller comes back on the same port with one route changed: the proxy reconnects with
    // the versions it holds and is sent only the difference.
    srv = await startXdsServer({ port, host: '127.0.0.1', mode: 'plaintext' });
    cleanups.push(() => srv.close());
    responses = events(srv, 'response');
    nacks = events(srv, 'nack');
    srv.setResources('ns/a', gatewayResources('ns/a', 8081, { '/a': 'a2' }));
    await until('resynced config', () => a.configs[2], 10_000);
    assert.deepEqual(routeBodies(a.configs[2]), ['a2']);
    assert.deepEqual(
      responses.map((r) => r.resources),
      [['route/8081/ns/a/http/ns/web/0']],
    );
    assert.equal(a.client.state, 'connected');
    assert.deepEqual(nacks, []);
  });

  test('a proxy of a Gateway the controller has not computed yet waits instead of getting nothing', async () => {
    const srv = await startXdsServer({ port: 0, host: '127.0.0.1', mode: 'plaintext' });
    cleanups.push(() => srv.close());
    const responses = events(srv, 'response');
    const c = proxy(srv.port, 'ns/c');
    await until('connect', () => srv.metrics().connected['ns/c'] === 1);
    srv.setResources('ns/c', gatewayResources('ns/c', 8083, { '/': 'c' }));
    const ir = await until('config', () => c.configs[0]);
    assert.deepEqual(routeBodies(ir), ['c']);
    // Had the server answered the subscription with an empty config, it would be the first response.
    assert.equal(responses.length, 1);
    assert.equal(c.configs.length, 1);
    assert.ok((responses[0]?.resources.length ?? 0) > 0, 'the first response carries the config');
  });

  test('retryNow: a proxy waiting out a long backoff connects at once (what SIGHUP does)', async () => {
    // Nothing listens yet: the first attempt fails and the next is 30-60 s away.
    const port = await freePort();
    const d = proxy(port, 'ns/d', { backoff: { initialMs: 60_000, maxMs: 60_000 } });
    await until('backoff', () => d.client.state === 'backoff');
    const wait = Number(d.lines.find((l) => l.msg === 'xDS disconnected')?.retryInMs);
    assert.ok(wait >= 30_000, `the next attempt is far away (${wait} ms)`);
    const srv = await startXdsServer({ port, host: '127.0.0.1', mode: 'plaintext' });
    cleanups.push(() => srv.close());
    srv.setResources('ns/d', gatewayResources('ns/d', 8084, { '/': 'd' }));
    assert.equal(d.client.retryNow(), true, 'waiting: it reconnects');
    const ir = await until('config long before the backoff ends', () => d.configs[0], 5000);
    assert.deepEqual(routeBodies(ir), ['d']);
    assert.equal(d.client.state, 'connected');
    assert.equal(d.client.retryNow(), false, 'connected: nothing to do');
    d.client.close();
    assert.equal(d.client.retryNow(), false, 'closed: nothing to do');
  });

  test('authentication: the token file is read on every connect; a refused token is UNAUTHENTICATED', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'bad-token\n');
    const seen: string[] = [];
    const srv = await startXdsServer({
      port: 0,
      host: '127.0.0.1',
      mode: 'plaintext',
      authenticate: async (token) => {
        seen.push(token);
        if (token === 'good-token') return { ok: true, gateway: 'ns/d' };
        if (token === 'other-gw') return { ok: true, gateway: 'ns/other' };
        return { ok: false, reason: 'token not recognised' };
      },
    });
    cleanups.push(() => srv.close());
    const rejects = events(srv, 'reject');
    srv.setResources('ns/d', gatewayResources('ns/d', 8084, { '/': 'd' }));
    const d = proxy(srv.port, 'ns/d', { tokenFile });
    await until('rejection', () => rejects[0]);
    assert.equal(rejects[0]?.code, 16 /* UNAUTHENTICATED */);
    assert.equal(rejects[0]?.reason, 'token not recognised');
    await until('client saw UNAUTHENTICATED', () =>
      d.lines.find((l) => l.msg === 'xDS disconnected' && /UNAUTHENTICATED/.test(String(l.reason))),
    );
    assert.equal(d.configs.length, 0);
    assert.deepEqual(srv.metrics().connected, {});

    // A token for another Gateway is refused too.
    writeFileSync(tokenFile, 'other-gw');
    await until('permission denied', () => rejects.find((r) => r.code === 7 /* PERMISSION_DENIED */));

    // The projected token rotates: the next reconnect reads and sends the new one.
    writeFileSync(tokenFile, 'good-token');
    const ir = await until('config after rotation', () => d.configs[0], 10_000);
    assert.deepEqual(routeBodies(ir), ['d']);
    assert.equal(seen.at(-1), 'good-token');
    assert.ok(seen.includes('bad-token'));
  });

  test('tls mode: a proxy that trusts the CA gets its config over TLS', async () => {
    const pki = await makeTestPki(['localhost']);
    cleanups.push(() => pki.cleanup());
    const cert = pki.servers.localhost as { certFile: string; keyFile: string };
    const srv = await startXdsServer({
      port: 0,
      host: '127.0.0.1',
      mode: 'tls',
      tls: { certFile: cert.certFile, keyFile: cert.keyFile },
    });
    cleanups.push(() => srv.close());
    srv.setResources('ns/t', gatewayResources('ns/t', 8085, { '/': 't' }));
    const t = proxy(srv.port, 'ns/t', { scheme: 'https', host: 'localhost', caFile: pki.caFile });
    const ir = await until('config over TLS', () => t.configs[0]);
    assert.deepEqual(routeBodies(ir), ['t']);
    // Speaking plaintext to the TLS port gets nowhere.
    const p = proxy(srv.port, 'ns/t');
    await until('plaintext refused', () => p.lines.find((l) => l.msg === 'xDS disconnected'));
    assert.equal(p.configs.length, 0);
  });

  test('"either" mode: plaintext and TLS proxies on the same port both get their config', async () => {
    const pki = await makeTestPki(['localhost']);
    cleanups.push(() => pki.cleanup());
    const cert = pki.servers.localhost as { certFile: string; keyFile: string };
    const srv = await startXdsServer({
      port: 0,
      host: '127.0.0.1',
      mode: 'either',
      tls: { certFile: cert.certFile, keyFile: cert.keyFile },
    });
    cleanups.push(() => srv.close());
    srv.setResources('ns/e', gatewayResources('ns/e', 8086, { '/': 'e' }));
    const secure = proxy(srv.port, 'ns/e', { scheme: 'https', host: 'localhost', caFile: pki.caFile });
    const plain = proxy(srv.port, 'ns/e');
    assert.deepEqual(routeBodies(await until('config over TLS', () => secure.configs[0])), ['e']);
    assert.deepEqual(routeBodies(await until('config over plaintext', () => plain.configs[0])), ['e']);
  });

  test('tls and either without a certificate are refused at start', async () => {
    await assert.rejects(startXdsServer({ port: 0, mode: 'tls' }), /needs tls\.certFile/);
    await assert.rejects(startXdsServer({ port: 0, mode: 'either' }), /needs tls\.certFile/);
  });
});
