// The client-side APIs an `ai` backend serves, by request path: which format the body is in, how its
// errors are worded, and where its model and stream flag are. A new client format is one entry here
// plus its format pairs.
import type { AiRouteType } from '@gw/api';
import { LLM_API_PATH_REGEXES } from '@gw/api/llm/api-paths';
import type { LlmFormat } from '../../config/ir.ts';
import type { ErrorFormat } from '../../errors.ts';
import type { JsonObject } from './types.ts';

export interface ClientApi {
  format: LlmFormat;
  /** The path the API is served at (the request path ends with it), as error messages name it. */
  path: string;
  /** Whether a request path is this API, where a suffix does not tell (the model is in the path). */
  matches?(path: string): boolean;
  /** For such an API, the paths the llm block's route takes, as a regular expression. */
  pathRegex?: string;
  errorFormat: Exclude<ErrorFormat, 'http' | 'grpc' | 'jsonrpc'>;
  /** The requested model; undefined when the request names none. */
  model(body: JsonObject, path: string): string | undefined;
  /** Where `model` looks, for the error when it finds none. */
  modelAt?: string;
  /** Whether the client asks for a streamed answer. */
  stream(body: JsonObject, path: string): boolean;
  /** Why a request's query cannot be served as asked (undefined: it can). */
  refuseQuery?(query: string, stream: boolean): string | undefined;
  /** Takes out of the body what belongs to the client's wire shape only (before any conversion). */
  normalize?(body: JsonObject): void;
}

const modelField = (b: JsonObject) => (typeof b.model === 'string' && b.model !== '' ? b.model : undefined);
const streamField = (b: JsonObject) => b.stream === true;

/** Gemini's native methods: `…/models/<model>:<method>` (the Gemini API's /v1beta, Vertex AI's publishers/google). */
const GEMINI_METHOD = /\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens)$/;
/** A model's path segment decoded; undefined when there is none or it does not decode. */
const modelSegment = (m: string | undefined) => {
  if (m === undefined) return undefined;
  try {
    return decodeURIComponent(m);
  } catch {
    return undefined;
  }
};
const geminiModel = (path: string) => modelSegment(GEMINI_METHOD.exec(path)?.[1]);
const geminiMethod = (path: string) => GEMINI_METHOD.exec(path)?.[2];

/**
 * Claude on Vertex AI as its clients call it (@anthropic-ai/vertex-sdk, Claude Code with Vertex):
 * `…/publishers/anthropic/models/<model>:rawPredict` or `:streamRawPredict`, a Messages body without
 * the model and with `anthropic_version`; the token count at `…/models/count-tokens:rawPredict`, the
 * model in its body.
 */
