import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '@gw/api';
import {
  CLOSED_PORT,
  type RateLimitService,
  sameRateLimitWindow,
  startRateLimitService,
  startUpstream,
  type TestServer,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { request } from 'undici';
import { loadConfigText } from '../../config/load.ts';

// The real envoyproxy/ratelimit's config: per-minute limits in domain gw. A descriptor without a value
// (user, model) counts each distinct value separately.
const SERVICE_CONFIG = `
domain: gw
descriptors:
  - key: path
    value: /limited
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: path
    value: /multi
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: path
    value: /own-headers
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /hung-open
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: path
    value: /by-backend
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: path
    value: /by-service
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: model
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: path
    value: /cost
    rate_limit: {unit: minute, requests_per_unit: 5}
`;

let service: RateLimitService;
let ownHeaders: RateLimitService;
let up: TestServer;
let proxy: TestProxy;
before(async () => {
  [service, ownHeaders] = await Promise.all([
    startRateLimitService({ config: SERVICE_CONFIG }),
    // Same limits, but the service's own headers under other names, to tell them from the gateway's.
    startRateLimitService({
      config: SERVICE_CONFIG,
      headers: { limit: 'x-rls-limit', remaining: 'x-rls-remaining', reset: 'x-rls-reset' },
    }),
  ]);
  // An LLM-shaped answer (110 tokens of usage, and what it cost in a header) on /tokens and
  // /llm-cost, an echo elsewhere.
  up = await startUpstream('upstream', (req, res) => {
    if (!/^\/(tokens|llm-cost)/.test(req.url ?? '')) return;
    res.writeHead(200, { 'content-type': 'application/json', 'x-cost': '5' });
    res.end(JSON.stringify({ usage: { prompt_tokens: 60, completion_tokens: 50, total_tokens: 110 } }));
  });
  const dead = `127.0.0.1:${CLOSED_PORT}`;
  const route = (name: string, policy: string) => `
    - name: ${name}
      matches: [{path: {pathPrefix: /${name}}}]
      policies:
        remoteRateLimit: ${policy}
      backends: [{host: "127.0.0.1:${up.port}"}]`;
  const byPath = `[{entries: [{key: path, value: request.path}]}]`;
  const byUser = `[{entries: [{key: user, value: 'request.headers["x-user"]'}]}]`;
  // A limit per request: the unit and the number from headers (a unit the service does not know fails).
  const quota = '{"unit": request.headers["x-unit"], "requestsPerUnit": int(request.headers["x-quota"])}';
  const rl = (descriptors: string, extra = '', host = service.host) =>
    `{host: "${host}", domain: gw, timeout: 2s, descriptors: ${descriptors}${extra}}`;
  proxy = await startProxy(`binds:
- port: 0
  address: 127.0.0.1
  listeners:
  - routes:${route('limited', rl(byPath))}${route('per-user', rl(byUser))}${route(
    'multi',
    rl(`[{entries: [{key: path, value: request.path}]}, ${byUser.slice(1, -1)}]`),
  )}${route('own-headers', rl(byPath, '', ownHeaders.host))}${route(
    'tokens',
    rl(`[{entries: [{key: model, value: 'request.headers["x-model"]'}], type: tokens}]`),
  )}${route('down-default', `{host: "${dead}", domain: gw, descriptors: ${byPath}}`)}${route(
    'down-open',
    `{host: "${dead}", domain: gw, failureMode: failOpen, descriptors: ${byPath}}`,
  )}${route('down-closed', `{host: "${dead}", domain: gw, failureMode: failClosed, descriptors: ${byPath}}`)}${route(
    'hung-open',
    `{host: "${service.host}", domain: gw, timeout: 150ms, failureMode: failOpen, descriptors: ${byPath}}`,
  )}${route(
    'hung-closed',
    `{host: "${service.host}", domain: gw, timeout: 150ms, failureMode: failClosed, descriptors: ${byUser}}`,
  )}${route('by-backend', `{backend: ratelimit, domain: gw, timeout: 2s, descriptors: ${byPath}}`)}${route(
    'by-service',
    `{service: {name: infra/ratelimit, port: 8081}, domain: gw, timeout: 2s, descriptors: ${byPath}}`,
  )}${route(
    'cost',
    rl(`[{entries: [{key: path, value: request.path}], cost: 'int(request.headers["x-cost"])'}]`),
  )}${route(
    'override',
    rl(`[{entries: [{key: tenant, value: 'request.headers["x-tenant"]'}], limitOverride: '${quota}'}]`),
  )}${route(
    'llm-cost',
    rl(
      `[{entries: [{key: budget, value: 'request.headers["x-tenant"]'}], type: tokens, limitOverride: '{"unit": "minute", "requestsPerUnit": 12}', cost: 'int(response.headers["x-cost"])'}]`,
    ),
  )}${route(
    'peek',
    rl(
      `[{entries: [{key: budget, value: 'request.headers["x-tenant"]'}], limitOverride: '{"unit": "minute", "requestsPerUnit": 12}', cost: '0'}]`,
    ),
  )}
backends:
- {name: ratelimit, host: "${service.host}"}
services:
- {name: ratelimit, namespace: infra, hostname: ratelimit, vips: [], ports: {"8081": ${service.host.split(':')[1]}}}
workloads:
- {name: ratelimit-0, namespace: infra, workloadIps: [127.0.0.1], services: {"infra/ratelimit": {}}}
`);
});
after(async () => {
  await proxy?.close();
  await up?.close();
  await service?.close();
  await ownHeaders?.close();
});

async function call(path: string, headers: Record<string, string> = {}) {
  const r = await request(proxy.url(path), { headers });
  return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
}

describe('remoteRateLimit against the real envoyproxy/ratelimit with Redis', () => {
  test('N requests pass with x-ratelimit-* headers, then 429 with x-ext-ratelimited', async () => {
    await sameRateLimitWindow();
    for (const remaining of ['2', '1', '0']) {
      const r = await call('/limited');
      assert.equal(r.status, 200, service.logs());
      assert.equal(r.headers['x-ratelimit-limit'], '3, 3;w=60');
      assert.equal(r.headers['x-ratelimit-remaining'], remaining);
      const reset = Number(r.headers['x-ratelimit-reset']);
      assert.ok(reset >= 1 && reset <= 60, `reset ${reset}`);
      assert.equal(r.headers['x-ext-ratelimited'], undefined, 'only on 429s');
    }
    const over = await call('/limited');
    assert.equal(over.status, 429);
    assert.equal(over.text, 'rate limit exceeded\n');
    assert.match(String(over.headers['x-ratelimit-limit']), /;w=60/);
    assert.equal(over.headers['x-ratelimit-remaining'], '0');
    assert.equal(over.headers['x-ext-ratelimited'], 'true');
    assert.equal(up.seen.filter((s) => s.url === '/limited').length, 3, 'the 429 never reached the upstream');
  });

  test('a service by named backend (agentgateway’s backend: <name>) counts the same way', async () => {
    await sameRateLimitWindow();
    for (const remaining of ['2', '1', '0'])
      assert.equal((await call('/by-backend')).headers['x-ratelimit-remaining'], remaining);
    assert.equal((await call('/by-backend')).status, 429);
  });

  test('a service by Service reference (a Service of services) counts the same way', async () => {
    await sameRateLimitWindow();
    for (const remaining of ['2', '1', '0'])
      assert.equal((await call('/by-service')).headers['x-ratelimit-remaining'], remaining);
    assert.equal((await call('/by-service')).status, 429);
  });

  test('descriptors come from CEL: each header value has its own counter', async () => {
    await sameRateLimitWindow();
    const alice = { 'x-user': 'alice' };
    assert.equal((await call('/per-user', alice)).status, 200);
    assert.equal((await call('/per-user', alice)).status, 200);
    assert.equal((await call('/per-user', alice)).status, 429);
    const bob = await call('/per-user', { 'x-user': 'bob' });
    assert.equal(bob.status, 200, 'bob is counted apart from alice');
    assert.equal(bob.headers['x-ratelimit-remaining'], '1');
    assert.equal(bob.headers['x-ratelimit-limit'], '2, 2;w=60');
  });

  test('a descriptor whose CEL fails is dropped; with none left there is no check', async () => {
    await sameRateLimitWindow();
    // Both: the tightest limit is reported, and every limit appears in the quota policy.
    const both = await call('/multi', { 'x-user': 'carol' });
    assert.equal(both.status, 200);
    assert.equal(both.headers['x-ratelimit-limit'], '2, 3;w=60, 2;w=60');
    assert.equal(both.headers['x-ratelimit-remaining'], '1');
    // No x-user: only the path descriptor goes out.
    const pathOnly = await call('/multi');
    assert.equal(pathOnly.status, 200);
    assert.equal(pathOnly.headers['x-ratelimit-limit'], '3, 3;w=60');
    assert.equal(pathOnly.headers['x-ratelimit-remaining'], '1');
    // Nothing to count this request under: forwarded without asking.
    for (let i = 0; i < 4; i++) {
      const r = await call('/per-user');
      assert.equal(r.status, 200);
      assert.equal(r.headers['x-ratelimit-limit'], undefined);
    }
  });

  test("the service's response_headers_to_add reach the client, on 200s and on the 429", async () => {
    await sameRateLimitWindow();
    const first = await call('/own-headers');
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-rls-limit'], '2', 'the service sends only the number');
    assert.equal(first.headers['x-rls-remaining'], '1');
    assert.ok(first.headers['x-rls-reset']);
    assert.equal(first.headers['x-ratelimit-limit'], '2, 2;w=60', 'the gateway adds the window');
    assert.equal((await call('/own-headers')).status, 200);
    const over = await call('/own-headers');
    assert.equal(over.status, 429);
    assert.equal(over.headers['x-rls-remaining'], '0');
    assert.equal(over.headers['x-ext-ratelimited'], 'true');
  });

  test('type tokens: LLM usage is counted once the response ends; later requests get 429', async () => {
    await sameRateLimitWindow(10_000);
    const model = { 'x-model': 'm1' };
    const first = await call('/tokens', model); // 110 tokens against a budget of 100
    assert.equal(first.status, 200);
    let status = 200;
    for (let i = 0; i < 40 && status === 200; i++) {
      await sleep(25);
      status = (await call('/tokens', model)).status;
    }
    assert.equal(status, 429, 'the usage was debited after the first response');
    assert.equal(
      (await call('/tokens', { 'x-model': 'm2' })).status,
      200,
      'another model has its own budget',
    );
  });
});

describe('descriptor cost and limitOverride', () => {
  test('cost: each request counts what its CEL says; 0 asks without counting; a failed cost drops the descriptor', async () => {
    await sameRateLimitWindow();
    const cost = async (n: string) => await call('/cost', { 'x-cost': n });
    const two = await cost('2');
    assert.equal(two.status, 200, service.logs());
    assert.equal(two.headers['x-ratelimit-limit'], '5, 5;w=60');
    assert.equal(two.headers['x-ratelimit-remaining'], '3');
    assert.equal((await cost('0')).headers['x-ratelimit-remaining'], '3', 'a cost of 0 only asks');
    assert.equal((await cost('3')).headers['x-ratelimit-remaining'], '0');
    const over = await cost('1');
    assert.equal(over.status, 429);
    assert.equal(over.headers['x-ext-ratelimited'], 'true');
    // Not a whole number from 0 up: the descriptor is left out, and with it the check.
    for (const bad of ['-1', 'many']) {
      const r = await cost(bad);
      assert.equal(r.status, 200, bad);
      assert.equal(r.headers['x-ratelimit-limit'], undefined, bad);
    }
    const none = await call('/cost');
    assert.equal(none.status, 200);
    assert.equal(none.headers['x-ratelimit-limit'], undefined);
  });

  test('limitOverride: the service applies the limit the CEL map names, to a key its config does not have', async () => {
    await sameRateLimitWindow();
    const as = (tenant: string, quota: string, unit = 'minute') =>
      call('/override', { 'x-tenant': tenant, 'x-quota': quota, 'x-unit': unit });
    for (const remaining of ['1', '0']) {
      const r = await as('acme', '2');
      assert.equal(r.status, 200, service.logs());
      assert.equal(r.headers['x-ratelimit-limit'], '2, 2;w=60');
      assert.equal(r.headers['x-ratelimit-remaining'], remaining);
    }
    assert.equal((await as('acme', '2')).status, 429);
    const hourly = await as('globex', '1000', 'Hour');
    assert.equal(hourly.status, 200);
    assert.equal(hourly.headers['x-ratelimit-limit'], '1000, 1000;w=3600', 'the unit in any case');
    // A unit the service does not know, or no number: the descriptor is left out, nothing is asked.
    for (const [quota, unit] of [
      ['2', 'fortnight'],
      ['-2', 'minute'],
    ] as const) {
      const r = await as('acme', quota, unit);
      assert.equal(r.status, 200, `${quota} per ${unit}`);
      assert.equal(r.headers['x-ratelimit-limit'], undefined);
    }
  });

  test('type tokens with a cost: the response’s own figure is debited under the overridden limit', async () => {
    await sameRateLimitWindow(15_000);
    const tenant = { 'x-tenant': `t${Date.now()}` };
    // The peek route asks about the same counter with a cost of 0: it reads without counting.
    const remainingAfterDebit = async (want: string) => {
      let got: string | undefined;
      for (let i = 0; i < 100 && got !== want; i++) {
        if (i > 0) await sleep(20);
        got = String((await call('/peek', tenant)).headers['x-ratelimit-remaining']);
      }
      assert.equal(got, want, 'the debit after the response');
    };
    // Each answer carries 110 tokens of usage but says it cost 5: the check takes 1, the debit 4 more.
    for (const remaining of ['7', '2']) {
      const r = await call('/llm-cost', tenant);
      assert.equal(r.status, 200, service.logs());
      assert.equal(r.headers['x-ratelimit-limit'], '12, 12;w=60');
      await remainingAfterDebit(remaining);
    }
    assert.equal((await call('/llm-cost', tenant)).status, 200, 'the request that crosses the limit passes');
    await remainingAfterDebit('0');
    const over = await call('/llm-cost', tenant);
    assert.equal(over.status, 429, 'then the budget is spent');
  });
});

describe('when the service fails', () => {
  test('down: failOpen lets requests pass; failClosed, the default (as agentgateway), answers 500', async () => {
    const r = await call('/down-open');
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-ratelimit-limit'], undefined);
    for (const path of ['/down-default', '/down-closed']) {
      const closed = await call(path);
      assert.equal(closed.status, 500, path);
      assert.equal(closed.text, 'rate limit service unavailable\n');
      assert.equal(closed.headers['x-ext-ratelimited'], undefined);
    }
  });

  test('no answer within the timeout is a failure too; the service is used again once it answers', async () => {
    // The service answers before it is frozen.
    const before = await call('/hung-open');
    assert.equal(before.status, 200, service.logs());
    await service.pause();
    try {
      let t = Date.now();
      const open = await call('/hung-open');
      assert.equal(open.status, 200);
      assert.equal(open.headers['x-ratelimit-limit'], undefined);
      assert.ok(Date.now() - t < 1_500, `answered after ${Date.now() - t}ms`);
      t = Date.now();
      const closed = await call('/hung-closed', { 'x-user': 'dave' });
      assert.equal(closed.status, 500);
      assert.ok(Date.now() - t < 1_500, `answered after ${Date.now() - t}ms`);
    } finally {
      service.resume();
    }
    // The resumed service first works through what queued up while it was frozen.
    // A new user per try: a try that timed out may still have been counted.
    let back = await call('/hung-closed', { 'x-user': 'erin0' });
    for (let i = 1; i < 30 && back.status !== 200; i++) {
      await sleep(100);
      back = await call('/hung-closed', { 'x-user': `erin${i}` });
    }
    assert.equal(back.status, 200, service.logs());
    assert.equal(back.headers['x-ratelimit-limit'], '2, 2;w=60');
  });
});

describe('config', () => {
  const issues = (policy: string) => {
    try {
      loadConfigText(
        't.yaml',
        `binds: [{port: 0, listeners: [{routes: [{policies: {remoteRateLimit: ${policy}}, backends: [{host: "a:1"}]}]}]}]`,
        process.cwd(),
      );
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.issues.map((i) => `${i.path}: ${i.message}`);
    }
    assert.fail('config was accepted');
  };

  test('CEL errors point at the entry', () => {
    const [got] = issues(
      `{host: "a:1", domain: gw, descriptors: [{entries: [{key: k, value: '"x"'}]}, {entries: [{key: a, value: "request.path =="}]}]}`,
    );
    assert.match(
      got!,
      /^binds\[0\]\.listeners\[0\]\.routes\[0\]\.policies\.remoteRateLimit\.descriptors\[1\]\.entries\[0\]\.value: invalid CEL/,
    );
  });

  test('CEL errors in cost and limitOverride point at the field', () => {
    const got = issues(
      `{host: "a:1", domain: gw, descriptors: [{entries: [{key: k, value: '"x"'}], cost: "1 +", limitOverride: "{"}]}`,
    );
    const at = 'binds[0].listeners[0].routes[0].policies.remoteRateLimit.descriptors[0]';
    assert.ok(
      got.some((g) => g.startsWith(`${at}.cost: invalid CEL`)),
      got.join('\n'),
    );
    assert.ok(got.some((g) => g.startsWith(`${at}.limitOverride: invalid CEL`)));
  });

  test('domain, host and at least one descriptor with one entry are required', () => {
    assert.ok(issues(`{host: "a:1", descriptors: [{entries: [{key: k, value: '"x"'}]}]}`).length > 0);
    assert.ok(
      issues(`{host: "nope", domain: gw, descriptors: [{entries: [{key: k, value: '"x"'}]}]}`).length > 0,
    );
    assert.ok(issues(`{host: "a:1", domain: gw, descriptors: [{entries: []}]}`).length > 0);
    assert.ok(issues(`{host: "a:1", domain: gw, descriptors: []}`).length > 0);
  });
});
