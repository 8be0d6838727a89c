// The provider's "synced": only once every kind's first list is in its cache. A restarted controller
// that reconciled before that pruned every Gateway's proxy objects and retracted its config, because
// client-node's ListWatch says 'connect' before it lists. Here the lists come from a small API server
// of the test's own that answers them late, so the order cannot hide the difference.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeProvider, type WatchedKind } from './kube.ts';

const GA = 'gateway.networking.k8s.io';
const KINDS: WatchedKind[] = [
  { apiVersion: `${GA}/v1`, kind: 'Gateway', path: `/apis/${GA}/v1/gateways` },
  { apiVersion: 'v1', kind: 'Service', path: '/api/v1/services' },
];

/** A KubeConfig for the test's API server at `server` (plain HTTP, no user). */
function kubeConfigFor(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

/** Discovery, lists answered after `listDelayMs`, and watches that stay open without events. */
async function slowApiServer(listDelayMs: number): Promise<{ url: string; close(): void }> {
  const json = (res: http.ServerResponse, body: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === `/apis/${GA}/v1`)
      return json(res, {
        kind: 'APIResourceList',
        groupVersion: `${GA}/v1`,
        resources: [{ name: 'gateways', namespaced: true, kind: 'Gateway', verbs: ['list', 'watch'] }],
      });
    if (url.pathname === '/api/v1')
      return json(res, {
        kind: 'APIResourceList',
        groupVersion: 'v1',
        resources: [{ name: 'services', namespaced: true, kind: 'Service', verbs: ['list', 'watch'] }],
      });
    if (url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      return; // open, quiet
    }
    const items =
      url.pathname === `/apis/${GA}/v1/gateways`
        ? [{ metadata: { name: 'edge', namespace: 'default', resourceVersion: '7' }, spec: {} }]
        : [];
    setTimeout(() => json(res, { kind: 'List', metadata: { resourceVersion: '7' }, items }), listDelayMs);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

test('synced, and the first change, come only once every kind’s list is in the cache', async (t) => {
  const api = await slowApiServer(300);
  t.after(() => api.close());
  const kc = kubeConfigFor(api.url);
  const provider = new KubeProvider(kc, KINDS);
  const seen: { event: string; synced: boolean; gateways: number }[] = [];
  const record = (event: string) => () =>
    seen.push({
      event,
      synced: provider.synced(),
      gateways: provider.snapshot().filter((o) => o.kind === 'Gateway').length,
    });
  provider.on('change', record('change'));
  provider.on('synced', record('synced'));
  t.after(() => provider.stop());
  const started = provider.start();
  // before the lists are answered: not synced, nothing to reconcile
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(provider.synced(), false);
  assert.equal(seen.length, 0, JSON.stringify(seen));
  await started;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(provider.synced(), true);
  // a change while another kind is still listing is fine: the controller reconciles only once synced
  const whenSynced = seen.filter((s) => s.synced);
  assert.ok(whenSynced.length > 0, JSON.stringify(seen));
  assert.ok(
    whenSynced.every((s) => s.gateways === 1),
    `synced with the Gateway not yet listed: ${JSON.stringify(seen)}`,
  );
  assert.equal(seen.filter((s) => s.event === 'synced').length, 1);
});

// A cluster may lack an optional kind's CRD (an older Gateway API release, the standard channel):
// the provider must not wait for a list that cannot succeed (the controller would never reconcile).
// It counts the kind as listed with nothing in it, says so once, and picks the CRD up once installed.
test('an optional kind the API server does not serve is synced empty, and read once its CRD is installed', async (t) => {
  let served = false;
  const watches: string[] = [];
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const notFound = { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === `/apis/${GA}/v1`)
      return json(res, 200, {
        kind: 'APIResourceList',
        groupVersion: `${GA}/v1`,
        resources: [
          { name: 'gateways', namespaced: true, kind: 'Gateway', verbs: ['list', 'watch'] },
          ...(served
            ? [{ name: 'listenersets', namespaced: true, kind: 'ListenerSet', verbs: ['list', 'watch'] }]
            : []),
        ],
      });
    const isSets = url.pathname === `/apis/${GA}/v1/listenersets`;
    if (url.searchParams.get('watch') === 'true') {
      watches.push(url.pathname);
      if (isSets && !served) return json(res, 404, notFound);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      return; // open, quiet
    }
    if (isSets && !served) return json(res, 404, notFound);
    const item = (name: string) => ({
      metadata: { name, namespace: 'default', resourceVersion: '7' },
      spec: {},
    });
    json(res, 200, {
      kind: 'List',
      metadata: { resourceVersion: '7' },
      items: isSets ? [item('extra')] : [item('edge')],
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const kc = kubeConfigFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const kinds: WatchedKind[] = [
    KINDS[0] as WatchedKind,
    { apiVersion: `${GA}/v1`, kind: 'ListenerSet', path: `/apis/${GA}/v1/listenersets`, optional: true },
  ];
  const provider = new KubeProvider(kc, kinds, { absentRecheckMs: 200 });
  const events: string[] = [];
  provider.on('absent', (kind) => events.push(`absent ${kind}`));
  provider.on('present', (kind) => events.push(`present ${kind}`));
  provider.on('error', (kind, message) => events.push(`error ${kind} ${message}`));
  t.after(() => provider.stop());
  const synced = new Promise<void>((r) => provider.once('synced', () => r()));
  await provider.start();
  await synced;
  assert.deepEqual(
    provider.snapshot().map((o) => `${o.kind}/${o.metadata.name}`),
    ['Gateway/edge'],
  );
  // asked again at the steady pace, said once, never an error
  const deadline = Date.now() + 10_000;
  while (watches.filter((w) => w.endsWith('/listenersets')).length < 3 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(events, ['absent ListenerSet']);
  served = true;
  while (!provider.snapshot().some((o) => o.kind === 'ListenerSet') && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(
    provider.snapshot().map((o) => `${o.kind}/${o.metadata.name}`),
    ['Gateway/edge', 'ListenerSet/extra'],
  );
  assert.deepEqual(events, ['absent ListenerSet', 'present ListenerSet']);
});

test('a required kind the API server does not serve keeps the provider unsynced', async (t) => {
  const server = http.createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const kc = kubeConfigFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const provider = new KubeProvider(kc, [KINDS[0] as WatchedKind], { absentRecheckMs: 50 });
  const errors: string[] = [];
  provider.on('error', (kind, message) => errors.push(`${kind}: ${message}`));
  t.after(() => provider.stop());
  await provider.start();
  const deadline = Date.now() + 5_000;
  while (errors.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(provider.synced(), false);
  assert.match(errors[0] ?? '', /^Gateway: .*HTTP 404/, JSON.stringify(errors));
});
