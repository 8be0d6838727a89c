// Errors in the client's own protocol, as a real gRPC client (grpc-js) sees them from the gateway.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type Client,
  credentials,
  Metadata,
  makeGenericClientConstructor,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { CLOSED_PORT } from '@gw/testkit';
import { ECHO_SERVICE, type EchoSay } from '@gw/testkit/grpc-echo';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';

let proxy: TestProxy;
let client: Client & { say: EchoSay };
let closedPort: number;

before(async () => {
  // A port nothing listens on: the upstream connect error.
  closedPort = CLOSED_PORT;
  const route = (name: string, policies: string) => `    - name: ${name}
      matches: [{path: {exact: /test.Echo/Say}, headers: [{name: x-case, value: {exact: ${name}}}]}]
      policies: ${policies}
      backends: [{host: "127.0.0.1:${closedPort}"}]`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - name: grpc
    routes:
${route('keyed', '{apiKey: {keys: {alice: k-123}}}')}
${route('limited', '{localRateLimit: [{maxTokens: 1, tokensPerFill: 1, fillInterval: 1h}]}')}
${route('down', '{}')}
`);
  const Ctor = makeGenericClientConstructor(ECHO_SERVICE, 'Echo');
  client = new Ctor(`127.0.0.1:${proxy.port()}`, credentials.createInsecure()) as unknown as typeof client;
});

after(async () => {
  client.close();
  await proxy.close();
});

function call(kase: string): Promise<ServiceError | null> {
  const md = new Metadata();
  md.set('x-case', kase);
  return new Promise((resolve) => client.say(Buffer.from('ping'), md, (err) => resolve(err)));
}

test('gRPC clients get gateway errors as gRPC statuses, with the reason as the message', async () => {
  const missingKey = await call('keyed');
  assert.equal(missingKey?.code, status.UNAUTHENTICATED);
  assert.equal(missingKey?.details, 'API key is missing');

  await call('limited'); // takes the one token
  const limited = await call('limited');
  assert.equal(limited?.code, status.RESOURCE_EXHAUSTED);
  assert.equal(limited?.details, 'rate limit exceeded');

  const down = await call('down');
  assert.equal(down?.code, status.UNAVAILABLE);
  assert.match(down?.details ?? '', /upstream connect error/);

  const noRoute = await call('nowhere');
  assert.equal(noRoute?.code, status.UNIMPLEMENTED);
  assert.equal(noRoute?.details, 'route not found');
});

test('the access log shows the answer a gRPC client got (HTTP 200) and the gateway error behind it', async () => {
  await call('keyed');
  const rec = proxy.accessLog.findLast((r) => r.route === 'bind/0/grpc/keyed');
  assert.equal(rec?.['http.status'], 200);
  assert.equal(rec?.error, 'API key is missing');
});

test('a plain HTTP client on the same route still gets a text error', async () => {
  const res = await request(proxy.url('/test.Echo/Say'), { method: 'POST', headers: { 'x-case': 'keyed' } });
  assert.equal(res.statusCode, 401);
  assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(await res.body.text(), 'API key is missing\n');
});
