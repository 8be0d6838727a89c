// The `ai` backend: an LLM gateway in front of providers. It reads the client's request (an OpenAI
// chat completion, …), picks the model that serves it (llm/router.ts), converts and sends it to the
// provider and converts the answer back as it streams (llm/model.ts). `GET /v1/models` lists the
// public models. Errors reach the client in its own API's shape. The ai policy's `routes` may say
// otherwise which API a path is, or forward requests at some paths as they are (passthrough, detect).
import { GwError } from '../../../errors.ts';
import { clientApiFor, compileRoutes } from '../../../llm/formats/clients.ts';
import { readForwarded, readLlmRequest } from '../../../llm/request.ts';
import { compileAi } from '../../../llm/router.ts';
import type { RequestContext } from '../../../pipeline/context.ts';
import type { BackendKind } from '../types.ts';

export const aiBackend: BackendKind<'ai'> = {
  kind: 'ai',
  compile(t, env) {
    const limit = env.global.maxBufferSize;
    const ai = compileAi(t, env, limit);
    // the ai policy's models, else the models served by name
    const listed = t.modelList
      ? t.modelList.map((m) => ({
          id: m.id,
          ownedBy: m.ownedBy ?? ai.models[0]?.ir.provider.name ?? 'gw',
          created: m.created ?? 0,
        }))
      : ai.listed;
    const list = modelList(listed);
    const first = ai.models[0];
    const routeOf = compileRoutes(t.routes);
    /** The request to the model that serves `model`, if the API key may use it. */
    const serveModel = async (ctx: RequestContext, model: string) => {
      const allowed = ctx.ext.allowedModels;
      if (allowed && !allowed(model))
        throw new GwError(
          'GW_ERR_FORBIDDEN',
          model === '*'
            ? 'this API key may use only some models, and this forwarded request names none'
            : `this API key may not use the model ${JSON.stringify(model)}`,
        );
      const serve = ai.route(model);
      if (!serve) {
        throw new GwError(
          'GW_ERR_LLM_UNKNOWN_MODEL',
          model === '*'
            ? 'a forwarded request names no model, and no model of this backend serves any name'
            : `the model ${JSON.stringify(model)} does not exist on this gateway`,
        );
      }
      await serve(ctx);
    };
    return {
      type: 'ai',
      protocol: first?.endpoint.endsWith(':443') ? 'https' : 'http',
      target: (ctx) => ctx.endpoint ?? first?.endpoint ?? '',
      errorFormat: 'openai',
      errorFormatOf: (url) => {
        const r = routeOf(url.split('?', 1)[0] ?? url, 'POST');
        return r && 'api' in r ? r.api.errorFormat : 'openai';
      },
      // Before the route's policies, so they (authorization, rate limits) can read llm.* in CEL.
      // Only a POST is an LLM call: a CORS preflight (OPTIONS) must reach the CORS policy unread.
      prepare: async (ctx) => {
        if (ctx.method !== 'POST') return;
        const r = routeOf(ctx.path, ctx.method);
        if (r && 'api' in r) await readLlmRequest(ctx, limit, r.api);
        else if (r && 'forward' in r && r.forward === 'detect')
          await readForwarded(ctx, limit, clientApiFor(ctx.path));
      },
      call: async (ctx) => {
        const allowed = ctx.ext.allowedModels;
        const r = routeOf(ctx.path, ctx.method);
        if (r && 'models' in r) {
          if (ctx.method !== 'GET' && ctx.method !== 'HEAD')
            throw new GwError('GW_ERR_METHOD_NOT_ALLOWED', `the model list takes GET, not ${ctx.method}`, {
              headers: { allow: 'GET, HEAD' },
            });
          // an API key limited to some models sees only those
          const body = allowed ? modelList(listed.filter((m) => allowed(m.id))) : list;
          ctx.response = {
            status: 200,
            headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
            body,
          };
          return;
        }
        let model: string;
        if (r && 'forward' in r) {
          const state = await readForwarded(
            ctx,
            limit,
            r.forward === 'detect' ? clientApiFor(ctx.path) : undefined,
          );
          ctx.ext.llmForward = r.forward;
          // Providers of a route's ai backend serve any name (`*`); a model list needs the body's.
          model = state?.requestModel ?? '*';
        } else {
          const state = r ? await readLlmRequest(ctx, limit, r.api) : undefined;
          if (!state)
            throw new GwError('GW_ERR_NO_ROUTE', `${ctx.path} is not an LLM API this gateway serves`);
          model = state.requestModel;
        }
        await serveModel(ctx, model);
      },
      // A realtime route's WebSocket: the model from `?model=` (OpenAI's Realtime API names it there)
      upgrade: async (ctx) => {
        const r = routeOf(ctx.path, ctx.method);
        if (!r || !('forward' in r) || r.forward !== 'realtime')
          throw new GwError(
            'GW_ERR_UPGRADE_UNSUPPORTED',
            `${ctx.path} is not a realtime route of this ai backend (its ai policy's routes name realtime paths)`,
          );
        ctx.ext.llmForward = 'realtime';
        await serveModel(ctx, new URLSearchParams(ctx.query.slice(1)).get('model') ?? '*');
      },
    };
  },
};

/** `GET /v1/models`'s answer: OpenAI's list shape. */
function modelList(listed: { id: string; ownedBy: string; created?: number }[]): Buffer {
  return Buffer.from(
    JSON.stringify({
      object: 'list',
      data: listed.map((m) => ({ id: m.id, object: 'model', created: m.created ?? 0, owned_by: m.ownedBy })),
    }),
  );
}
