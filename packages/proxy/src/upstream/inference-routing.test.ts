// inferenceRouting on a `service` backend (agentgateway's standalone EPP shape): the official `openai`
// client through gw to fake OpenAI model servers (the Service's workloads), an endpoint picker on a
// real ext_proc gRPC server choosing each request's endpoint by the protocol of the Gateway API
// Inference Extension (testkit/endpoint-picker.ts, a protocol-level stand-in for the reference EPP).
// The picker sees the whole body before it answers, the request and the response (streamed too) go
// through it, the endpoint it names gets the request, a client cannot name one itself, validated mode
// refuses an address that is not an endpoint and passthrough dials it, a retry takes the next address
// it named, and the picker refusing, failing or talking nonsense is a clear error.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FAKE_REPLY, FAKE_STREAM_REPLY, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { type EndpointPicker, type PickAnswer, startEndpointPicker } from '@gw/testkit/endpoint-picker';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { request } from 'undici';
import WebSocket, { WebSocketServer } from 'ws';
import { loadConfigText } from '../config/load.ts';
import { configIssues } from '../config/test-support.ts';
import { parseDestinations } from './backends/service/index.ts';

const NAMES = ['m1', 'm2', 'm3'] as const;
type Name = (typeof NAMES)[number];
let servers: Record<Name, FakeOpenAI>;
let picker: EndpointPicker;
/** What the picker answers for a request's model (each test sets it). */
let choose: (model: string | undefined) => PickAnswer = () => undefined;
let proxy: TestProxy;
/** A port nothing listens on (an endpoint that is down). */
let downPort: number;

const address = (n: Name) => `127.0.0.1:${servers[n].port}`;

before(async () => {
  servers = {
    m1: await startFakeOpenAI({ name: 'm1' }),
    m2: await startFakeOpenAI({ name: 'm2' }),
    m3: await startFakeOpenAI({ name: 'm3' }),
  };
  const down = await startFakeOpenAI({ name: 'down' });
  downPort = down.port;
  await down.close();
  picker = await startEndpointPicker((r) =>
    choose(typeof r.json?.model === 'string' ? r.json.model : undefined),
  );
  // m1 and m2 are the Service's endpoints; the down one is a workload of capacity 0 (none), m3 none
  proxy = await startProxy(`config:
  adminAddr: "off"
services:
- {name: my-model, namespace: default, hostname: my-model, vips: [], ports: {"8000": 8000}}
- {name: epp-only, namespace: default, hostname: epp-only, vips: [], ports: {"8000": 8000}}
- {name: epp, namespace: gw-system, hostname: epp, vips: [], ports: {"9002": ${picker.port}}}
workloads:
- {name: epp-1, namespace: gw-system, workloadIps: [127.0.0.1], services: {"gw-system/epp": {}}}
- {name: m1, namespace: default, workloadIps: [127.0.0.1], services: {"default/my-model": {"8000": ${servers.m1.port}}}}
- {name: m2, namespace: default, workloadIps: [127.0.0.1], services: {"default/my-model": {"8000": ${servers.m2.port}}}}
- {name: down, namespace: default, workloadIps: [127.0.0.1], capacity: 0, services: {"default/my-model": {"8000": ${downPort}}}}
binds:
- port: 0
  listeners:
  - routes:
    - name: validated
      matches: [{path: {pathPrefix: /v1}}]
      backends:
      - service: {name: default/my-model, port: 8000}
        policies:
          inferenceRouting:
            endpointPicker: {host: ${picker.host}}
    - name: passthrough
      matches: [{path: {pathPrefix: /pass/v1}}]
      policies:
        urlRewrite: {path: {prefix: /v1}}
        retry: {attempts: 1, codes: [503]}
      backends:
      - service: {name: default/epp-only, port: 8000}
        policies:
          inferenceRouting:
            endpointPicker: {host: ${picker.host}}
            destinationMode: passthrough
    - name: picker-by-service
      matches: [{path: {pathPrefix: /by-service/v1}}]
      policies:
        urlRewrite: {path: {prefix: /v1}}
      backends:
      - service: {name: default/my-model, port: 8000}
        policies:
          inferenceRouting:
            endpointPicker: {service: {name: gw-system/epp, port: 9002}}
`);
});

after(async () => {
  await proxy?.close();
  await picker?.close();
  await Promise.all(Object.values(servers ?? {}).map((s) => s.close()));
});

const client = (path = '/v1', headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey: 'sk-test', baseURL: proxy.url(path), maxRetries: 0, defaultHeaders: headers });
const messages = [{ role: 'user' as const, content: 'Hello!' }];

