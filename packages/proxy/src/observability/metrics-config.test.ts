// config.metrics: labels added by CEL to the request metrics, metrics not served, and the rules.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { httpGet, startUpstream, type TestServer } from '@gw/testkit';
import { startProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../config/load.ts';
import { METRIC_NAMES } from './metric-names.ts';
import { ProxyMetrics } from './metrics.ts';

let up: TestServer;
before(async () => {
  up = await startUpstream('echo');
});
after(() => up.close());

const binds = () => `binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:
    - backends: [{host: "127.0.0.1:${up.port}"}]
`;

test('fields.add labels the request metrics by CEL; remove leaves metrics out; a reload without them restores both', async () => {
  const p = await startProxy(`config:
  metrics:
    remove: [gw_upstream_duration_seconds]
    fields:
      add: {team: 'request.headers["x-team"]', outcome: 'response.code >= 400 ? "error" : "ok"'}
${binds()}`);
  try {
    await httpGet(p.port(), '/a', { headers: { 'x-team': 'blue' } });
    await httpGet(p.port(), '/a', { headers: { 'x-team': 'blue' } });
    await httpGet(p.port(), '/status/404');
    const metrics = await p.metrics.registry.getMetricsAsJSON();
    const requests = metrics.find((m) => m.name === 'gw_requests_total');
    const blue = requests?.values.find((v) => v.labels.team === 'blue');
    assert.equal(blue?.value, 2);
    assert.equal(blue?.labels.outcome, 'ok');
    assert.equal(blue?.labels.status, '200');
    const none = requests?.values.find((v) => v.labels.status === '404');
    assert.equal(none?.labels.team, '', 'a label whose expression has no value is empty');
    assert.equal(none?.labels.outcome, 'error');
    const duration = metrics.find((m) => m.name === 'gw_request_duration_seconds');
    assert.ok(duration?.values.some((v) => v.labels.team === 'blue'));
    assert.equal(
      metrics.find((m) => m.name === 'gw_upstream_duration_seconds'),
      undefined,
      'removed metrics are not served',
    );

    await p.reload(binds());
    await httpGet(p.port(), '/a', { headers: { 'x-team': 'blue' } });
    const after = await p.metrics.registry.getMetricsAsJSON();
    const plain = after.find((m) => m.name === 'gw_requests_total')?.values ?? [];
    assert.deepEqual(
      plain.map((v) => Object.keys(v.labels).sort()),
      [['backend', 'gateway', 'listener', 'route', 'status']],
    );
    assert.ok(after.some((m) => m.name === 'gw_upstream_duration_seconds'));
  } finally {
    await p.close();
  }
});

test('frontendPolicies.metrics (GwPolicy frontend.metrics) labels the request metrics; config.metrics wins for a label both set', async () => {
  const p = await startProxy(`frontendPolicies:
  metrics:
    fields:
      add: {tenant: 'request.headers["x-tenant"]', env: '"from-frontend"'}
config:
  metrics:
    fields:
      add: {env: '"from-config"'}
${binds()}`);
  try {
    await httpGet(p.port(), '/a', { headers: { 'x-tenant': 'acme' } });
    const metrics = await p.metrics.registry.getMetricsAsJSON();
    const v = metrics
      .find((m) => m.name === 'gw_requests_total')
      ?.values.find((x) => x.labels.tenant === 'acme');
    assert.ok(v, 'a series labelled by the frontend policy');
    assert.equal(v.labels.env, 'from-config');
  } finally {
    await p.close();
  }
  const { ir } = loadConfigText(
    't.yaml',
    `frontendPolicies: {metrics: {fields: {add: {tenant: '"x"'}}}}\n${binds()}`,
    '.',
  );
  assert.deepEqual(ir.global.metrics, { labels: { tenant: '"x"' }, remove: [] });
  assert.throws(
    () =>
      loadConfigText(
        't.yaml',
        `frontendPolicies: {metrics: {fields: {add: {gateway: '"x"'}}}}\n${binds()}`,
        '.',
      ),
    /frontendPolicies\.metrics\.fields\.add\.gateway: "gateway" is a label gw sets itself/,
  );
});

test('the metric names config.metrics.remove accepts are the registry’s', async () => {
  const names = (await new ProxyMetrics().registry.getMetricsAsJSON()).map((m) => m.name).sort();
  assert.deepEqual(names, [...METRIC_NAMES].sort());
});

test('label names, gw’s own labels, unknown metrics and bad CEL are refused by field; histograms classic only', () => {
  const errors = (text: string) => {
    try {
      loadConfigText('t.yaml', `${text}${binds()}`, '.');
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    assert.fail('expected a config error');
  };
  const msg = errors(`config:
  metrics:
    remove: [agentgateway_requests_total]
    fields:
      add: {"a.b": '"x"', route: '"y"', ok: 'nope('}
`);
  assert.match(msg, /config\.metrics\.fields\.add\["a\.b"\]: "a\.b" is not a Prometheus label name/);
  assert.match(msg, /config\.metrics\.fields\.add\.route: "route" is a label gw sets itself/);
  assert.match(msg, /config\.metrics\.fields\.add\.ok: invalid CEL/);
  assert.match(
    msg,
    /config\.metrics\.remove\[0\]: no metric named "agentgateway_requests_total" \(gw's: gw_requests_total/,
  );
  assert.match(
    errors('config: {histograms: both}\n'),
    /config\.histograms native .* is not supported by this build of gw yet/,
  );
  loadConfigText('t.yaml', `config: {histograms: classic}\n${binds()}`, '.');
});
