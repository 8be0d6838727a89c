// buffer: holds the request and/or response body in memory up to `maxBytes` (default the global
// limit, 2Mi). Over the limit: 413 for requests and 502 for responses under failClosed; failOpen
// streams the body on unchanged.
import { parseByteSize } from '@gw/api/runtime';
import { GwError } from '../../errors.ts';
import { bufferUpTo, contentLength, discard } from '../../pipeline/body.ts';
import type { PolicyDefinition } from '../types.ts';

const failOpen = (m: string | undefined) => m === 'failOpen' || m === 'FailOpen';

export const buffer: PolicyDefinition<'buffer'> = {
  name: 'buffer',
  build(config, env) {
    const reqLimit =
      config.request?.maxBytes !== undefined
        ? (parseByteSize(config.request.maxBytes) ?? 0)
        : env.global.maxBufferSize;
    const resLimit =
      config.response?.maxBytes !== undefined
        ? (parseByteSize(config.response.maxBytes) ?? 0)
        : env.global.maxBufferSize;
    const reqOpen = failOpen(config.request?.failureMode);
    const resOpen = failOpen(config.response?.failureMode);
    return async (ctx, next) => {
      if (config.request && ctx.body && !Buffer.isBuffer(ctx.body)) {
        const r = await bufferUpTo(ctx.body, reqLimit, contentLength(ctx.headers), ctx);
        if (r.ok) {
          ctx.body = r.data;
          ctx.headers['content-length'] = String(r.data.length);
        } else if (!reqOpen) {
          r.stream.resume(); // drain, so the connection stays usable for the 413
          throw new GwError(
            'GW_ERR_REQUEST_TOO_LARGE',
            `request body is larger than the buffer limit (${reqLimit} bytes)`,
          );
        } else ctx.body = r.stream;
      }
      await next(ctx);
      const res = ctx.response;
      if (config.response && res?.body && !Buffer.isBuffer(res.body)) {
        const r = await bufferUpTo(res.body, resLimit, contentLength(res.headers), ctx);
        if (r.ok) {
          res.body = r.data;
          res.headers['content-length'] = String(r.data.length);
        } else if (!resOpen) {
          discard(r.stream);
          ctx.response = undefined;
          throw new GwError(
            'GW_ERR_RESPONSE_TOO_LARGE',
            `response body is larger than the buffer limit (${resLimit} bytes)`,
          );
        } else res.body = r.stream;
      }
    };
  },
};
