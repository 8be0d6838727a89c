// The `aws` backend (Amazon Bedrock AgentCore) end to end: clients → gw → a local AgentCore
// (@gw/testkit/agent-core) that checks what AWS checks (the InvokeAgentRuntime route, the qualifier,
// the runtime session id, and the SigV4 signature recomputed with the AWS SDK's signer from the same
// credentials) and streams the agent's answer in paced SSE chunks. Clients: fetch as a curl user
// would, and the official @aws-sdk/client-bedrock-agentcore pointed at the gateway (an SDK user who
// keeps their code and changes the endpoint; the gateway re-signs with its own credentials). The same
// SDK pointed at the fake directly shows the fake accepts what AWS's own client sends.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import {
  BedrockAgentCoreClient,
  InvokeAgentRuntimeCommand,
  ResourceNotFoundException,
} from '@aws-sdk/client-bedrock-agentcore';
import { type AgentCoreInvocation, type FakeAgentCore, startFakeAgentCore } from '@gw/testkit/agent-core';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { loadConfigText } from '../../../config/load.ts';
import { agentCoreEndpoint } from './index.ts';

const GATEWAY_KEY = { accessKeyId: 'AKIDGATEWAY', secretAccessKey: 'gateway/secret/EXAMPLEKEY' };
const CONFIGURED_KEY = { accessKeyId: 'AKIDCONFIGURED', secretAccessKey: 'configured/secret/KEY' };
const CLIENT_KEY = { accessKeyId: 'AKIDCLIENT', secretAccessKey: 'client/secret/KEY' };
const ARN = 'arn:aws:bedrock-agentcore:eu-central-1:123456789012:runtime/weather_agent-Ab12Cd34Ef';
const SESSION = 'client-session-0123456789abcdef0123456789';
const CHUNKS = ['Sunny', ' and', ' 21', ' degrees', ' in Berlin.'];

let fake: FakeAgentCore;
let proxy: TestProxy;
/** What the agent does with the next invocation; default: paced SSE chunks. */
let agent: ((inv: AgentCoreInvocation, res: ServerResponse) => Promise<void>) | undefined;
/** Holds the agent before its last chunk until released (the client has its first). */
let gate: Promise<void> | undefined;
let lastSentAt = 0;
const saved = { ...process.env };
const last = () => fake.seen[fake.seen.length - 1] as AgentCoreInvocation;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sse(_inv: AgentCoreInvocation, res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [i, text] of CHUNKS.entries()) {
    if (i === CHUNKS.length - 1) {
      await gate;
      lastSentAt = performance.now();
    } else if (i > 0) await sleep(20);
    res.write(`data: ${JSON.stringify({ text })}\n\n`);
  }
  res.end();
}

function holdLast(): () => void {
  let release!: () => void;
  gate = new Promise<void>((r) => {
    release = r;
  });
  const watchdog = setTimeout(() => release(), 5_000);
  return () => {
    clearTimeout(watchdog);
    release();
  };
}

const config = (extra = '') => `config:
  adminAddr: "off"
binds:
- port: 0
  listeners:
  - routes:
    - name: agent
      matches: [{path: {pathPrefix: /agent}}]
      backends:
      - aws: {agentCore: {agentRuntimeArn: "${ARN}", qualifier: prod}}
    - name: default-endpoint
      matches: [{path: {pathPrefix: /default}}]
      backends:
      - aws: {agentCore: {agentRuntimeArn: "${ARN}"}}
    - name: missing-endpoint
      matches: [{path: {pathPrefix: /missing}}]
      backends:
      - aws: {agentCore: {agentRuntimeArn: "${ARN}", qualifier: canary}}
    - name: rewritten
      matches: [{path: {pathPrefix: /rewritten}}]
      policies: {urlRewrite: {authority: auto, path: {prefix: /v2}}}
      backends:
      - aws: {agentCore: {agentRuntimeArn: "${ARN}", qualifier: prod}}
    - name: configured-key
      matches: [{path: {pathPrefix: /configured}}]
      backends:
      - aws: {agentCore: {agentRuntimeArn: "${ARN}", qualifier: prod}}
        policies:
          backendAuth:
            aws: {accessKeyId: ${CONFIGURED_KEY.accessKeyId}, secretAccessKey: "${CONFIGURED_KEY.secretAccessKey}"}
    - name: sdk
      matches: [{path: {pathPrefix: /runtimes/}}]
      backends:
      - aws: {agentCore: {agentRuntimeArn: "${ARN}", qualifier: prod}}
${extra}`;