/** How many requests each model server got while `fn` ran. */
async function served(fn: () => Promise<unknown>): Promise<Record<Name, number>> {
  const before = NAMES.map((n) => servers[n].seen.length);
  await fn();
  return Object.fromEntries(
    NAMES.map((n, i) => [n, servers[n].seen.length - (before[i] as number)]),
  ) as Record<Name, number>;
}

describe('validated (default): the picked endpoint must be one of the Service', () => {
  test('the picker reads the whole body and its endpoint gets the chat completion; the response goes through it', async () => {
    choose = (model) => (model === 'want-m2' ? address('m2') : address('m1'));
    const asked = picker.asked.length;
    let headers: Headers | undefined;
    const got = await served(async () => {
      const { data, response } = await client()
        .chat.completions.create({ model: 'want-m2', messages })
        .withResponse();
      headers = response.headers;
      assert.equal(data.choices[0]?.message.content, FAKE_REPLY);
    });
    assert.deepEqual(got, { m1: 0, m2: 1, m3: 0 });
    const seen = picker.asked.slice(asked);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.json?.model, 'want-m2', 'the picker chose with the parsed body');
    assert.equal(seen[0]?.headers[':path'], '/v1/chat/completions');
    // validated: the picker is told the Service's endpoints it may choose (the protocol's subset hint)
    assert.deepEqual(seen[0]?.subset?.sort(), [address('m1'), address('m2')].sort());
    assert.equal(headers?.get('x-went-into-resp-headers'), 'true', 'the response went through the picker');
    // the model server got the body the picker streamed back, without the picker's header
    const req = servers.m2.seen.at(-1);
    assert.equal(req?.json?.model, 'want-m2');
    assert.equal(req?.headers['x-gateway-destination-endpoint'], undefined);
    const other = await served(() => client().chat.completions.create({ model: 'want-m1', messages }));
    assert.deepEqual(other, { m1: 1, m2: 0, m3: 0 });
  });

  test('a streamed completion comes through the picker chunk by chunk', async () => {
    choose = () => address('m1');
    let text = '';
    let chunks = 0;
    const got = await served(async () => {
      const stream = await client().chat.completions.create({ model: 'm', messages, stream: true });
      for await (const c of stream) {
        chunks++;
        text += c.choices[0]?.delta?.content ?? '';
      }
    });
    assert.deepEqual(got, { m1: 1, m2: 0, m3: 0 });
    assert.equal(text, FAKE_STREAM_REPLY);
    assert.ok(chunks > 3, `${chunks} chunks`);
  });

  test("a client's own x-gateway-destination-endpoint never reaches the picker nor chooses", async () => {
    choose = () => address('m1');
    const asked = picker.asked.length;
    const got = await served(() =>
      client('/v1', { 'x-gateway-destination-endpoint': address('m2') }).chat.completions.create({
        model: 'm',
        messages,
      }),
    );
    assert.deepEqual(got, { m1: 1, m2: 0, m3: 0 });
    assert.equal(picker.asked[asked]?.headers['x-gateway-destination-endpoint'], undefined);
  });

  test('an address that is not an endpoint of the Service is a 503 naming it', async () => {
    choose = () => address('m3');
    const events = proxy.trace();
    const got = await served(async () => {
      const res = await request(proxy.url('/v1/chat/completions'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages }),
      });
      assert.equal(res.statusCode, 503);
      const text = await res.body.text();
      assert.match(
        text,
        new RegExp(
          `the endpoint picker chose ${address('m3')}, which is not an endpoint of service default/my-model`,
        ),
      );
      assert.match(text, /destinationMode passthrough/);
      assert.doesNotMatch(
        text,
        new RegExp(address('m1')),
        "the Service's endpoints are not told to the client",
      );
    });
    assert.deepEqual(got, { m1: 0, m2: 0, m3: 0 });
    // the trace has what the picker chose, and (once) the refusal with the Service's endpoints
    const inference = (await events).filter((e) => e.message.type === 'inferenceRouting');
    assert.deepEqual(
      inference.map((e) => e.message),
      [
        { type: 'inferenceRouting', destinations: [address('m3')] },
        { type: 'inferenceRouting', refused: [address('m3')], endpoints: [address('m1'), address('m2')] },
      ],
    );
  });

  test('a picker that names no endpoint leaves the choice to the Service (its workloads only)', async () => {
    choose = () => undefined;
    const got = await served(async () => {
      for (let i = 0; i < 6; i++) await client().chat.completions.create({ model: 'm', messages });
    });
    assert.equal(got.m1 + got.m2, 6);
    assert.equal(got.m3, 0);
  });

  test('a picker given as a Service of services is called at its workload', async () => {
    choose = (model) => (model === 'want-m2' ? address('m2') : address('m1'));
    const asked = picker.asked.length;
    const got = await served(async () => {
      const data = await client('/by-service/v1').chat.completions.create({ model: 'want-m2', messages });
      assert.equal(data.choices[0]?.message.content, FAKE_REPLY);
    });
    assert.deepEqual(got, { m1: 0, m2: 1, m3: 0 });
    assert.equal(picker.asked.length - asked, 1);
  });

  test('the picker refusing (429 to shed, 503 with nothing ready) is the answer the client gets', async () => {
    choose = () => ({ status: 429, body: 'shed: the model servers are saturated' });
    const err = await client()
      .chat.completions.create({ model: 'm', messages })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 429);
    choose = () => ({ status: 503 });
    const res = await request(proxy.url('/v1/chat/completions'), { method: 'POST', body: '{"model":"m"}' });
    assert.equal(res.statusCode, 503);
    await res.body.dump();
  });

  test('an answer that is not ip:port fails the request (500) and says what it was', async () => {
    choose = () => 'my-model.default.svc:8000';
    const res = await request(proxy.url('/v1/chat/completions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages }),
    });
    assert.equal(res.statusCode, 500);
    assert.match(
      await res.body.text(),
      /the endpoint picker chose "my-model\.default\.svc:8000" .*which is not ip:port/,
    );
  });
});

