import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import {
  applyMaskedChoices,
  applyMaskedMessages,
  type ChatMessageLike,
  MaskShapeError,
  messageText,
  promptRequestBody,
  responseRequestBody,
} from './client-shapes.ts';
import {
  GuardrailsPromptRequest,
  GuardrailsResponseRequest,
  maskMessages,
  promptVerdict,
  REQUEST_PATH,
} from './contract.ts';
import { createGuardrailHandler } from './handler.ts';

const CHAT: ChatMessageLike[] = [
  { role: 'system', content: 'You are terse.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'mail a@b.com' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      { type: 'text', text: 'and c@d.com' },
    ],
  },
  { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function' }] },
  { role: 'tool', content: 'result', tool_call_id: 't1' },
];

test('the request-phase body has one text message per chat message, in order, and fits the contract', () => {
  const body = promptRequestBody(CHAT);
  assert.deepEqual(body, {
    body: {
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'mail a@b.com\nand c@d.com' },
        { role: 'assistant', content: '' },
        { role: 'tool', content: 'result' },
      ],
    },
  });
  assert.deepEqual(GuardrailsPromptRequest.parse(body), body);
  assert.equal(messageText(undefined), '');
});

test('a mask writes changed text back and leaves the rest of each message alone', () => {
  const masked = promptRequestBody(CHAT).body.messages.map((m) => ({
    role: m.role === 'tool' ? 'system' : m.role,
    content: m.content.replace(/\S+@\S+/g, '<EMAIL_ADDRESS>'),
  }));
  masked[0] = { role: 'system', content: 'You are <masked>.' };
  const out = applyMaskedMessages(CHAT, masked);
  assert.deepEqual(out[0], { role: 'system', content: 'You are <masked>.' });
  // Text parts collapse into the first one; the image stays where it was.
  assert.deepEqual(out[1], {
    role: 'user',
    content: [
      { type: 'text', text: 'mail <EMAIL_ADDRESS>\nand <EMAIL_ADDRESS>' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
    ],
  });
  // Unchanged messages are the same objects; a webhook cannot change a role.
  assert.equal(out[2], CHAT[2]);
  assert.equal(out[3], CHAT[3]);
  assert.equal(out[3]?.role, 'tool');
});

test('a mask with another count of messages or choices is refused', () => {
  assert.throws(() => applyMaskedMessages(CHAT, []), MaskShapeError);
  assert.throws(
    () => applyMaskedChoices([{ message: { role: 'assistant', content: 'x' } }], []),
    /mask returned 0 choices/,
  );
});

test('the response-phase body is built from completion choices, and a mask goes back into them', () => {
  const choices = [
    { index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'call 555-12-3456' } },
    { index: 1, finish_reason: 'stop', message: { role: 'assistant', content: 'nothing here' } },
    { index: 2, finish_reason: 'length', message: null },
  ];
  const body = responseRequestBody(choices);
  assert.deepEqual(body.body.choices, [
    { message: { role: 'assistant', content: 'call 555-12-3456' } },
    { message: { role: 'assistant', content: 'nothing here' } },
    { message: { role: 'assistant', content: '' } },
  ]);
  assert.deepEqual(GuardrailsResponseRequest.parse(body), body);
  const out = applyMaskedChoices(
    choices,
    body.body.choices.map((c, i) => ({
      message: { ...c.message, content: i === 0 ? 'call <SSN>' : c.message.content },
    })),
  );
  assert.deepEqual(out[0], {
    index: 0,
    finish_reason: 'stop',
    message: { role: 'assistant', content: 'call <SSN>' },
  });
  assert.equal(out[1], choices[1]);
  assert.equal(out[2], choices[2]);
});

test('gateway side and webhook side meet over a socket: build, call, read the verdict, apply it', async () => {
  const server = createServer(
    createGuardrailHandler({
      onRequest: (call) =>
        maskMessages(
          call.body.messages.map((m) => ({ ...m, content: m.content.replaceAll('a@b.com', '<EMAIL>') })),
        ),
    }),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${REQUEST_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(promptRequestBody(CHAT)),
    });
    const verdict = promptVerdict(await res.json());
    assert.ok(verdict.ok && verdict.value.kind === 'modify');
    const out = applyMaskedMessages(CHAT, verdict.value.body.messages);
    assert.equal(messageText(out[1]?.content), 'mail <EMAIL>\nand c@d.com');
  } finally {
    server.close();
  }
});