before(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
  process.env.AWS_ACCESS_KEY_ID = GATEWAY_KEY.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = GATEWAY_KEY.secretAccessKey;
  fake = await startFakeAgentCore({
    keys: [GATEWAY_KEY, CONFIGURED_KEY, CLIENT_KEY],
    runtimes: { [ARN]: ['prod'] },
    agent: (inv, res) => (agent ?? sse)(inv, res),
  });
  // As for the AWS SDKs: the service's own override first.
  process.env.AWS_ENDPOINT_URL = 'http://127.0.0.1:1';
  process.env.AWS_ENDPOINT_URL_BEDROCK_AGENTCORE = fake.url;
  proxy = await startProxy(config());
});

after(async () => {
  await proxy?.close();
  await fake?.close();
  process.env = saved;
});

describe('InvokeAgentRuntime through the gateway', () => {
  test('the route, qualifier, a new session id and a valid SigV4 signature; SSE streamed as it comes', async () => {
    const release = holdLast();
    const res = await fetch(proxy.url('/agent/chat?debug=1'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer client-token' },
      body: JSON.stringify({ prompt: 'Weather in Berlin?' }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const session = res.headers.get('x-amzn-bedrock-agentcore-runtime-session-id');
    assert.match(session ?? '', /^[0-9a-f-]{36}$/, 'the gateway made a session id and the client got it');
    let text = '';
    let firstAt: number | undefined;
    const decoder = new TextDecoder();
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      if (firstAt === undefined) {
        firstAt = performance.now();
        release();
      }
      text += decoder.decode(chunk, { stream: true });
    }
    assert.ok(
      firstAt !== undefined && firstAt < lastSentAt,
      'the first chunk arrived before the last was sent',
    );
    assert.deepEqual(
      [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1] as string).text),
      CHUNKS,
    );
    const inv = last();
    assert.equal(inv.url.split('?')[0], `/runtimes/${encodeURIComponent(ARN)}/invocations`);
    assert.equal(inv.arn, ARN);
    assert.equal(inv.qualifier, 'prod');
    assert.equal(new URL(inv.url, 'http://x').searchParams.get('debug'), null, "the client's query stays");
    assert.equal(inv.headers['x-amzn-bedrock-agentcore-runtime-session-id'], session);
    assert.deepEqual(JSON.parse(inv.body.toString()), { prompt: 'Weather in Berlin?' });
    assert.ok(inv.sigv4.ok, inv.sigv4.ok ? '' : inv.sigv4.reason);
    assert.equal(inv.sigv4.sigv4?.accessKeyId, GATEWAY_KEY.accessKeyId);
    assert.equal(inv.sigv4.sigv4?.region, 'eu-central-1');
    assert.equal(inv.sigv4.sigv4?.service, 'bedrock-agentcore');
    assert.ok(inv.sigv4.sigv4?.signedHeaders.includes('x-amzn-bedrock-agentcore-runtime-session-id'));
    assert.equal(inv.headers.host, `127.0.0.1:${fake.port}`);
  });

  test("the client's session id (and MCP headers) go to AgentCore and the session comes back", async () => {
    agent = async (_inv, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'mcp-1' });
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    };
    try {
      const res = await fetch(proxy.url('/default'), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'x-amzn-bedrock-agentcore-runtime-session-id': SESSION,
          'mcp-protocol-version': '2025-06-18',
          'mcp-session-id': 'mcp-1',
        },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-amzn-bedrock-agentcore-runtime-session-id'), SESSION);
      assert.equal(res.headers.get('mcp-session-id'), 'mcp-1');
      assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 1, result: {} });
      const inv = last();
      assert.equal(inv.qualifier, null, 'no qualifier: AgentCore uses the DEFAULT endpoint');
      assert.equal(inv.headers['x-amzn-bedrock-agentcore-runtime-session-id'], SESSION);
      assert.equal(inv.headers['mcp-protocol-version'], '2025-06-18');
      assert.equal(inv.headers['mcp-session-id'], 'mcp-1');
      assert.equal(inv.headers.accept, 'application/json, text/event-stream');
      assert.ok(inv.sigv4.ok);
    } finally {
      agent = undefined;
    }
  });

  test("AgentCore's errors reach the client as AgentCore sent them, and the trace names them", async () => {
    const trace = proxy.trace();
    const res = await fetch(proxy.url('/missing'), { method: 'POST', body: '{}' });
    assert.equal(res.status, 404);
    assert.match(res.headers.get('x-amzn-errortype') ?? '', /^ResourceNotFoundException:/);
    assert.deepEqual(await res.json(), {
      message: `No endpoint or agent found with qualifier 'canary' for agent '${ARN}'`,
    });
    const events = (await trace).map((e) => e.message as Record<string, unknown>);
    const e = events.find((m) => m.type === 'agentCore');
    assert.equal(e?.errorType, 'ResourceNotFoundException');
    assert.match(
      String(e?.message),
      /^AgentCore answered 404 ResourceNotFoundException: No endpoint or agent found with qualifier 'canary'/,
    );
  });

  test('a client that goes away cancels the invocation', { timeout: 10_000 }, async () => {
    let sentFirst!: () => void;
    const first = new Promise<void>((r) => {
      sentFirst = r;
    });
    agent = async (inv, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"text":"thinking"}\n\n');
      sentFirst();
      // An agent that would go on until its caller leaves.
      await inv.aborted;
    };
    try {
      const ac = new AbortController();
      const res = await fetch(proxy.url('/agent'), { method: 'POST', body: '{}', signal: ac.signal });
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      await first;
      const inv = last();
      ac.abort();
      const started = performance.now();
      await inv.aborted;
      assert.ok(performance.now() - started < 2_000, 'AgentCore call cancelled at once');
      assert.equal(inv.completed, false);
    } finally {
      agent = undefined;
    }
  });

  test("a route's urlRewrite (path, authority: auto) leaves the invocation path and the signature alone", async () => {
    const res = await fetch(proxy.url('/rewritten/x'), { method: 'POST', body: '{}' });
    assert.equal(res.status, 200);
    await res.text();
    const inv = last();
    assert.ok(inv.sigv4.ok, inv.sigv4.ok ? '' : inv.sigv4.reason);
    assert.equal(inv.headers.host, `127.0.0.1:${fake.port}`);
    assert.equal(inv.url.split('?')[0], `/runtimes/${encodeURIComponent(ARN)}/invocations`);
  });

  test('backendAuth.aws credentials sign instead of the environment', async () => {
    const res = await fetch(proxy.url('/configured'), { method: 'POST', body: '{"prompt":"hi"}' });
    assert.equal(res.status, 200);
    await res.text();
    assert.equal(last().sigv4.sigv4?.accessKeyId, CONFIGURED_KEY.accessKeyId);
    assert.ok(last().sigv4.ok);
  });

  test('a method other than POST is refused by the gateway (405, Allow: POST)', async () => {
    const before = fake.seen.length;
    const res = await fetch(proxy.url('/agent'));
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    assert.match(await res.text(), /invoked with POST \(InvokeAgentRuntime\), not GET/);
    assert.equal(fake.seen.length, before);
  });
});

