// The client-side APIs an `ai` backend serves, by request path: which format the body is in, how its
// errors are worded, and where its model and stream flag are. A new client format is one entry here
// plus its format pairs.
import type { LlmFormat } from '../../config/ir.ts';
import type { ErrorFormat } from '../../errors.ts';
import type { JsonObject } from './types.ts';

export interface ClientApi {
  format: LlmFormat;
  /** The path the API is served at (the request path ends with it). */
  path: string;
  errorFormat: Exclude<ErrorFormat, 'http' | 'grpc' | 'jsonrpc'>;
  /** The requested model; undefined when the body names none. */
  model(body: JsonObject): string | undefined;
  /** Whether the client asks for a streamed answer. */
  stream(body: JsonObject): boolean;
}

const modelField = (b: JsonObject) => (typeof b.model === 'string' && b.model !== '' ? b.model : undefined);
const streamField = (b: JsonObject) => b.stream === true;

export const CLIENT_APIS: readonly ClientApi[] = [
  {
    format: 'openai-chat',
    path: '/v1/chat/completions',
    errorFormat: 'openai',
    model: modelField,
    stream: streamField,
  },
  {
    format: 'openai-responses',
    path: '/v1/responses',
    errorFormat: 'openai',
    model: modelField,
    stream: streamField,
  },
  {
    format: 'openai-embeddings',
    path: '/v1/embeddings',
    errorFormat: 'openai',
    model: modelField,
    stream: () => false,
  },
  {
    format: 'anthropic-messages',
    path: '/v1/messages',
    errorFormat: 'anthropic',
    model: modelField,
    stream: streamField,
  },
  {
    format: 'anthropic-count-tokens',
    path: '/v1/messages/count_tokens',
    errorFormat: 'anthropic',
    model: modelField,
    stream: () => false,
  },
];

/** The path of the model list (OpenAI's `GET /v1/models`). */
export const MODELS_PATH = '/v1/models';

/** The client API a request path asks for; undefined when the path serves none. */
export function clientApiFor(path: string): ClientApi | undefined {
  for (const api of CLIENT_APIS) if (path.endsWith(api.path)) return api;
  return undefined;
}