const VERTEX_CLAUDE = /\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/;
const vertexClaude = (path: string) => {
  const m = VERTEX_CLAUDE.exec(path);
  return m ? { model: m[1] as string, method: m[2] as string } : undefined;
};
const dropVersion = (b: JsonObject) => {
  delete b.anthropic_version;
};

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
  {
    format: 'anthropic-messages',
    path: '/publishers/anthropic/models/<model>:rawPredict',
    matches: (p) => {
      const v = vertexClaude(p);
      return v !== undefined && v.model !== 'count-tokens';
    },
    pathRegex: LLM_API_PATH_REGEXES.vertexClaude,
    errorFormat: 'anthropic',
    model: (_b, p) => modelSegment(vertexClaude(p)?.model),
    modelAt: 'in its path (…/publishers/anthropic/models/<model>:rawPredict)',
    stream: (b, p) => b.stream === true || vertexClaude(p)?.method === 'streamRawPredict',
    normalize: dropVersion,
  },
  {
    format: 'anthropic-count-tokens',
    path: '/publishers/anthropic/models/count-tokens:rawPredict',
    matches: (p) => vertexClaude(p)?.model === 'count-tokens',
    errorFormat: 'anthropic',
    model: modelField,
    stream: () => false,
    normalize: dropVersion,
  },
  // Google's own clients (@google/genai, the Vertex AI SDKs): the model and the streaming in the path,
  // errors in Google's shape
  {
    format: 'gemini-generate-content',
    path: '/models/<model>:generateContent',
    matches: (p) => {
      const m = geminiMethod(p);
      return m === 'generateContent' || m === 'streamGenerateContent';
    },
    pathRegex: LLM_API_PATH_REGEXES.geminiGenerateContent,
    errorFormat: 'status',
    model: (_b, p) => geminiModel(p),
    modelAt: 'in its path (…/models/<model>:generateContent)',
    stream: (_b, p) => geminiMethod(p) === 'streamGenerateContent',
    // without alt=sse Google streams one JSON array, which the gateway does not write
    refuseQuery: (q, stream) =>
      stream && !new URLSearchParams(q.slice(1)).has('alt', 'sse')
        ? 'streamGenerateContent is served as server-sent events only: add ?alt=sse'
        : undefined,
  },
  {
    format: 'gemini-count-tokens',
    path: '/models/<model>:countTokens',
    matches: (p) => geminiMethod(p) === 'countTokens',
    pathRegex: LLM_API_PATH_REGEXES.geminiCountTokens,
    errorFormat: 'status',
    model: (_b, p) => geminiModel(p),
    modelAt: 'in its path (…/models/<model>:countTokens)',
    stream: () => false,
  },
];

/** The path of the model list (OpenAI's `GET /v1/models`). */
export const MODELS_PATH = '/v1/models';

/** The client API a request path asks for; undefined when the path serves none. */
export function clientApiFor(path: string): ClientApi | undefined {
  for (const api of CLIENT_APIS) if (api.matches ? api.matches(path) : path.endsWith(api.path)) return api;
  return undefined;
}

/** How an ai backend serves a request: as a client API, the model list, or forwarded as it is. */
export type LlmRoute =
  | { api: ClientApi }
  | { models: true }
  | { forward: 'passthrough' | 'detect' | 'realtime' };

const ROUTE_FORMATS: Partial<Record<AiRouteType, LlmFormat>> = {
  completions: 'openai-chat',
  messages: 'anthropic-messages',
  responses: 'openai-responses',
  embeddings: 'openai-embeddings',
  anthropicTokenCount: 'anthropic-count-tokens',
  generateContent: 'gemini-generate-content',
  geminiCountTokens: 'gemini-count-tokens',
};

/**
 * What a request path is to an ai backend. Without `routes` (the ai policy's, longest suffix first,
 * `*` last) the APIs' standard paths tell, and another path is none (undefined). With them the first
 * suffix the path ends with tells, else `*`, else a chat completion (as agentgateway does).
 */
export function compileRoutes(
  routes: readonly (readonly [string, AiRouteType])[] | undefined,
): (path: string, method: string) => LlmRoute | undefined {
  if (!routes) {
    return (path) => {
      // any method: the model list answers one it does not take with 405
      if (path.endsWith(MODELS_PATH)) return { models: true };
      const api = clientApiFor(path);
      return api ? { api } : undefined;
    };
  }
  const byType = (t: AiRouteType): LlmRoute => {
    if (t === 'models') return { models: true };
    if (t === 'passthrough' || t === 'detect' || t === 'realtime') return { forward: t };
    const format = ROUTE_FORMATS[t];
    const api = CLIENT_APIS.find((a) => a.format === format);
    // checkAiPolicy refuses the types this build does not serve
    if (!api) throw new Error(`route type ${t} has no client API`);
    return { api };
  };
  const suffixes = routes.filter(([s]) => s !== '*').map(([s, t]) => [s, byType(t)] as const);
  const star = routes.find(([s]) => s === '*');
  const fallback = byType(star ? star[1] : 'completions');
  return (path) => {
    for (const [suffix, route] of suffixes) if (path.endsWith(suffix)) return route;
    return fallback;
  };
}
