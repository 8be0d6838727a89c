// includeRequestBody (Envoy's with_request_body): the first maxRequestBytes of the request body are
// read for the check; the upstream still gets the whole body afterwards (the part read is replayed
// ahead of the rest). A larger body is refused with 413 unless allowPartialMessage, when its head is
// sent with `x-envoy-auth-partial-body: true`.
import { GwError } from '../../errors.ts';
import { bufferUpTo, contentLength } from '../../pipeline/body.ts';
import type { RequestContext } from '../../pipeline/context.ts';

/** The body as the authorization service sees it. */
export interface CheckBody {
  data: Buffer;
  /** The request body is longer than `data`. */
  partial: boolean;
  /** gRPC: sent as raw_body (bytes) instead of body (UTF-8 text). */
  asBytes: boolean;
}

/** Envoy's header telling the authorization service whether the body it got is cut short. */
export const PARTIAL_BODY_HEADER = 'x-envoy-auth-partial-body';

/** agentgateway's (and Envoy's usual) maxRequestBytes when the config names none. */
export const DEFAULT_MAX_REQUEST_BYTES = 8192;

export interface BodyOptions {
  limit: number;
  allowPartial: boolean;
  asBytes: boolean;
}

/** The config's includeRequestBody with its defaults; undefined when no body is sent. */
export function bodyOptions(
  o:
    | {
        maxRequestBytes?: number | undefined;
        allowPartialMessage?: boolean | undefined;
        packAsBytes?: boolean | undefined;
      }
    | null
    | undefined,
): BodyOptions | undefined {
  if (!o) return undefined;
  return {
    limit: o.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES,
    allowPartial: o.allowPartialMessage === true,
    asBytes: o.packAsBytes === true,
  };
}

/**
 * Reads up to `limit` bytes of the request body for the check and leaves the whole body on `ctx` for
 * the upstream. Throws 413 (GW_ERR_REQUEST_TOO_LARGE) for a larger body without allowPartial.
 */
export async function readCheckBody(ctx: RequestContext, o: BodyOptions): Promise<CheckBody> {
  const body = ctx.body;
  if (!body) return { data: Buffer.alloc(0), partial: false, asBytes: o.asBytes };
  if (Buffer.isBuffer(body)) {
    if (body.length > o.limit && !o.allowPartial) throw tooLarge(o.limit);
    return { data: body.subarray(0, o.limit), partial: body.length > o.limit, asBytes: o.asBytes };
  }
  // Without allowPartial a declared length past the limit is refused before anything is read.
  const r = await bufferUpTo(body, o.limit, o.allowPartial ? undefined : contentLength(ctx.headers), ctx);
  if (r.ok) {
    ctx.body = r.data;
    ctx.headers['content-length'] = String(r.data.length);
    return { data: r.data, partial: false, asBytes: o.asBytes };
  }
  if (!o.allowPartial) {
    r.stream.resume(); // drain, so the connection stays usable for the 413
    throw tooLarge(o.limit);
  }
  ctx.body = r.stream;
  const head = Buffer.concat(r.head as Buffer[]);
  return { data: head.subarray(0, o.limit), partial: true, asBytes: o.asBytes };
}

const tooLarge = (limit: number) =>
  new GwError(
    'GW_ERR_REQUEST_TOO_LARGE',
    `request body is larger than extAuthz includeRequestBody.maxRequestBytes (${limit} bytes)`,
  );
