// The operation paths of OpenAI's API, shared by the providers that copy it (OpenAI, Azure's v1 API,
// Mistral, OpenAI-compatible custom endpoints).
import type { LlmFormat } from '../../config/ir.ts';

export const OPENAI_OPERATIONS: Partial<Record<LlmFormat, string>> = {
  'openai-chat': '/chat/completions',
  'openai-responses': '/responses',
  'openai-embeddings': '/embeddings',
};

export function openaiOperation(format: LlmFormat): string {
  const op = OPENAI_OPERATIONS[format];
  // The serving code only asks for formats the provider listed, so this is a programming error.
  if (op === undefined) throw new Error(`no OpenAI-style path for ${format}`);
  return op;
}

/** `Authorization: Bearer <key>`; without a configured key the client's own header passes. */
export function bearer(headers: Record<string, string | string[]>, key: string | undefined): void {
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
}