describe('passthrough: the picker owns endpoint discovery', () => {
  test('the picked address is dialled although no workload names it', async () => {
    choose = () => address('m3');
    const asked = picker.asked.length;
    const got = await served(() => client('/pass/v1').chat.completions.create({ model: 'm', messages }));
    assert.deepEqual(got, { m1: 0, m2: 0, m3: 1 });
    assert.equal(picker.asked[asked]?.subset, undefined, 'no subset hint: the picker owns discovery');
  });

  test('a retry goes to the next address the picker named', async () => {
    // the first address is down: the connect error is retried, the picker asked again, and the
    // address not tried yet is taken
    choose = () => `127.0.0.1:${downPort},${address('m2')}`;
    const asked = picker.asked.length;
    const got = await served(async () => {
      const r = await client('/pass/v1').chat.completions.create({ model: 'm', messages });
      assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    });
    assert.deepEqual(got, { m1: 0, m2: 1, m3: 0 });
    assert.equal(picker.asked.length - asked, 2, 'each attempt asks the picker');
  });
});

test('a WebSocket goes through the picker to the endpoint it names', async () => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(wss, 'listening');
  const port = (wss.address() as AddressInfo).port;
  wss.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo ${m}`)));
  const p = await startProxy(`config:
  adminAddr: "off"
services:
- {name: ws, namespace: default, hostname: ws, vips: [], ports: {"80": 80}}
workloads:
- {name: w, namespace: default, workloadIps: [127.0.0.1], services: {"default/ws": {"80": ${port}}}}
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - service: {name: default/ws, port: 80}
        policies: {inferenceRouting: {endpointPicker: {host: ${picker.host}}}}
`);
  try {
    choose = () => `127.0.0.1:${port}`;
    const asked = picker.asked.length;
    const ws = new WebSocket(p.url('/chat').replace('http', 'ws'));
    await once(ws, 'open');
    ws.send('hi');
    const [reply] = await once(ws, 'message');
    assert.equal(String(reply), 'echo hi');
    assert.equal(picker.asked.length - asked, 1, 'the picker chose the endpoint of the upgrade');
    ws.close();
    await once(ws, 'close');
  } finally {
    await p.close();
    wss.close();
  }
});

test('the picker down fails the request closed (500), as agentgateway', async () => {
  const gone = await startEndpointPicker(() => undefined);
  const host = gone.host;
  await gone.close();
  const p = await startProxy(`config:
  adminAddr: "off"
services:
- {name: s, namespace: default, hostname: s, vips: [], ports: {"80": 80}}
workloads:
- {name: w, namespace: default, workloadIps: [127.0.0.1], services: {"default/s": {"80": ${servers.m1.port}}}}
binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - service: {name: default/s, port: 80}
        policies: {inferenceRouting: {endpointPicker: {host: ${host}}}}
`);
  try {
    const before = servers.m1.seen.length;
    const res = await request(p.url('/v1/chat/completions'), { method: 'POST', body: '{"model":"m"}' });
    assert.equal(res.statusCode, 500);
    await res.body.dump();
    assert.equal(servers.m1.seen.length, before, 'nothing reached the endpoint');
  } finally {
    await p.close();
  }
});

describe('config', () => {
  const load = (backend: string, extra = '') =>
    configIssues(
      `${extra}binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - ${backend}\n`,
    );
  const svc = 'services:\n- {name: s, namespace: default, hostname: s, vips: [], ports: {"80": 80}}\n';

  test('only a service backend takes an endpoint picker', () => {
    assert.match(
      load(
        'host: 127.0.0.1:1\n        policies: {inferenceRouting: {endpointPicker: {host: 127.0.0.1:9002}}}',
      ),
      /backends\[0\]\.policies\.inferenceRouting: inferenceRouting picks one of the endpoints of a service backend; a host backend has none to pick from/,
    );
    assert.match(
      load(
        'ai: {name: a, provider: {openAI: {}}, policies: {inferenceRouting: {endpointPicker: {host: 127.0.0.1:9002}}}}',
      ),
      /ai\.policies\.inferenceRouting: inferenceRouting picks one of the endpoints of a service backend; an ai provider has none/,
    );
  });

  test('the picker by backend: a host backend, its backendTLS taken, its other policies refused by name', () => {
    assert.equal(
      load(
        'service: {name: default/s, port: 80}\n        policies: {inferenceRouting: {endpointPicker: {backend: epp}, destinationMode: passthrough}}',
        `${svc}backends:\n- {name: epp, host: 127.0.0.1:9002, policies: {backendTLS: {insecure: true}}}\n`,
      ),
      '',
    );
    assert.match(
      load(
        'service: {name: default/s, port: 80}\n        policies: {inferenceRouting: {endpointPicker: {backend: nope}}}',
        svc,
      ),
      /inferenceRouting\.endpointPicker\.backend: no backend named "nope"/,
    );
    assert.match(
      load(
        'service: {name: default/s, port: 80}\n        policies: {inferenceRouting: {endpointPicker: {backend: epp}}}',
        `${svc}backends:\n- {name: epp, host: 127.0.0.1:9002, policies: {requestHeaderModifier: {set: {a: b}}}}\n`,
      ),
      /inferenceRouting\.endpointPicker\.backend: .*requestHeaderModifier/,
    );
  });

  test('a Service with no workload warns, unless a passthrough picker owns its endpoints', () => {
    const warnings = (mode: string) =>
      loadConfigText(
        'gw.yaml',
        `${svc}binds:\n- port: 8080\n  listeners:\n  - routes:\n    - backends:\n      - service: {name: default/s, port: 80}\n        policies: {inferenceRouting: {endpointPicker: {host: 127.0.0.1:9002}${mode}}}\n`,
        process.cwd(),
      ).warnings.map((w) => w.message);
    assert.match(warnings('').join('\n'), /service default\/s has no workload to send requests to/);
    assert.deepEqual(warnings(', destinationMode: passthrough'), []);
  });

  test('a picker by a Service the file does not declare, and an unknown mode, are errors at the field', () => {
    assert.match(
      load(
        'service: {name: default/s, port: 80}\n        policies: {inferenceRouting: {endpointPicker: {service: {name: default/epp, port: 9002}}}}',
        svc,
      ),
      /inferenceRouting\.endpointPicker\.service\.name: no service "default\/epp" in services \(services: default\/s\)/,
    );
    assert.match(
      load(
        'service: {name: default/s, port: 80}\n        policies: {inferenceRouting: {endpointPicker: {host: 127.0.0.1:9002}, destinationMode: direct}}',
        svc,
      ),
      /destinationMode/,
    );
  });
});

test("the picker's header: ip:port, IPv6 in brackets compared in canonical form, comma-separated", () => {
  assert.deepEqual(parseDestinations('10.0.0.7:8000'), ['10.0.0.7:8000']);
  assert.deepEqual(parseDestinations(' 10.0.0.7:8000 , [FD00:0:0::0:1]:8000,'), [
    '10.0.0.7:8000',
    '[fd00::1]:8000',
  ]);
  assert.deepEqual(parseDestinations(['10.0.0.7:1', '10.0.0.8:2']), ['10.0.0.7:1', '10.0.0.8:2']);
  for (const bad of [
    'pod-7:8000',
    '10.0.0.7',
    '[10.0.0.7]:80',
    '10.0.0.7:0',
    '10.0.0.7:70000',
    'fd00::1:80',
    '300.0.0.1:80',
  ])
    assert.throws(
      () => parseDestinations(bad),
      new RegExp(
        `chose "${bad.replace(/[.[\]]/g, '\\$&')}" in x-gateway-destination-endpoint, which is not ip:port`,
      ),
    );
});
