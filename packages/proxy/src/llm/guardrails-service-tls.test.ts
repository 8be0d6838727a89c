// Guard services behind TLS of their own: a webhook guard whose target is a named host backend with
// backendTLS (a private CA) and a requestHeaderModifier, and OpenAI moderation reached through a
// stand-in over HTTPS with policies.backendTLS and requestHeaderModifier. The guard services are the
// real ones of the other guard tests (@gw/guardrail-sdk's handler, the fake moderation endpoint),
// fronted by TLS; a certificate gw does not trust fails the guard closed.
import assert from 'node:assert/strict';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, type Server } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createServer as createTLSServer, type TLSSocket } from 'node:tls';
import { createGuardrailHandler, pass, reject } from '@gw/guardrail-sdk';
import { FAKE_REPLY, type FakeAnthropic, type FakeOpenAI, makeTestPki, type TestPki } from '@gw/testkit';
import { type FakeModeration, startFakeModeration } from '@gw/testkit/llm/moderation';
import type { TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import {
  askGpt,
  gptModel,
  guardFailsClosed,
  guardrailsIssues,
  startFakeProviders,
  startGuardProxy,
} from './guardrails/test-support.ts';

const NAME = 'guard.internal';

let pki: TestPki;
let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let moderation: FakeModeration;
/** TLS in front of the fake moderation endpoint, with the test CA's certificate for NAME. */
let moderationTls: Server;
let webhook: HttpsServer;
let proxy: TestProxy;
let gpt: OpenAI;
const webhookHeaders: Record<string, string | string[] | undefined>[] = [];

async function listenOn(s: Server | HttpsServer): Promise<number> {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as { port: number }).port;
}

/** A TLS front: each connection's bytes go to `port` on loopback in plain text. */
function tlsFront(port: number): Server {
  const cert = pki.servers[NAME];
  assert.ok(cert);
  return createTLSServer({ cert: cert.cert, key: cert.key }, (socket: TLSSocket) => {
    const up = connect(port, '127.0.0.1');
    socket.pipe(up).pipe(socket);
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
}

before(async () => {
  pki = await makeTestPki([NAME]);
  ({ openai, anthropic } = await startFakeProviders());
  moderation = await startFakeModeration({ apiKey: 'sk-moderation' });
  moderationTls = tlsFront(moderation.port);
  const modPort = await listenOn(moderationTls);
  const cert = pki.servers[NAME];
  assert.ok(cert);
  webhook = createHttpsServer(
    { cert: cert.cert, key: cert.key },
    createGuardrailHandler({
      onRequest: ({ body }, { headers }) => {
        webhookHeaders.push(headers);
        return body.messages.some((m) => m.content.includes('jailbreak'))
          ? reject(451, 'Not allowed here.', 'banned word')
          : pass();
      },
    }),
  );
  const hookPort = await listenOn(webhook);
  const root = `{file: "${pki.caFile}"}`;
  const moderated = (name: string, tls: string) =>
    gptModel(
      openai,
      name,
      `{request: [{openAIModeration: {hostOverride: "127.0.0.1:${modPort}", policies: {backendAuth: {key: sk-moderation}, backendTLS: ${tls}, requestHeaderModifier: {set: {x-tenant: acme}}}}}]}`,
    );
  ({ proxy, gpt } = await startGuardProxy(
    `${gptModel(openai, 'hooked', '{request: [{webhook: {target: {backend: guard}}}]}')}
${gptModel(openai, 'hooked-own', `{request: [{webhook: {target: {host: "127.0.0.1:${hookPort}", policies: {backendTLS: {root: ${root}, hostname: ${NAME}}, requestHeaderModifier: {set: {x-guard-tenant: own}}}}}}]}`)}
${gptModel(openai, 'hooked-over', `{request: [{webhook: {target: {backend: guard, policies: {requestHeaderModifier: {set: {x-guard-tenant: over}}}}}}]}`)}
${gptModel(openai, 'hooked-https', `{request: [{webhook: {target: {host: "https://127.0.0.1:${hookPort}"}}}]}`)}
${moderated('moderated', `{root: ${root}, hostname: ${NAME}}`)}
${moderated('untrusted', `{hostname: ${NAME}}`)}`,
    '',
    `backends:
- name: guard
  host: "127.0.0.1:${hookPort}"
  policies:
    backendTLS: {root: ${root}, hostname: ${NAME}}
    requestHeaderModifier: {set: {x-guard-tenant: acme}}
`,
  ));
});

after(async () => {
  await proxy?.close();
  webhook?.closeAllConnections();
  await Promise.all([webhook, moderationTls].map((s) => new Promise((r) => (s ? s.close(r) : r(undefined)))));
  await Promise.all([openai?.close(), anthropic?.close(), moderation?.close()]);
  await pki?.cleanup();
});

describe('a webhook target by named backend', () => {
  test('called over HTTPS with the backend’s CA and headers: clean passes, a finding rejects', async () => {
    const r = await askGpt(gpt, 'hooked', 'Hello!');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(webhookHeaders[webhookHeaders.length - 1]?.['x-guard-tenant'], 'acme');
    const err = await askGpt(gpt, 'hooked', 'a jailbreak').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 451);
  });
});

describe("a webhook target's own policies (agentgateway's target.policies)", () => {
  test('a host target over HTTPS with its own CA and headers', async () => {
    const r = await askGpt(gpt, 'hooked-own', 'Hello!');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(webhookHeaders[webhookHeaders.length - 1]?.['x-guard-tenant'], 'own');
    const err = await askGpt(gpt, 'hooked-own', 'a jailbreak').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 451);
  });

  test("over a named backend's: the target's own header wins, the backend's TLS stays", async () => {
    const r = await askGpt(gpt, 'hooked-over', 'Hello!');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    assert.equal(webhookHeaders[webhookHeaders.length - 1]?.['x-guard-tenant'], 'over');
  });

  test(
    'an https:// host is called over TLS with the system roots: the test CA is not among them, so it fails closed',
    guardFailsClosed(() => ({ openai, gpt }), /BEGIN CERTIFICATE/i)(
      'hooked-https',
      /certificate|self.signed|verify|issuer/i,
    ),
  );
});

