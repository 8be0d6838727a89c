import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { z } from 'zod';
import {
  CONTRACT_VERSION,
  GuardrailsPromptRequest,
  GuardrailsPromptResponse,
  GuardrailsResponseRequest,
  GuardrailsResponseResponse,
  MaskAction,
  maskChoices,
  maskMessages,
  type ParseResult,
  parsePromptRequest,
  parsePromptResponse,
  parseResponseResponse,
  pass,
  promptVerdict,
  REQUEST_PATH,
  RESPONSE_PATH,
  reject,
  responseVerdict,
} from './contract.ts';

// Wire examples from agentgateway's Guardrail Webhook API: the OpenAPI 0.1.0 document's examples
// (solo-io/gloo-gateway-use-cases ai-guardrail-webhook-server/docs/gloo-ai-gateway-guardrail-webhook-openapi.yaml,
// which kgateway.dev's agentgateway docs render) and the answers of its reference webhook server
// (ai-guardrail-webhook-server/main.py, FastAPI, so an unset reason is sent as null).
const OPENAPI_PROMPT = {
  body: {
    messages: [
      { content: 'You are a helpful AI assistant that provides concise answers.', role: 'system' },
      { content: 'What is 2+2?', role: 'user' },
      { content: '2+2 is 4.', role: 'assistant' },
      { content: 'What about 3+3?', role: 'user' },
    ],
  },
};
const OPENAPI_CHOICES = {
  body: {
    choices: [
      { message: { content: 'The sum of 2 and 2 is 4.', role: 'assistant' } },
      { message: { content: 'When you add 2 to 2, you get 4.', role: 'assistant' } },
    ],
  },
};
const REFERENCE_PASS = { action: { reason: 'passed' } };
const REFERENCE_REJECT = {
  action: { body: 'request blocked', status_code: 403, reason: 'Inappropriate content detected' },
};
const REFERENCE_PROMPT_MASK = {
  action: {
    body: { messages: [{ role: 'user', content: 'please **** this' }] },
    reason: 'Sensitive content detected',
  },
};
const REFERENCE_RESPONSE_MASK = {
  action: {
    body: { choices: [{ message: { role: 'assistant', content: 'a **** here' } }] },
    reason: 'Sensitive content detected',
  },
};

function ok<T>(r: ParseResult<T>): T {
  if (!r.ok) assert.fail(r.error);
  return r.value;
}

function roundTrip(schema: z.ZodType, wire: unknown): void {
  const first = schema.parse(wire);
  const again = schema.parse(JSON.parse(JSON.stringify(first)));
  assert.deepEqual(again, first);
  assert.deepEqual(first, wire);
}

test('the contract follows agentgateway webhook API 0.1.0 at /request and /response', () => {
  assert.equal(CONTRACT_VERSION, '0.1.0');
  assert.equal(REQUEST_PATH, '/request');
  assert.equal(RESPONSE_PATH, '/response');
});

test('the OpenAPI request-phase and response-phase examples round-trip', () => {
  roundTrip(GuardrailsPromptRequest, OPENAPI_PROMPT);
  roundTrip(GuardrailsResponseRequest, OPENAPI_CHOICES);
  // agentgateway's own unit test body: one user message.
  roundTrip(GuardrailsPromptRequest, { body: { messages: [{ role: 'user', content: 'hi' }] } });
  roundTrip(GuardrailsPromptRequest, { body: { messages: [] } });
});

test("the reference server's verdicts round-trip in both phases", () => {
  for (const schema of [GuardrailsPromptResponse, GuardrailsResponseResponse]) {
    roundTrip(schema, REFERENCE_PASS);
    roundTrip(schema, REFERENCE_REJECT);
    roundTrip(schema, { action: {} });
  }
  roundTrip(GuardrailsPromptResponse, REFERENCE_PROMPT_MASK);
  roundTrip(GuardrailsResponseResponse, REFERENCE_RESPONSE_MASK);
  roundTrip(MaskAction, REFERENCE_PROMPT_MASK.action);
  roundTrip(MaskAction, REFERENCE_RESPONSE_MASK.action);
});

