// The harness the guard test suites share (imported by *.test.ts files only; it runs no tests): the
// fake providers and the in-process gateway with a guard config, the official `openai` and
// `@anthropic-ai/sdk` clients pointed at it, a guard's rejection and a failed guard service as each
// client sees them, and what the access log and the metrics record.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { ConfigError } from '@gw/api';
import {
  type FakeAnthropic,
  type FakeAnthropicOptions,
  type FakeOpenAI,
  type FakeOpenAIOptions,
  startFakeAnthropic,
  startFakeOpenAI,
} from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import OpenAI from 'openai';
import { loadConfigText } from '../../config/load.ts';

/** A guard's default rejection message. */
export const REJECTED = 'The request was rejected due to inappropriate content';

/** The fake OpenAI and Anthropic providers, with the keys the models of `gptModel`/`claudeModel` send. */
export async function startFakeProviders(
  openaiOpts: FakeOpenAIOptions = {},
  anthropicOpts: FakeAnthropicOptions = {},
): Promise<{ openai: FakeOpenAI; anthropic: FakeAnthropic }> {
  const openai = await startFakeOpenAI({ name: 'openai', apiKey: 'sk-provider', ...openaiOpts });
  const anthropic = await startFakeAnthropic({
    name: 'anthropic',
    apiKey: 'sk-ant-provider',
    ...anthropicOpts,
  });
  return { openai, anthropic };
}

/** An `llm.models` entry for the fake OpenAI provider, with these guardrails (none when left out). */
export const gptModel = (openai: { origin: string }, name: string, guardrails?: string) =>
  `  - name: ${name}
    provider: openai
    params: {apiKey: sk-provider, baseUrl: "${openai.origin}/v1", model: gpt-4o-mini}
${guardrails === undefined ? '' : `    guardrails: ${guardrails}\n`}`;

/** An `llm.models` entry for the fake Anthropic provider, with these guardrails. */
export const claudeModel = (anthropic: { origin: string }, name: string, guardrails: string) =>
  `  - name: ${name}
    provider: anthropic
    params: {apiKey: sk-ant-provider, baseUrl: "${anthropic.origin}/v1", model: claude-sonnet-4-5}
    guardrails: ${guardrails}
`;

/**
 * The in-process gateway serving `llm` with these models (`llm` lines, such as policies, before them;
 * `top`: top-level lines such as `backends`), and the official clients of both formats pointed at it.
 */
export async function startGuardProxy(
  models: string,
  llm = '',
  top = '',
): Promise<{ proxy: TestProxy; gpt: OpenAI; claude: Anthropic }> {
  const proxy = await startProxy(`config:
  adminAddr: "off"
${top}llm:
  port: 0
${llm}  models:
${models}`);
  return {
    proxy,
    gpt: new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 }),
    claude: new Anthropic({ apiKey: 'sk-ant-client', baseURL: proxy.url(''), maxRetries: 0 }),
  };
}

/** The latest access log line (once the request that wrote it has finished). */
export async function lastAccessLog(proxy: TestProxy): Promise<Record<string, unknown>> {
  await new Promise((r) => setTimeout(r, 30));
  return proxy.accessLog[proxy.accessLog.length - 1] ?? {};
}

/** The metrics count this guard action at least once. */
export async function assertGuardCounted(
  proxy: TestProxy,
  labels: { phase: string; guard: string; action: string },
): Promise<void> {
  const text = await proxy.metrics.registry.metrics();
  assert.match(
    text,
    new RegExp(
      `^gw_llm_guardrail_actions_total\\{phase="${labels.phase}",guard="${labels.guard}",action="${labels.action}"\\} [1-9]`,
      'm',
    ),
  );
}

/** The last of what a fake saw. */
export const lastOf = <T>(seen: T[]): T => seen[seen.length - 1] as T;

/** One user message to an OpenAI chat model. */
export const askGpt = (gpt: OpenAI, model: string, content: string, opts?: OpenAI.RequestOptions) =>
  gpt.chat.completions.create({ model, messages: [{ role: 'user', content }] }, opts);

/** A system message and a user message to an OpenAI chat model. */
export const askWithSystem = (gpt: OpenAI, model: string, system: string, content: string) =>
  gpt.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content },
    ],
  });

/** A system prompt and a user message to an Anthropic model: its answer, or the error it raised. */
export const askClaudeWithSystem = (claude: Anthropic, model: string, system: string, content: string) =>
  claude.messages
    .create({ model, max_tokens: 100, system, messages: [{ role: 'user', content }] })
    .catch((e: unknown) => e);

