// The first look at a request on an A2A route, before the route's policies (so they can read a2a.*
// in CEL): a GET of the agent card, a call of the HTTP+JSON binding known by its path (a2a/rest.ts),
// or a JSON-RPC call whose body is read, up to the buffer limit, to learn its method and task. Other
// requests (another content type: gRPC, a file; a JSON object that is not JSON-RPC) pass unread.
import { GwError } from '../errors.ts';
import { readRequestBody } from '../pipeline/body.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { cardSuffix } from './card.ts';
import { type A2aRequestInfo, AGENT_CARD } from './info.ts';
import { readRequest } from './jsonrpc.ts';
import { readRestBody, restOperation } from './rest.ts';

export async function readA2aRequest(ctx: RequestContext, limit: number): Promise<void> {
  if ((ctx.method === 'GET' || ctx.method === 'HEAD') && cardSuffix(ctx.path)) {
    ctx.ext.a2a = { method: AGENT_CARD };
    // The card is rewritten on its way back, which a compressed body would prevent.
    delete ctx.headers['accept-encoding'];
    return;
  }
  // A call of the HTTP+JSON binding, known by its method and path; its body is the agent's to judge.
  const rest = restOperation(ctx.method, ctx.path);
  if (rest) {
    ctx.ext.a2a = rest;
    if (ctx.method === 'POST' && isJson(ctx.headers['content-type'])) {
      const body = await readBody(ctx, limit).catch((err: unknown) => {
        if (err instanceof GwError) rest.outcome = 'invalid';
        throw err;
      });
      readRestBody(body, rest);
    }
    ctx.obs?.event(ctx, 'a2a', requestFields(rest), null, 'info');
    return;
  }
  if (ctx.method !== 'POST' || !isJson(ctx.headers['content-type'])) return;
  const info: A2aRequestInfo = { method: 'unknown' };
  ctx.ext.a2a = info;
  try {
    if (!readRequest(await readBody(ctx, limit), info)) {
      delete ctx.ext.a2a;
      return;
    }
  } catch (err) {
    if (err instanceof GwError) info.outcome = 'invalid';
    throw err;
  } finally {
    if (ctx.ext.a2a)
      ctx.obs?.event(ctx, 'a2a', requestFields(info), null, info.outcome === 'invalid' ? 'warn' : 'info');
  }
}

function requestFields(info: A2aRequestInfo): Record<string, unknown> {
  const f: Record<string, unknown> = { phase: 'request', method: info.method };
  if (info.binding) f.binding = info.binding;
  if (info.id !== undefined) f.id = info.id;
  if (info.taskId) f.taskId = info.taskId;
  if (info.contextId) f.contextId = info.contextId;
  if (info.outcome) f.outcome = info.outcome;
  return f;
}

/** JSON-RPC clients send JSON; a request without a content type is read as JSON too. */
function isJson(type: string | string[] | undefined): boolean {
  if (type === undefined) return true;
  const t = (Array.isArray(type) ? type[0] : type)?.split(';', 1)[0]?.trim().toLowerCase() ?? '';
  return t === '' || t === 'application/json' || t.endsWith('+json');
}

async function readBody(ctx: RequestContext, limit: number): Promise<Buffer> {
  const had = ctx.body;
  // kept, so a retry can send it again
  const data = await readRequestBody(ctx, limit);
  if (had !== null && !Buffer.isBuffer(had)) ctx.headers['content-length'] = String(data.length);
  return data;
}