test('a null reason (how FastAPI sends an unset one) is accepted and dropped', () => {
  assert.deepEqual(ok(parsePromptResponse({ action: { reason: null } })), { action: {} });
  assert.deepEqual(ok(promptVerdict({ action: { body: 'no', status_code: 451, reason: null } })), {
    kind: 'reject',
    statusCode: 451,
    body: 'no',
  });
});

test('verdicts read as allow, modify and reject', () => {
  assert.deepEqual(ok(promptVerdict(REFERENCE_PASS)), { kind: 'allow', reason: 'passed' });
  assert.deepEqual(ok(promptVerdict(REFERENCE_REJECT)), {
    kind: 'reject',
    statusCode: 403,
    body: 'request blocked',
    reason: 'Inappropriate content detected',
  });
  assert.deepEqual(ok(promptVerdict(REFERENCE_PROMPT_MASK)), {
    kind: 'modify',
    body: REFERENCE_PROMPT_MASK.action.body,
    reason: 'Sensitive content detected',
  });
  assert.deepEqual(ok(responseVerdict(REFERENCE_RESPONSE_MASK)), {
    kind: 'modify',
    body: REFERENCE_RESPONSE_MASK.action.body,
    reason: 'Sensitive content detected',
  });
  // agentgateway applies a reject in the response phase too, though the OpenAPI lists pass and mask.
  assert.equal(ok(responseVerdict(REFERENCE_REJECT)).kind, 'reject');
});

test("a mask for the other phase's shape is invalid", () => {
  assert.equal(promptVerdict(REFERENCE_RESPONSE_MASK).ok, false);
  assert.equal(responseVerdict(REFERENCE_PROMPT_MASK).ok, false);
});

test('a malformed reject or mask is an invalid verdict, never an allow', () => {
  for (const action of [
    { body: 'blocked' },
    { status_code: 403 },
    { body: 'blocked', status_code: '403' },
    { body: 'blocked', status_code: 99 },
    { body: 'blocked', status_code: 600 },
    { body: { messages: [{ role: 'user' }] } },
    { body: {} },
  ]) {
    assert.equal(promptVerdict({ action }).ok, false, JSON.stringify(action));
    assert.equal(responseVerdict({ action }).ok, false, JSON.stringify(action));
  }
  assert.equal(promptVerdict({}).ok, false);
  assert.equal(promptVerdict('pass').ok, false);
});

test('unknown fields in a pass are ignored, as agentgateway does', () => {
  assert.deepEqual(ok(promptVerdict({ action: { decision: 'ok' } })), { kind: 'allow' });
});

test('bad request bodies get an error that names the field', () => {
  const r = parsePromptRequest({ body: { messages: [{ role: 'user', content: 42 }] } });
  assert.equal(r.ok, false);
  assert.match(
    r.ok ? '' : r.error,
    /invalid request-phase body: .*expected string.*\n.*body\.messages\[0\]\.content/s,
  );
  assert.equal(parsePromptRequest({ messages: [] }).ok, false);
});

test('the verdict builders produce valid verdicts', () => {
  assert.deepEqual(ok(parsePromptResponse(pass())), { action: {} });
  assert.deepEqual(ok(parsePromptResponse(pass('fine'))), { action: { reason: 'fine' } });
  assert.deepEqual(ok(parsePromptResponse(reject(403, 'no'))), { action: { body: 'no', status_code: 403 } });
  const masked = maskMessages([{ role: 'user', content: '<SSN>' }], 'ssn');
  assert.deepEqual(ok(parsePromptResponse(masked)), masked);
  const choices = maskChoices([{ message: { role: 'assistant', content: '<EMAIL_ADDRESS>' } }]);
  assert.deepEqual(ok(parseResponseResponse(choices)), choices);
});