/** The text of a chat stream (an error ending it is thrown). */
export async function streamText(
  s: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>,
): Promise<string> {
  let t = '';
  for await (const c of s) t += c.choices[0]?.delta.content ?? '';
  return t;
}

/** Reads a chat stream: its text pieces, and the error that ended it, if any. */
export async function readStream(s: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
  const pieces: string[] = [];
  const err = await (async () => {
    for await (const c of s) if (c.choices[0]?.delta.content) pieces.push(c.choices[0].delta.content);
  })().catch((e: unknown) => e);
  return { pieces, text: pieces.join(''), err };
}

/** Streams one user message from an Anthropic model: the text that arrived and the error raised, if any. */
export async function readClaudeStream(
  claude: Anthropic,
  model: string,
  maxTokens: number,
): Promise<{ text: string; err: unknown }> {
  const s = claude.messages.stream({
    model,
    max_tokens: maxTokens,
    messages: [{ role: 'user', content: 'hi' }],
  });
  let text = '';
  s.on('text', (t) => {
    text += t;
  });
  const err = await s.finalMessage().catch((e: unknown) => e);
  return { text, err };
}

/** A guard's default rejection (403) in OpenAI's error object. */
export function assertOpenAIRejected(
  err: unknown,
): asserts err is InstanceType<typeof OpenAI.PermissionDeniedError> {
  assert.ok(err instanceof OpenAI.PermissionDeniedError, String(err));
  assert.equal(err.message, `403 ${REJECTED}`);
}

/** A user message the guard rejects: its default rejection in OpenAI's error object, the provider not called. */
export async function assertRejectedUnsent(openai: FakeOpenAI, gpt: OpenAI, model: string, content: string) {
  const before = openai.seen.length;
  const err = await askGpt(gpt, model, content).catch((e: unknown) => e);
  assertOpenAIRejected(err);
  assert.equal(openai.seen.length, before);
}

/** A guard's default rejection (403) in Anthropic's error object. */
export function assertAnthropicRejected(err: unknown): void {
  assert.ok(err instanceof Anthropic.PermissionDeniedError, String(err));
  assert.deepEqual(err.error, { type: 'error', error: { type: 'permission_error', message: REJECTED } });
}

/**
 * A test that a guard service failing closes the request: a 503 in OpenAI's error object saying `how`,
 * none of the service's answer (`hidden`) in it, and no call to the provider.
 */
export const guardFailsClosed =
  (fakes: () => { openai: FakeOpenAI; gpt: OpenAI }, hidden: RegExp) =>
  (model: string, how: RegExp) =>
  async () => {
    const { openai, gpt } = fakes();
    const before = openai.seen.length;
    const err = await askGpt(gpt, model, 'hi').catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 503);
    assert.match(err.message, how);
    assert.equal((err.error as { code?: string }).code, 'gw_err_llm_guardrail_unavailable');
    // never the service's body or a stack
    assert.doesNotMatch(JSON.stringify(err.error), hidden);
    assert.equal(openai.seen.length, before);
  };

/** A failed guard service as the Anthropic client sees it: a 503 in Anthropic's error object saying `how`. */
export async function assertClaudeUnavailable(
  claude: Anthropic,
  model: string,
  how: RegExp,
): Promise<InstanceType<typeof Anthropic.APIError>> {
  const err = await claude.messages
    .create({ model, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
    .catch((e: unknown) => e);
  assert.ok(err instanceof Anthropic.APIError);
  assert.equal(err.status, 503);
  assert.match((err.error as { error: { message: string } }).error.message, how);
  return err;
}

/** Listens on 127.0.0.1: the host:port. */
export async function listen(s: Server): Promise<string> {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `127.0.0.1:${(s.address() as AddressInfo).port}`;
}

/** Closes HTTP servers, their open connections first. */
export async function closeServers(...servers: Server[]): Promise<void> {
  for (const s of servers) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
}

/** The config's issues with a model's `guardrails` (none when it loads), in this environment. */
export function guardrailsIssues(guardrails: string, env?: Record<string, string>, top = ''): string[] {
  try {
    loadConfigText(
      'gw.yaml',
      `${top}llm:\n  port: 0\n  models:\n  - name: m\n    provider: openai\n    guardrails: ${guardrails}\n`,
      process.cwd(),
      env ? (n) => env[n] : undefined,
    );
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.issues.map((i) => `${i.path}: ${i.message}`);
  }
  return [];
}