describe('the official AWS SDK client (@aws-sdk/client-bedrock-agentcore)', () => {
  const client = (endpoint: string) =>
    new BedrockAgentCoreClient({ region: 'eu-central-1', endpoint, credentials: CLIENT_KEY, maxAttempts: 1 });

  test('pointed at the fake itself: its signature verifies and it reads the stream (the fake is AWS-shaped)', async () => {
    const out = await client(fake.url).send(
      new InvokeAgentRuntimeCommand({
        agentRuntimeArn: ARN,
        qualifier: 'prod',
        runtimeSessionId: SESSION,
        contentType: 'application/json',
        payload: Buffer.from('{"prompt":"hi"}'),
      }),
    );
    const inv = last();
    assert.ok(inv.sigv4.ok, inv.sigv4.ok ? '' : inv.sigv4.reason);
    assert.equal(inv.sigv4.sigv4?.accessKeyId, CLIENT_KEY.accessKeyId);
    assert.equal(inv.qualifier, 'prod');
    assert.equal(out.runtimeSessionId, SESSION);
    assert.equal(out.contentType, 'text/event-stream');
    assert.match(String(await out.response?.transformToString()), /in Berlin/);
  });

  test('pointed at the gateway: the gateway re-signs, the answer streams, the session id comes back', async () => {
    const release = holdLast();
    const out = await client(proxy.url('')).send(
      new InvokeAgentRuntimeCommand({
        // The SDK's path names the runtime; the gateway's route decides which one is called.
        agentRuntimeArn: ARN,
        qualifier: 'prod',
        runtimeSessionId: SESSION,
        contentType: 'application/json',
        accept: 'text/event-stream',
        payload: Buffer.from('{"prompt":"Weather in Berlin?"}'),
      }),
    );
    assert.equal(out.runtimeSessionId, SESSION);
    assert.equal(out.contentType, 'text/event-stream');
    let firstAt: number | undefined;
    let text = '';
    for await (const chunk of out.response as AsyncIterable<Uint8Array>) {
      if (firstAt === undefined) {
        firstAt = performance.now();
        release();
      }
      text += Buffer.from(chunk).toString();
    }
    assert.ok(
      firstAt !== undefined && firstAt < lastSentAt,
      'the first chunk arrived before the last was sent',
    );
    assert.match(text, /in Berlin\./);
    const inv = last();
    assert.ok(inv.sigv4.ok, inv.sigv4.ok ? '' : inv.sigv4.reason);
    assert.equal(
      inv.sigv4.sigv4?.accessKeyId,
      GATEWAY_KEY.accessKeyId,
      "the gateway's signature, not the client's",
    );
    assert.equal(inv.headers['x-amzn-bedrock-agentcore-runtime-session-id'], SESSION);
  });

  test("AgentCore's error through the gateway is the SDK's named exception with AgentCore's message", async () => {
    const unknown = 'arn:aws:bedrock-agentcore:eu-central-1:123456789012:runtime/other-Zz99Yy88Xx';
    await proxy.reload(
      config(`    - name: unknown-runtime
      matches: [{path: {pathPrefix: /}}]
      backends:
      - aws: {agentCore: {agentRuntimeArn: "${unknown}"}}
`).replace('pathPrefix: /runtimes/', 'pathPrefix: /nothing/'),
    );
    await assert.rejects(
      client(proxy.url('')).send(
        new InvokeAgentRuntimeCommand({
          agentRuntimeArn: unknown,
          runtimeSessionId: SESSION,
          payload: Buffer.from('{}'),
        }),
      ),
      (err: unknown) => {
        assert.ok(err instanceof ResourceNotFoundException, String(err));
        assert.equal(
          err.message,
          `No endpoint or agent found with qualifier 'DEFAULT' for agent '${unknown}'`,
        );
        return true;
      },
    );
    await proxy.reload(config());
  });
});

