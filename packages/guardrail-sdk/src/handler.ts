// A framework-neutral handler for node:http that serves the two webhook endpoints: it checks what
// the gateway sent against the contract, calls the user's callback and checks the verdict it returns.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import {
  type GuardrailsPromptRequest,
  type GuardrailsPromptResponse,
  type GuardrailsResponseRequest,
  type GuardrailsResponseResponse,
  maskCountProblem,
  type ParseResult,
  parsePromptRequest,
  parsePromptResponse,
  parseResponseRequest,
  parseResponseResponse,
  REQUEST_PATH,
  RESPONSE_PATH,
} from './contract.ts';
import { GuardrailError } from './errors.ts';

/** The default limit on a webhook call's body: twice the gateway's default 2Mi buffer. */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface CallContext {
  /** The path the gateway called (a `:path` header expression can change it). */
  path: string;
  /** Headers of the webhook call, including any the gateway set from `webhook.headers`. */
  headers: IncomingHttpHeaders;
}

type Awaitable<T> = T | Promise<T>;

export interface GuardrailCallbacks {
  /** Request phase: called with the prompt messages before the request reaches the LLM. */
  onRequest?: (
    call: GuardrailsPromptRequest,
    ctx: CallContext,
  ) => Awaitable<z.input<typeof GuardrailsPromptResponse>>;
  /** Response phase: called with the LLM's choices before they return to the client. */
  onResponse?: (
    call: GuardrailsResponseRequest,
    ctx: CallContext,
  ) => Awaitable<z.input<typeof GuardrailsResponseResponse>>;
}

export interface HandlerOptions {
  /** Larger bodies get 413. Default {@link DEFAULT_MAX_BODY_BYTES}. */
  maxBodyBytes?: number;
  /** Where the request phase is served; default `/request`. */
  requestPath?: string;
  /** Where the response phase is served; default `/response`. */
  responsePath?: string;
}

export type GuardrailHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json(?:\s*;|\s*$)/i;

/**
 * Returns a `(req, res)` listener for `http.createServer`: `POST` to the request or response path
 * runs the matching callback; a phase without a callback is not served (404).
 */
export function createGuardrailHandler(
  callbacks: GuardrailCallbacks,
  options: HandlerOptions = {},
): GuardrailHandler {
  const routes = new Map<string, JsonEndpoint>();
  if (callbacks.onRequest)
    routes.set(options.requestPath ?? REQUEST_PATH, (json, ctx) => requestPhase(callbacks, json, ctx));
  if (callbacks.onResponse)
    routes.set(options.responsePath ?? RESPONSE_PATH, (json, ctx) => responsePhase(callbacks, json, ctx));
  return jsonEndpoints(routes, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
}

/** One endpoint of a handler: the decoded JSON body in, the verdict to send out. */
export type JsonEndpoint = (json: unknown, ctx: CallContext) => Promise<unknown>;

/**
 * The HTTP side every handler of this package shares: POST only, JSON only, a body limit, and
 * errors from the catalogue as `{"error": {...}}` with their status.
 */
export function jsonEndpoints(routes: Map<string, JsonEndpoint>, limit: number): GuardrailHandler {
  return async (req, res) => {
    try {
      const path = new URL(req.url ?? '/', 'http://webhook').pathname;
      const endpoint = routes.get(path);
      if (!endpoint)
        throw new GuardrailError('GW_ERR_GUARDRAIL_NOT_FOUND', `no guardrail endpoint at ${path}`);
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        throw new GuardrailError('GW_ERR_GUARDRAIL_METHOD', `${path} accepts POST only`);
      }
      const type = req.headers['content-type'];
      if (type !== undefined && !JSON_TYPE.test(type)) {
        throw new GuardrailError('GW_ERR_GUARDRAIL_CONTENT_TYPE', `expected application/json, got ${type}`);
      }
      const json = parseJson(await readBody(req, limit));
      send(res, 200, await endpoint(json, { path, headers: req.headers }));
    } catch (e) {
      const err =
        e instanceof GuardrailError
          ? e
          : new GuardrailError(
              'GW_ERR_GUARDRAIL_CALLBACK',
              `guardrail callback failed: ${(e as Error)?.message ?? e}`,
            );
      if (err.code === 'GW_ERR_GUARDRAIL_BODY_TOO_LARGE') {
        // The rest of the body is not read; the connection cannot be reused.
        res.setHeader('connection', 'close');
      }
      send(res, err.status, err.toBody());
    }
  };
}

async function requestPhase(
  callbacks: GuardrailCallbacks,
  json: unknown,
  ctx: CallContext,
): Promise<unknown> {
  const call = valid(parsePromptRequest(json), 'GW_ERR_GUARDRAIL_INVALID_BODY');
  const out = valid(
    parsePromptResponse(await callbacks.onRequest!(call, ctx)),
    'GW_ERR_GUARDRAIL_INVALID_VERDICT',
  );
  if ('body' in out.action && typeof out.action.body === 'object') {
    const problem = maskCountProblem(call.body.messages.length, out.action.body.messages.length, 'messages');
    if (problem) throw new GuardrailError('GW_ERR_GUARDRAIL_INVALID_VERDICT', `invalid verdict: ${problem}`);
  }
  return out;
}

async function responsePhase(
  callbacks: GuardrailCallbacks,
  json: unknown,
  ctx: CallContext,
): Promise<unknown> {
  const call = valid(parseResponseRequest(json), 'GW_ERR_GUARDRAIL_INVALID_BODY');
  const out = valid(
    parseResponseResponse(await callbacks.onResponse!(call, ctx)),
    'GW_ERR_GUARDRAIL_INVALID_VERDICT',
  );
  if ('body' in out.action && typeof out.action.body === 'object') {
    const problem = maskCountProblem(call.body.choices.length, out.action.body.choices.length, 'choices');
    if (problem) throw new GuardrailError('GW_ERR_GUARDRAIL_INVALID_VERDICT', `invalid verdict: ${problem}`);
  }
  return out;
}

export function valid<T>(
  r: ParseResult<T>,
  code: 'GW_ERR_GUARDRAIL_INVALID_BODY' | 'GW_ERR_GUARDRAIL_INVALID_VERDICT',
): T {
  if (r.ok) return r.value;
  throw new GuardrailError(
    code,
    code === 'GW_ERR_GUARDRAIL_INVALID_VERDICT' ? `callback returned an ${r.error}` : r.error,
  );
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () =>
    new GuardrailError('GW_ERR_GUARDRAIL_BODY_TOO_LARGE', `request body is larger than ${limit} bytes`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new GuardrailError(
      'GW_ERR_GUARDRAIL_BAD_JSON',
      `request body is not valid JSON: ${(e as Error).message}`,
    );
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': data.length });
  res.end(data);
}
