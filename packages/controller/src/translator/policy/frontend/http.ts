// spec.frontend.http → http: the fields the standalone has (buffer limit, HTTP/1 idle and header count,
// HTTP/2 keepalive, windows, frame and header list sizes, connection lifetime, requests in flight, header case). A size written as a quantity (64Ki)
// becomes its number of bytes, as the standalone takes them.
import { parseByteSize } from '@gw/api/runtime';
import { defined } from '../context.ts';
import type { FrontendMapper } from '../spec.ts';

export const http: FrontendMapper<'http'> = {
  map(spec, ctx, out, at) {
    ctx.rest(at.field, spec, [
      'maxBufferSize',
      'http1MaxHeaders',
      'http1IdleTimeout',
      'http2KeepaliveInterval',
      'http2KeepaliveTimeout',
      'http2WindowSize',
      'http2ConnectionWindowSize',
      'http2FrameSize',
      'http2MaxHeaderSize',
      'maxConnectionDuration',
      'maxConcurrentRequests',
      'http1HeaderCase',
    ]);
    const bytes = (v: string | number | undefined) => (v === undefined ? undefined : parseByteSize(v));
    out.http = defined({
      maxBufferSize: spec.maxBufferSize,
      http1MaxHeaders: spec.http1MaxHeaders,
      http1IdleTimeout: spec.http1IdleTimeout,
      http2KeepaliveInterval: spec.http2KeepaliveInterval,
      http2KeepaliveTimeout: spec.http2KeepaliveTimeout,
      http2WindowSize: bytes(spec.http2WindowSize),
      http2ConnectionWindowSize: bytes(spec.http2ConnectionWindowSize),
      http2FrameSize: bytes(spec.http2FrameSize),
      http2MaxHeaderSize: bytes(spec.http2MaxHeaderSize),
      maxConnectionDuration: spec.maxConnectionDuration,
      maxConcurrentRequests: spec.maxConcurrentRequests,
      http1HeaderCase:
        spec.http1HeaderCase &&
        (spec.http1HeaderCase === 'Preserve' ? ('preserve' as const) : ('lowercase' as const)),
    });
  },
};
