// spec.frontend.http → http: the fields the standalone has (buffer limit, HTTP/1 idle, HTTP/2 keepalive).
import { defined } from '../context.ts';
import type { FrontendMapper } from '../spec.ts';

export const http: FrontendMapper<'http'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, ['maxBufferSize', 'http1IdleTimeout', 'http2KeepaliveInterval']);
    out.http = defined({
      maxBufferSize: spec.maxBufferSize,
      http1IdleTimeout: spec.http1IdleTimeout,
      http2KeepaliveInterval: spec.http2KeepaliveInterval,
    });
  },
};
