// The `ai` backend: an LLM gateway in front of providers. It reads the client's request (an OpenAI
// chat completion, …), picks the model that serves it (llm/router.ts), converts and sends it to the
// provider and converts the answer back as it streams (llm/model.ts). `GET /v1/models` lists the
// public models. Errors reach the client in its own API's shape.
import { GwError } from '../../../errors.ts';
import { clientApiFor, MODELS_PATH } from '../../../llm/formats/clients.ts';
import { readLlmRequest } from '../../../llm/request.ts';
import { compileAi } from '../../../llm/router.ts';
import type { BackendKind } from '../types.ts';

export const aiBackend: BackendKind<'ai'> = {
  kind: 'ai',
  compile(t, env) {
    const limit = env.global.maxBufferSize;
    const ai = compileAi(t, env, limit);
    const list = modelList(ai.listed);
    const first = ai.models[0];
    return {
      type: 'ai',
      protocol: first?.endpoint.endsWith(':443') ? 'https' : 'http',
      target: (ctx) => ctx.endpoint ?? first?.endpoint ?? '',
      errorFormat: 'openai',
      errorFormatOf: (url) => clientApiFor(url.split('?', 1)[0] ?? url)?.errorFormat ?? 'openai',
      // Before the route's policies, so they (authorization, rate limits) can read llm.* in CEL.
      // Only a POST is an LLM call: a CORS preflight (OPTIONS) must reach the CORS policy unread.
      prepare: async (ctx) => {
        if (ctx.method === 'POST') await readLlmRequest(ctx, limit);
      },
      call: async (ctx) => {
        const allowed = ctx.ext.allowedModels;
        if (ctx.path.endsWith(MODELS_PATH) && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
          // an API key limited to some models sees only those
          const body = allowed ? modelList(ai.listed.filter((m) => allowed(m.id))) : list;
          ctx.response = {
            status: 200,
            headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
            body,
          };
          return;
        }
        const state = await readLlmRequest(ctx, limit);
        if (!state) throw new GwError('GW_ERR_NO_ROUTE', `${ctx.path} is not an LLM API this gateway serves`);
        if (allowed && !allowed(state.requestModel))
          throw new GwError(
            'GW_ERR_FORBIDDEN',
            `this API key may not use the model ${JSON.stringify(state.requestModel)}`,
          );
        const serve = ai.route(state.requestModel);
        if (!serve) {
          throw new GwError(
            'GW_ERR_LLM_UNKNOWN_MODEL',
            `the model ${JSON.stringify(state.requestModel)} does not exist on this gateway`,
          );
        }
        await serve(ctx);
      },
    };
  },
};

/** `GET /v1/models`'s answer: OpenAI's list shape. */
function modelList(listed: { id: string; ownedBy: string }[]): Buffer {
  return Buffer.from(
    JSON.stringify({
      object: 'list',
      data: listed.map((m) => ({ id: m.id, object: 'model', created: 0, owned_by: m.ownedBy })),
    }),
  );
}