describe('config', () => {
  test('an ARN that is not an AgentCore runtime ARN is a config error naming the field', () => {
    assert.throws(
      () =>
        loadConfigText(
          'gw.yaml',
          `binds:
- port: 0
  listeners:
  - routes:
    - backends:
      - aws: {agentCore: {agentRuntimeArn: "arn:aws:bedrock:us-east-1:123456789012:agent/x"}}
`,
          process.cwd(),
        ),
      /binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.aws\.agentCore\.agentRuntimeArn.*must be an AgentCore runtime ARN/s,
    );
  });

  test('backendAuth.aws region/service are refused: the ARN decides them', () => {
    assert.throws(
      () =>
        loadConfigText(
          'gw.yaml',
          `backends:
- name: agent
  aws: {agentCore: {agentRuntimeArn: "${ARN}"}}
  policies: {backendAuth: {aws: {region: us-east-1}}}
binds:
- port: 0
  listeners:
  - routes:
    - backends: [{backend: agent}]
`,
          process.cwd(),
        ),
      /backendAuth\.aws\.region does not apply to an aws backend: it signs for bedrock-agentcore in the region of its agentRuntimeArn \(eu-central-1\)/,
    );
  });

  test('the endpoint: AgentCore in the ARN region, or the SDK override variables', () => {
    const host = 'bedrock-agentcore.eu-central-1.amazonaws.com';
    assert.equal(agentCoreEndpoint(host, {}).url.href, `https://${host}/`);
    assert.equal(
      agentCoreEndpoint(host, {
        AWS_ENDPOINT_URL: 'http://a:1',
        AWS_ENDPOINT_URL_BEDROCK_AGENTCORE: 'http://b:2',
      }).url.href,
      'http://b:2/',
    );
    assert.equal(agentCoreEndpoint(host, { AWS_ENDPOINT_URL: 'http://a:1' }).url.href, 'http://a:1/');
    assert.equal(
      agentCoreEndpoint(host, { AWS_ENDPOINT_URL: 'http://a:1', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' })
        .url.href,
      `https://${host}/`,
    );
  });
});
