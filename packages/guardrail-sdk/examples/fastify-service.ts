// An example guardrail webhook on fastify: it checks each call against the contract, rejects
// content with a banned word, masks e-mail addresses and US social security numbers, passes the rest.
// Run: node packages/guardrail-sdk/examples/fastify-service.ts   (PORT, HOST, BANNED_WORDS from the env)
import { fileURLToPath } from 'node:url';
import {
  type ErrorCode,
  GuardrailError,
  type Message,
  maskChoices,
  maskMessages,
  parsePromptRequest,
  parseResponseRequest,
  pass,
  REQUEST_PATH,
  RESPONSE_PATH,
  reject,
} from '@gw/guardrail-sdk';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';

export interface ServiceOptions {
  /** Words (case-insensitive, whole words) that make the gateway refuse the request or answer. */
  bannedWords?: readonly string[];
  logger?: boolean;
  /** Webhook bodies above this size get 413; fastify's own default is 1 MiB. */
  bodyLimit?: number;
}

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;
const SSN = /\b\d{3}-\d{2}-\d{4}\b/g;

/** Masks e-mail addresses and SSNs with the same placeholders the gateway's builtin regex guards use. */
export function maskText(text: string): string {
  return text.replace(EMAIL, '<EMAIL_ADDRESS>').replace(SSN, '<SSN>');
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function buildGuardrailService(options: ServiceOptions = {}): FastifyInstance {
  const words = (options.bannedWords ?? ['jailbreak']).filter((w) => w.trim() !== '');
  const banned =
    words.length > 0 ? new RegExp(`\\b(?:${words.map(escapeRegExp).join('|')})\\b`, 'i') : undefined;
  const bannedIn = (messages: readonly Message[]) =>
    banned ? messages.map((m) => banned.exec(m.content)?.[0]).find((w) => w !== undefined) : undefined;

  const app = Fastify({ logger: options.logger ?? false, bodyLimit: options.bodyLimit ?? 4 * 1024 * 1024 });
  // The gateway sends application/json only; anything else is refused with 415.
  app.removeContentTypeParser('text/plain');

  const fail = (reply: FastifyReply, code: ErrorCode, message: string) => {
    const err = new GuardrailError(code, message);
    return reply.code(err.status).send(err.toBody());
  };

  app.post(REQUEST_PATH, async (request, reply) => {
    const call = parsePromptRequest(request.body);
    if (!call.ok) return fail(reply, 'GW_ERR_GUARDRAIL_INVALID_BODY', call.error);
    const { messages } = call.value.body;
    const word = bannedIn(messages);
    if (word)
      return reject(403, 'The request was rejected: it mentions a banned word.', `banned word "${word}"`);
    const masked = messages.map((m) => ({ role: m.role, content: maskText(m.content) }));
    if (masked.some((m, i) => m.content !== messages[i]!.content)) {
      return maskMessages(masked, 'masked e-mail addresses and SSNs');
    }
    return pass('nothing to mask');
  });

  app.post(RESPONSE_PATH, async (request, reply) => {
    const call = parseResponseRequest(request.body);
    if (!call.ok) return fail(reply, 'GW_ERR_GUARDRAIL_INVALID_BODY', call.error);
    const { choices } = call.value.body;
    const word = bannedIn(choices.map((c) => c.message));
    if (word)
      return reject(403, 'The answer was withheld: it mentions a banned word.', `banned word "${word}"`);
    const masked = choices.map((c) => ({ message: { ...c.message, content: maskText(c.message.content) } }));
    if (masked.some((c, i) => c.message.content !== choices[i]!.message.content)) {
      return maskChoices(masked, 'masked e-mail addresses and SSNs');
    }
    return pass('nothing to mask');
  });

  // fastify's own errors (malformed JSON, empty body, too large, wrong media type) in the same
  // `{"error": {"code", "message"}}` shape as the SDK's node:http handler.
  app.setErrorHandler((error: { statusCode?: number; message: string }, _request, reply) => {
    const status = error.statusCode ?? 500;
    const code: ErrorCode =
      status === 413
        ? 'GW_ERR_GUARDRAIL_BODY_TOO_LARGE'
        : status === 415
          ? 'GW_ERR_GUARDRAIL_CONTENT_TYPE'
          : status === 400
            ? 'GW_ERR_GUARDRAIL_BAD_JSON'
            : 'GW_ERR_GUARDRAIL_CALLBACK';
    return reply.code(status).send({ error: { code, message: error.message } });
  });
  app.setNotFoundHandler((request, reply) =>
    fail(reply, 'GW_ERR_GUARDRAIL_NOT_FOUND', `no guardrail endpoint at ${request.method} ${request.url}`),
  );
  return app;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const app = buildGuardrailService({
    logger: true,
    ...(process.env['BANNED_WORDS'] !== undefined && { bannedWords: process.env['BANNED_WORDS'].split(',') }),
  });
  await app.listen({ port: Number(process.env['PORT'] ?? 8080), host: process.env['HOST'] ?? '127.0.0.1' });
}
