// A Service of the file's `services`: each attempt goes to one of its endpoints (the workloads that
// name it), chosen at random by weight (their capacity); a retry of the request picks among those it
// has not tried yet while there are any. Each endpoint is a host backend of its own (its pool, its
// upgrade path).
import { GwError } from '../../../errors.ts';
import type { RequestContext } from '../../../pipeline/context.ts';
import { hostBackend } from '../host/index.ts';
import type { BackendKind, CompiledCall } from '../types.ts';

interface Endpoint {
  weight: number;
  call: CompiledCall;
}

export const serviceBackend: BackendKind<'service'> = {
  kind: 'service',
  compile(t, env) {
    // HTTP/2 by prior knowledge where the Service says the port speaks it (and no TLS says otherwise)
    const connection = t.http2 && !env.connection.tls ? { ...env.connection, h2c: true } : env.connection;
    const endpoints: Endpoint[] = t.endpoints.map((e) => ({
      weight: e.weight,
      call: hostBackend.compile({ kind: 'host', host: e.host, port: e.port }, { ...env, connection }),
    }));
    /** The endpoint of the attempt under way (named in the trace before it is called). */
    const current = new WeakMap<RequestContext, Endpoint>();
    /** The endpoints a request's attempts went to. */
    const tried = new WeakMap<RequestContext, Set<Endpoint>>();
    const pick = (ctx: RequestContext): Endpoint => {
      const known = current.get(ctx);
      if (known) return known;
      if (endpoints.length === 0)
        throw new GwError(
          'GW_ERR_NO_ENDPOINT',
          `service ${t.service} has no endpoint: no healthy workload in workloads names it with a port for ${t.port}`,
        );
      const done = tried.get(ctx);
      const fresh = done ? endpoints.filter((e) => !done.has(e)) : endpoints;
      const from = fresh.length > 0 ? fresh : endpoints;
      let n = Math.random() * from.reduce((sum, e) => sum + e.weight, 0);
      let out = from[from.length - 1] as Endpoint;
      for (const e of from) {
        n -= e.weight;
        if (n < 0) {
          out = e;
          break;
        }
      }
      current.set(ctx, out);
      return out;
    };
    /** The endpoint for this attempt, marked tried; the next attempt picks anew. */
    const take = (ctx: RequestContext): Endpoint => {
      const e = pick(ctx);
      current.delete(ctx);
      const done = tried.get(ctx) ?? new Set<Endpoint>();
      done.add(e);
      tried.set(ctx, done);
      return e;
    };
    return {
      type: 'service',
      protocol: env.connection.tls ? 'https' : 'http',
      target: (ctx) => {
        try {
          return pick(ctx).call.target(ctx);
        } catch {
          return `${t.service}:${t.port}`;
        }
      },
      call: async (ctx) => {
        await take(ctx).call.call(ctx);
      },
      upgrade: async (ctx) => {
        const { upgrade } = take(ctx).call;
        if (!upgrade) throw new GwError('GW_ERR_UPGRADE_UNSUPPORTED');
        await upgrade(ctx);
      },
    };
  },
};
