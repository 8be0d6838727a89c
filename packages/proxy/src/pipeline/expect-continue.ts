// `Expect: 100-continue`: the client waits for a 100 before it sends the body. The gateway answers it
// itself, at the moment something first reads the body — after the policies let the request through —
// so a request refused by auth gets its 401 without the client uploading anything. The expectation is
// not forwarded (undici refuses it, and the upstream sees a body that is already on its way).
import { Readable } from 'node:stream';
import type { RequestContext } from './context.ts';

/** Takes over an `Expect` header of ctx: the body becomes a stream that sends 100 when first read. */
export function answerContinueOnRead(ctx: RequestContext): void {
  const expect = ctx.headers.expect;
  if (expect === undefined) return;
  delete ctx.headers.expect;
  const body = ctx.body;
  if (!body || Buffer.isBuffer(body) || String(expect).toLowerCase() !== '100-continue') return;
  // HTTP/1.0 has no 1xx responses (RFC 9110 §10.1.1).
  if (ctx.httpVersion === '1.0') return;
  const res = ctx.res;
  let started = false;
  const out = new Readable({
    read() {
      if (started) {
        body.resume();
        return;
      }
      started = true;
      // A final answer already went out (a policy refused the request): no 100 after it.
      if (res.headersSent) {
        out.push(null);
        return;
      }
      (res as { writeContinue(): void }).writeContinue();
      body.on('data', (c: Buffer) => {
        if (!out.push(c)) body.pause();
      });
      body.once('end', () => out.push(null));
      body.once('error', (err) => out.destroy(err));
    },
    destroy(err, cb) {
      if (!body.readableEnded) body.destroy(err ?? undefined);
      cb(err);
    },
  });
  ctx.body = out;
}
