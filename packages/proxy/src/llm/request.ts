// Reading an LLM request: the client API from the path, the body (up to the buffer limit) parsed as
// JSON, the model and stream flag. The result is the request's LLM slot; the body stays in memory so
// a failover can send it again.
import { GwError } from '../errors.ts';
import { readRequestBody } from '../pipeline/body.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../pipeline/json-depth.ts';
import { type ClientApi, clientApiFor } from './formats/clients.ts';
import { LlmRequestState } from './state.ts';

/**
 * The request's LLM slot, reading the request when nobody has yet; undefined when the path is not
 * one of the LLM APIs (the model list, a path the backend does not serve).
 */
export async function readLlmRequest(
  ctx: RequestContext,
  limit: number,
  api: ClientApi | undefined = clientApiFor(ctx.path),
): Promise<LlmRequestState | undefined> {
  const known = ctx.ext.llm;
  if (known) return known;
  if (!api) return undefined;
  if (ctx.method !== 'POST') {
    throw new GwError('GW_ERR_METHOD_NOT_ALLOWED', `${api.path} takes POST, not ${ctx.method}`, {
      headers: { allow: 'POST' },
    });
  }
  const raw = await readBody(ctx, limit);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new GwError(
      'GW_ERR_LLM_BAD_REQUEST',
      `the request body is not valid JSON: ${(err as Error).message}`,
    );
  }
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new GwError('GW_ERR_LLM_BAD_REQUEST', 'the request body must be a JSON object');
  if (nestedDeeperThan(body))
    throw new GwError(
      'GW_ERR_LLM_BAD_REQUEST',
      `the request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`,
    );
  const json = body as Record<string, unknown>;
  api.normalize?.(json);
  const model = api.model(json, ctx.path);
  if (model === undefined)
    throw new GwError(
      'GW_ERR_LLM_BAD_REQUEST',
      `the request must name a model ${api.modelAt ?? '(a "model" string)'}`,
    );
  const stream = api.stream(json, ctx.path);
  const refused = api.refuseQuery?.(ctx.query, stream);
  if (refused) throw new GwError('GW_ERR_LLM_BAD_REQUEST', refused);
  const state = new LlmRequestState(api.format, json, model, stream);
  ctx.ext.llm = state;
  return state;
}

/**
 * A forwarded request's body, kept in memory (a failover sends it again, a signer reads it) and, for
 * detect, read as `api` when it is one: a body that is not (not JSON, no model) is forwarded all the
 * same, unread.
 */
export async function readForwarded(
  ctx: RequestContext,
  limit: number,
  api: ClientApi | undefined,
): Promise<LlmRequestState | undefined> {
  if (ctx.ext.llm) return ctx.ext.llm;
  if (ctx.body !== null && !Buffer.isBuffer(ctx.body)) await readBody(ctx, limit);
  if (!api || ctx.method !== 'POST') return undefined;
  try {
    return await readLlmRequest(ctx, limit, api);
  } catch (err) {
    if (err instanceof GwError && err.code === 'GW_ERR_LLM_BAD_REQUEST') return undefined;
    throw err;
  }
}

async function readBody(ctx: RequestContext, limit: number): Promise<Buffer> {
  if (ctx.body === null) throw new GwError('GW_ERR_LLM_BAD_REQUEST', 'the request has no body');
  // kept for a second attempt (failover); the provider gets a body of its own
  return readRequestBody(ctx, limit);
}
