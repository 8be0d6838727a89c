// Passive health on a tcp route's named backend: a connection that cannot be made counts as an
// unhealthy answer, so a backend that refuses connections is ejected and the route's connections go
// to the one that answers; /config_dump shows it. The HTTP parts of health are refused by name.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { CLOSED_PORT, tcpRoundTrip } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { configIssues } from '../config/test-support.ts';

let echo: net.Server;
let echoPort: number;
let deadPort: number;
let proxy: TestProxy;

before(async () => {
  echo = net.createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as net.AddressInfo).port;
  // a port nothing listens on: every connection is refused
  deadPort = CLOSED_PORT;
  proxy = await startProxy(config('{eviction: {duration: 30s}}'));
});

after(async () => {
  await proxy?.close();
  await new Promise((r) => echo?.close(r));
});

function config(health: string): string {
  return `backends:
- name: refusing
  host: "127.0.0.1:${deadPort}"
  policies: {health: ${health}}
binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - protocol: TCP
    tcpRoutes:
    - backends:
      - backend: refusing
      - host: "127.0.0.1:${echoPort}"
`;
}

const roundTrip = () => tcpRoundTrip(proxy.port());

test('a backend that refuses connections is ejected; the route goes to the one that answers', async () => {
  let refused = 0;
  for (let i = 0; i < 100 && refused === 0; i++) if ((await roundTrip()) === '') refused++;
  assert.equal(refused, 1, 'one connection met the refusing backend');
  for (let i = 0; i < 20; i++) assert.equal(await roundTrip(), 'ping', `connection ${i} after the ejection`);
  const h = proxy.plane.endpointHealth().find((e) => e.backend === 'refusing');
  assert.equal(h?.healthy, false);
  assert.equal(h?.lastEjection, 'connection failed');
  assert.equal(h?.endpoint, `127.0.0.1:${deadPort}`);
});

test("health's HTTP parts are refused on a tcp route backend, by name", () => {
  const issues = (health: string) => configIssues(config(health));
  assert.match(
    issues('{active: {path: /healthz}}'),
    /tcpRoutes\[0\]\.backends\[0\]\.backend: backend "refusing" sets health\.active, whose HTTP probes a tcp route backend does not take/,
  );
  assert.match(
    issues("{unhealthyExpression: 'response.code == 500', eviction: {}}"),
    /backend "refusing" sets health\.unhealthyExpression, which reads an HTTP response/,
  );
  assert.equal(issues('{eviction: {consecutiveFailures: 2, healthThreshold: 0.5}}'), '');
});
