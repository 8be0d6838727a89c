// The `a2a` backend: an A2A agent at host:port, called like a host backend (same pool, same errors),
// with A2A's view on top: the request is read before the route's policies (a2a/request.ts), the
// agent card is pointed at the gateway (a2a/card.ts) and answers are read as they stream by
// (a2a/answer.ts). Errors the gateway answers itself are JSON-RPC errors, or for a call of the
// HTTP+JSON binding Google-style status objects as that binding's own.
import { watchAnswer } from '../../../a2a/answer.ts';
import { rewriteCardResponse } from '../../../a2a/card.ts';
import { AGENT_CARD } from '../../../a2a/info.ts';
import { readA2aRequest } from '../../../a2a/request.ts';
import { isRestPath } from '../../../a2a/rest.ts';
import { hostBackend } from '../host/index.ts';
import type { BackendKind } from '../types.ts';

export const a2aBackend: BackendKind<'a2a'> = {
  kind: 'a2a',
  compile(t, env) {
    const host = hostBackend.compile({ kind: 'host', host: t.host, port: t.port }, env);
    const limit = env.global.maxBufferSize;
    return {
      type: 'a2a',
      protocol: host.protocol,
      target: host.target,
      errorFormat: 'jsonrpc',
      // a call of the HTTP+JSON binding gets the gateway's errors in that binding's shape
      errorFormatOf: (url) => (isRestPath(url) ? 'status' : 'jsonrpc'),
      ...(host.probe ? { probe: host.probe } : {}),
      prepare: (ctx) => readA2aRequest(ctx, limit),
      call: async (ctx) => {
        const info = ctx.ext.a2a;
        if (!info) return host.call(ctx);
        // A retried call starts over.
        delete info.outcome;
        try {
          await host.call(ctx);
        } catch (err) {
          info.outcome = 'failed';
          ctx.obs?.event(
            ctx,
            'a2a',
            { phase: 'response', method: info.method, outcome: 'failed' },
            null,
            'warn',
          );
          throw err;
        }
        if (info.method !== AGENT_CARD) {
          watchAnswer(ctx, info, limit);
          return;
        }
        await rewriteCardResponse(ctx, info, limit);
        ctx.obs?.event(ctx, 'a2a', { phase: 'response', method: info.method, outcome: info.outcome });
      },
    };
  },
};
