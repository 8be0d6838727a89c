// The gateway's side of the contract: building the webhook bodies from OpenAI-style chat messages
// and choices, and writing a mask verdict back into them.
import {
  type GuardrailsPromptRequest,
  type GuardrailsResponseRequest,
  type Message,
  maskCountProblem,
  type ResponseChoice,
} from './contract.ts';

/** A content part of an OpenAI chat message; only `text` parts carry text the webhook sees. */
export interface ContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** An OpenAI-style chat message (request `messages[]` or response `choices[].message`). */
export interface ChatMessageLike {
  role: string;
  content?: string | ContentPart[] | null;
  [key: string]: unknown;
}

export interface ChoiceLike {
  message?: ChatMessageLike | null;
  [key: string]: unknown;
}

// Text parts are joined with a newline so the last word of one part and the first of the next are
// not run together into a word no pattern matches.
const PART_SEPARATOR = '\n';

/** The text the webhook sees for one message: the string, or its text parts joined; '' for none. */
export function messageText(content: ChatMessageLike['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p) => p.type === 'text' && typeof p.text === 'string' && p.text !== '')
    .map((p) => p.text)
    .join(PART_SEPARATOR);
}

function toMessage(m: ChatMessageLike | null | undefined, fallbackRole: string): Message {
  return { role: m?.role ?? fallbackRole, content: messageText(m?.content) };
}

/** The request-phase body for `POST /request`: one webhook message per chat message, in order. */
export function promptRequestBody(messages: readonly ChatMessageLike[]): GuardrailsPromptRequest {
  return { body: { messages: messages.map((m) => toMessage(m, 'user')) } };
}

/** The response-phase body for `POST /response`: one webhook choice per completion choice, in order. */
export function responseRequestBody(choices: readonly ChoiceLike[]): GuardrailsResponseRequest {
  return { body: { choices: choices.map((c) => ({ message: toMessage(c.message, 'assistant') })) } };
}

/**
 * Writes masked text back into one message. An unchanged text leaves the message as it was (images,
 * tool calls and part structure intact); a changed one replaces the text, in the first text part
 * when the content is a part list. The role stays the client's: a mask changes content, not who
 * said it.
 */
function applyText<M extends ChatMessageLike>(original: M, masked: string): M {
  if (masked === messageText(original.content)) return original;
  const content = original.content;
  if (!Array.isArray(content)) return { ...original, content: masked };
  const parts: ContentPart[] = [];
  let placed = false;
  for (const p of content) {
    if (p.type !== 'text') parts.push(p);
    else if (!placed) {
      parts.push({ ...p, text: masked });
      placed = true;
    }
  }
  if (!placed) parts.unshift({ type: 'text', text: masked });
  return { ...original, content: parts };
}

export class MaskShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MaskShapeError';
  }
}

/** Applies a request-phase mask to the chat messages it was computed from; throws MaskShapeError on a count mismatch. */
export function applyMaskedMessages<M extends ChatMessageLike>(
  messages: readonly M[],
  masked: readonly Message[],
): M[] {
  const problem = maskCountProblem(messages.length, masked.length, 'messages');
  if (problem) throw new MaskShapeError(problem);
  return messages.map((m, i) => applyText(m, masked[i]!.content));
}

/** Applies a response-phase mask to the completion choices it was computed from; throws MaskShapeError on a count mismatch. */
export function applyMaskedChoices<C extends ChoiceLike>(
  choices: readonly C[],
  masked: readonly ResponseChoice[],
): C[] {
  const problem = maskCountProblem(choices.length, masked.length, 'choices');
  if (problem) throw new MaskShapeError(problem);
  return choices.map((c, i) => {
    const text = masked[i]!.message.content;
    const message = c.message ?? { role: 'assistant', content: null };
    const next = applyText(message, text);
    return next === message ? c : { ...c, message: next };
  });
}