describe('a cloud guard with backendTLS and requestHeaderModifier', () => {
  test('the stand-in is reached over HTTPS with the CA given; the header is on the call', async () => {
    const before = moderation.seen.length;
    const r = await askGpt(gpt, 'moderated', 'Hello!');
    assert.equal(r.choices[0]?.message.content, FAKE_REPLY);
    const call = moderation.seen[moderation.seen.length - 1];
    assert.equal(moderation.seen.length, before + 1);
    assert.equal(call?.headers['x-tenant'], 'acme');
    assert.equal(call?.headers.authorization, 'Bearer sk-moderation');
  });

  test(
    'without the CA the certificate is not trusted: the guard fails closed, the provider is not asked',
    guardFailsClosed(() => ({ openai, gpt }), /BEGIN CERTIFICATE|self.signed/i)(
      'untrusted',
      /unavailable|unreachable|certificate/i,
    ),
  );
});

describe('config errors', () => {
  test('an unknown backend, one that is not host:port, one with a policy a webhook call does not take', () => {
    assert.deepEqual(
      guardrailsIssues('{request: [{webhook: {target: {backend: nope}}}]}').map((i) =>
        i.replace(/ \(.*$/, ''),
      ),
      ['llm.models[0].guardrails.request[0].webhook.target.backend: no backend named "nope"'],
    );
    const withBackends = (policies: string) =>
      guardrailsIssuesWith(
        '{request: [{webhook: {target: {backend: hook}}}]}',
        `backends:\n- name: hook\n  host: "127.0.0.1:9"\n  policies: ${policies}\n- name: dyn\n  dynamic: {}\n`,
      );
    assert.deepEqual(withBackends('{backendAuth: {key: k}}'), [
      'llm.models[0].guardrails.request[0].webhook.target.backend: backend "hook" sets backendAuth, which a webhook call does not take (it takes backendTLS, requestHeaderModifier, tcp and http)',
    ]);
    assert.match(
      guardrailsIssuesWith(
        '{request: [{webhook: {target: {backend: dyn}}}]}',
        'backends:\n- name: dyn\n  dynamic: {}\n',
      ).join('\n'),
      /backend "dyn" is not a host:port backend, which a webhook target must be/,
    );
    assert.match(
      guardrailsIssues('{request: [{webhook: {target: {service: {name: a/b, port: 1}}}}]}').join('\n'),
      // a Service of services (llm/guardrails-webhook-service.test.ts)
      /webhook\.target\.service\.name: no service "a\/b" in services \(there are none\)/,
    );
  });

  test('a named backend’s broken backendTLS is named where the backend says it', () => {
    assert.deepEqual(
      guardrailsIssuesWith(
        '{request: [{webhook: {target: {backend: hook}}}]}',
        'backends:\n- name: hook\n  host: "127.0.0.1:9"\n  policies: {backendTLS: {root: {file: /nonexistent/ca.pem}}}\n',
      ).map((i) => i.replace(/: ENOENT.*$/, '')),
      ['backends[0].policies.backendTLS.root: cannot read /nonexistent/ca.pem'],
    );
  });

  test('backendTLS on a guard is checked: a client key without its certificate is named', () => {
    assert.match(
      guardrailsIssues(
        '{request: [{openAIModeration: {policies: {backendTLS: {key: "-----BEGIN PRIVATE KEY-----"}}}}]}',
      ).join('\n'),
      /openAIModeration\.policies\.backendTLS/,
    );
  });
});

/** guardrailsIssues with top-level lines (backends) before the llm block. */
function guardrailsIssuesWith(guardrails: string, top: string): string[] {
  return guardrailsIssues(guardrails, undefined, top);
}
