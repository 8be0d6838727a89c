// A Service of the file's `services`: each request goes to one of its endpoints (the workloads that
// name it), chosen at random by weight (their capacity) and kept for the request's retries of the
// same attempt; each endpoint is a host backend of its own (its pool, its upgrade path).
import { GwError } from '../../../errors.ts';
import type { RequestContext } from '../../../pipeline/context.ts';
import { hostBackend } from '../host/index.ts';
import type { BackendKind, CompiledCall } from '../types.ts';

export const serviceBackend: BackendKind<'service'> = {
  kind: 'service',
  compile(t, env) {
    // HTTP/2 by prior knowledge where the Service says the port speaks it (and no TLS says otherwise)
    const connection = t.http2 && !env.connection.tls ? { ...env.connection, h2c: true } : env.connection;
    const endpoints = t.endpoints.map((e) => ({
      weight: e.weight,
      call: hostBackend.compile({ kind: 'host', host: e.host, port: e.port }, { ...env, connection }),
    }));
    const total = endpoints.reduce((n, e) => n + e.weight, 0);
    const chosen = new WeakMap<RequestContext, CompiledCall>();
    const pick = (ctx: RequestContext): CompiledCall => {
      const known = chosen.get(ctx);
      if (known) return known;
      if (endpoints.length === 0)
        throw new GwError(
          'GW_ERR_NO_ENDPOINT',
          `service ${t.service} has no endpoint: no healthy workload in workloads names it with a port for ${t.port}`,
        );
      let n = Math.random() * total;
      let out = (endpoints[endpoints.length - 1] as (typeof endpoints)[number]).call;
      for (const e of endpoints) {
        n -= e.weight;
        if (n < 0) {
          out = e.call;
          break;
        }
      }
      chosen.set(ctx, out);
      return out;
    };
    return {
      type: 'service',
      protocol: env.connection.tls ? 'https' : 'http',
      target: (ctx) => {
        try {
          return pick(ctx).target(ctx);
        } catch {
          return `${t.service}:${t.port}`;
        }
      },
      call: (ctx) => {
        const c = pick(ctx);
        // a retry picks again: another endpoint may answer
        chosen.delete(ctx);
        return c.call(ctx);
      },
      upgrade: async (ctx) => {
        const c = pick(ctx);
        chosen.delete(ctx);
        if (!c.upgrade) throw new GwError('GW_ERR_UPGRADE_UNSUPPORTED');
        await c.upgrade(ctx);
      },
    };
  },
};
