// The cloud guards' config: agentgateway's shapes (OpenAI Moderation, BedrockGuardrails,
// GoogleModelArmor) compiled with their defaults, gw's additions (hostOverride, Bedrock's action),
// and what is refused (a moderation response guard, connection settings not implemented yet).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LlmGuardIR } from '../../config/ir.ts';
import { promptGuardIR } from '../../config/load.ts';
import { guardrailsIssues as issues, REJECTED } from './test-support.ts';

const DEFAULT_REJECTION = { status: 403, message: REJECTED };

/** The IR as JSON (a secret prints as [redacted]). */
const plain = (g: LlmGuardIR[]) => JSON.parse(JSON.stringify(g));

describe('openAIModeration', () => {
  test('defaults: api.openai.com over TLS, omni-moderation-latest, no key (the client’s passes)', () => {
    assert.deepEqual(plain(promptGuardIR({ request: [{ openAIModeration: {} }] }).request), [
      {
        kind: 'openAIModeration',
        name: 'openAIModeration',
        scope: ['systemPrompt', 'messages'],
        rejection: DEFAULT_REJECTION,
        settings: {
          service: { origin: 'https://api.openai.com', timeoutMs: 10_000 },
          model: 'omni-moderation-latest',
        },
      },
    ]);
    const g = promptGuardIR({
      request: [
        {
          openAIModeration: {
            model: 'text-moderation-latest',
            hostOverride: 'localhost:8080',
            policies: { backendAuth: { key: 'sk-x' } },
          },
        },
      ],
    }).request[0];
    assert.deepEqual(plain(g ? [g] : [])[0].settings, {
      service: { origin: 'http://localhost:8080', timeoutMs: 10_000 },
      model: 'text-moderation-latest',
      apiKey: '[redacted]',
    });
    assert.equal(g?.kind === 'openAIModeration' && g.settings.apiKey?.reveal(), 'sk-x');
  });

  test('refused: on a response, connection settings not implemented, a key file that cannot be read', () => {
    assert.match(
      issues('{response: [{openAIModeration: {}}]}').join('\n'),
      /response\[0\]\.openAIModeration: openAIModeration reads requests only: set it under request/,
    );
    assert.deepEqual(issues('{request: [{openAIModeration: {policies: {transformations: {}}}}]}'), [
      'llm.models[0].guardrails.request[0].openAIModeration.policies.transformations: transformations on a guard service is not supported by this build of gw yet',
    ]);
    assert.match(
      issues(
        '{request: [{openAIModeration: {policies: {backendAuth: {key: {file: /nonexistent/key}}}}}]}',
      )[0] ?? '',
      /^llm\.models\[0\]\.guardrails\.request\[0\]\.openAIModeration\.policies\.backendAuth\.key\.file: cannot read \/nonexistent\/key: ENOENT/,
    );
    assert.deepEqual(issues('{request: [{openAIModeration: {model: null, policies: null}}]}'), []);
  });
});

describe('bedrockGuardrails', () => {
  const base = { guardrailIdentifier: 'gr0abc', guardrailVersion: 'DRAFT', region: 'eu-west-3' };
  test('defaults: bedrock-runtime.<region> over TLS, Reject, the credential chain', () => {
    assert.deepEqual(plain(promptGuardIR({ response: [{ bedrockGuardrails: base }] }).response), [
      {
        kind: 'bedrockGuardrails',
        name: 'bedrockGuardrails',
        scope: ['messages'],
        rejection: DEFAULT_REJECTION,
        settings: {
          service: { origin: 'https://bedrock-runtime.eu-west-3.amazonaws.com', timeoutMs: 10_000 },
          identifier: 'gr0abc',
          version: 'DRAFT',
          region: 'eu-west-3',
          audit: false,
          auth: { kind: 'chain' },
        },
      },
    ]);
    const g = promptGuardIR({
      request: [
        {
          bedrockGuardrails: {
            ...base,
            action: 'Audit',
            policies: { backendAuth: { aws: { accessKeyId: 'AKID', secretAccessKey: 's3cret' } } },
          },
        },
      ],
    }).request[0];
    assert.equal(g?.kind === 'bedrockGuardrails' && g.settings.audit, true);
    assert.deepEqual(plain(g ? [g] : [])[0].settings.auth, {
      kind: 'static',
      accessKeyId: 'AKID',
      secretAccessKey: '[redacted]',
    });
  });

  test('refused: a bad version or region, assumeRole, a streamed response guard', () => {
    const at = 'llm.models[0].guardrails.request[0].bedrockGuardrails';
    assert.deepEqual(
      issues(
        `{request: [{bedrockGuardrails: {guardrailIdentifier: gr0abc, guardrailVersion: v1, region: eu-west-3}}]}`,
      ),
      [`${at}.guardrailVersion: expected a version number or DRAFT`],
    );
    assert.deepEqual(
      issues(
        `{request: [{bedrockGuardrails: {guardrailIdentifier: gr0abc, guardrailVersion: "1", region: "eu west"}}]}`,
      ),
      [`${at}.region: expected an AWS region such as us-east-1`],
    );
    assert.equal(
      issues(
        `{request: [{bedrockGuardrails: {guardrailIdentifier: gr0abc, guardrailVersion: "1", region: eu-west-3, policies: {backendAuth: {aws: {assumeRole: {}}}}}}]}`,
      ).length,
      1,
    );
    assert.deepEqual(
      issues(
        `{streaming: true, response: [{bedrockGuardrails: {guardrailIdentifier: gr0abc, guardrailVersion: "1", region: eu-west-3}}]}`,
      ),
      [],
    );
  });
});

describe('googleModelArmor', () => {
  test('defaults: modelarmor.us-central1.rep.googleapis.com over TLS, Application Default Credentials', () => {
    assert.deepEqual(
      plain(
        promptGuardIR({ request: [{ googleModelArmor: { templateId: 't1', projectId: 'p1' } }] }).request,
      ),
      [
        {
          kind: 'googleModelArmor',
          name: 'googleModelArmor',
          scope: ['systemPrompt', 'messages'],
          rejection: DEFAULT_REJECTION,
          settings: {
            service: { origin: 'https://modelarmor.us-central1.rep.googleapis.com', timeoutMs: 10_000 },
            project: 'p1',
            location: 'us-central1',
            template: 't1',
          },
        },
      ],
    );
    assert.deepEqual(
      issues(
        '{request: [{googleModelArmor: {templateId: t1, projectId: p1, policies: {backendAuth: {gcp: {}}}}}]}',
      ),
      [],
    );
  });

  test('refused: a credential file (not yet); a streamed response guard is accepted', () => {
    assert.deepEqual(
      issues(
        '{request: [{googleModelArmor: {templateId: t1, projectId: p1, policies: {backendAuth: {gcp: {credential: x}}}}}]}',
      ).length,
      1,
    );
    assert.deepEqual(
      issues('{streaming: Enabled, response: [{googleModelArmor: {templateId: t1, projectId: p1}}]}'),
      [],
    );
  });
});
