// A guardrail webhook given as a Service of the file's `services` (agentgateway's
// `target: {service: {name, port}}`): two @gw/guardrail-sdk handlers are its workloads, and the
// official `openai` client's requests through the gateway are checked by both, a connection to each
// in turn, called by the Service's hostname. A Service that cannot be called is a config error.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGuardrailHandler, pass, reject } from '@gw/guardrail-sdk';
import type { FakeAnthropic, FakeOpenAI } from '@gw/testkit';
import type { TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import {
  askGpt,
  closeServers,
  gptModel,
  guardrailsIssues,
  listen,
  startFakeProviders,
  startGuardProxy,
} from './guardrails/test-support.ts';

let openai: FakeOpenAI;
let anthropic: FakeAnthropic;
let guards: Server[];
/** The Host of each call, by the guard that got it. */
const hosts: Record<string, string[]> = { a: [], b: [] };
let proxy: TestProxy;
let gpt: OpenAI;

before(async () => {
  guards = ['a', 'b'].map((name) => {
    const handler = createGuardrailHandler({
      // slow enough that concurrent requests each need a connection of their own
      onRequest: async ({ body }) => {
        await sleep(100);
        return body.messages.some((m) => m.content.includes('jailbreak'))
          ? reject(451, `Not allowed (guard ${name}).`)
          : pass();
      },
    });
    return createServer((req, res) => {
      hosts[name]?.push(req.headers.host ?? '');
      void handler(req, res);
    });
  });
  for (const g of guards) await listen(g);
  const port = (g: Server) => (g.address() as AddressInfo).port;
  ({ openai, anthropic } = await startFakeProviders());
  const workload = (name: string, g: Server) =>
    `- {name: ${name}, namespace: guards, workloadIps: [127.0.0.1], services: {"guards/guard.guards": {"8000": ${port(g)}}}}`;
  ({ proxy, gpt } = await startGuardProxy(
    gptModel(
      openai,
      'guarded',
      '{request: [{webhook: {target: {service: {name: guards/guard.guards, port: 8000}}}}]}',
    ),
    '',
    `services:
- {name: guard, namespace: guards, hostname: guard.guards, vips: [], ports: {"8000": 0}}
workloads:
${workload('guard-a', guards[0] as Server)}
${workload('guard-b', guards[1] as Server)}
`,
  ));
});

after(async () => {
  await proxy?.close();
  await openai?.close();
  await anthropic?.close();
  await closeServers(...(guards ?? []));
});

test("each connection goes to the next of the Service's workloads; their verdicts apply", async () => {
  const answers = await Promise.all([0, 1, 2, 3].map((i) => askGpt(gpt, 'guarded', `question ${i}`)));
  for (const a of answers) assert.equal(a.choices[0]?.message.role, 'assistant');
  const a = hosts.a ?? [];
  const b = hosts.b ?? [];
  assert.equal(a.length + b.length, 4, 'one check per request');
  assert.ok(a.length > 0 && b.length > 0, `one guard got every check: a ${a.length}, b ${b.length}`);
  // called by the Service's name, not by the address dialled
  assert.deepEqual([...new Set([...a, ...b])], ['guard.guards:8000']);
  await assert.rejects(askGpt(gpt, 'guarded', 'a jailbreak'), (err) => {
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 451);
    assert.match(err.message, /Not allowed \(guard [ab]\)\./);
    return true;
  });
});

test('a Service that is not declared is an error at the field; one with no workload a warning', () => {
  const top =
    'services:\n- {name: guard, namespace: guards, hostname: guard.guards, vips: [], ports: {"8000": 8000}}\n';
  const at = 'llm.models[0].guardrails.request[0].webhook.target.service';
  assert.deepEqual(
    guardrailsIssues(
      '{request: [{webhook: {target: {service: {name: guards/nope, port: 8000}}}}]}',
      undefined,
      top,
    ),
    [`${at}.name: no service "guards/nope" in services (services: guards/guard.guards)`],
  );
  // loads: its calls go to the Service's name, resolved by DNS
  assert.deepEqual(
    guardrailsIssues(
      '{request: [{webhook: {target: {service: {name: guards/guard.guards, port: 8000}}}}]}',
      undefined,
      top,
    ),
    [],
  );
});
