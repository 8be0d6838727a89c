// Traced twins of the pipeline pieces. Routes are compiled twice, plain and traced; only a traced
// request takes the traced chain, so an untraced request pays nothing for tracing.
import { GwError } from '../errors.ts';
import type { RequestContext } from '../pipeline/context.ts';
import type { Handler, Layer } from '../pipeline/layer.ts';

/** Emits one `policy` event per layer: passed on, answered, or rejected (and why). */
export function tracedLayer(policy: string, phase: string, layer: Layer): Layer {
  return async (ctx, next) => {
    const tr = ctx.trace;
    if (!tr) return layer(ctx, next);
    const start = tr.now();
    let passed = false;
    try {
      await layer(ctx, (c) => {
        passed = true;
        tr.emit('policy', { policy, phase, outcome: 'passed' }, start);
        return next(c);
      });
    } catch (err) {
      if (!passed) {
        const e = err instanceof GwError ? err : undefined;
        tr.emit(
          'policy',
          { policy, phase, outcome: 'rejected', status: e?.status ?? 500, reason: e?.detail ?? String(err) },
          start,
          'warn',
        );
      }
      throw err;
    }
    if (!passed)
      tr.emit('policy', { policy, phase, outcome: 'responded', status: ctx.response?.status ?? null }, start);
  };
}

/** A transparent layer that only records something about the request at its position. */
export function marker(record: (ctx: RequestContext) => void): Layer {
  return (ctx, next) => {
    record(ctx);
    return next(ctx);
  };
}

export interface BackendDescription {
  name: string;
  type: string;
  protocol: string;
  policies: string[];
  /** host:port the call goes to (for a dynamic backend, the request's authority). */
  endpoint: (ctx: RequestContext) => string;
}

/** Backend selection, the final request, the upstream call and what it answered. */
export function tracedBackendEntry(b: BackendDescription): Layer {
  return (ctx, next) => {
    const tr = ctx.trace;
    if (tr) tr.emit('policySelection', { phase: 'backend', backend: b.name, effectivePolicy: b.policies });
    return next(ctx);
  };
}

export function tracedCall(b: BackendDescription, call: Handler): Handler {
  return async (ctx) => {
    const tr = ctx.trace;
    if (!tr) return call(ctx);
    tr.requestSnapshot('final request', ctx, {
      backend: { name: b.name, type: b.type, protocol: b.protocol },
    });
    if (ctx.body) ctx.body = tr.tapBody('final request', ctx.body);
    const start = tr.now();
    tr.emit('backendCallStart', { target: b.endpoint(ctx), backend: b.name }, start);
    try {
      await call(ctx);
    } catch (err) {
      const e = err instanceof GwError ? err : undefined;
      tr.emit(
        'backendCallResult',
        { target: ctx.endpoint ?? null, status: null, error: e?.detail ?? String(err) },
        start,
        'error',
      );
      throw err;
    }
    const upstream = (tr.now() - start) / 1000;
    tr.emit(
      'backendCallResult',
      { target: ctx.endpoint ?? null, status: ctx.response?.status ?? null, error: null },
      start,
    );
    tr.responseSnapshot('raw response', ctx, {
      proxy: {
        requestProcessingDuration: (start / 1000).toFixed(6),
        upstreamDuration: upstream.toFixed(6),
      },
    });
  };
}

export function backendResponseReady(): Layer {
  return async (ctx, next) => {
    await next(ctx);
    ctx.trace?.responseSnapshot('backend response ready', ctx);
  };
}
