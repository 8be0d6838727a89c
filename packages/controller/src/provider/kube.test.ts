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
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: api.url, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
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
