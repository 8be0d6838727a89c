// A Service of the file's `services`: each attempt goes to one of its endpoints (the workloads that
// name it), chosen at random by weight (their capacity); a retry of the request picks among those it
// has not tried yet while there are any. Each endpoint is a host backend of its own (its pool, its
// upgrade path).
//
// With inferenceRouting an endpoint picker chooses instead (the Gateway API Inference Extension's
// endpoint picker protocol): the request goes through the picker over ext_proc (outside the backend's
// own policies, bodies streamed both ways, failing closed unless its failureMode is failOpen) and the picker names the endpoint in the
// x-gateway-destination-endpoint header it sets: ip:port, or several comma-separated, the first
// preferred and the others for retries. The header is the picker's answer, never the client's, and is
// not sent on. Validated (default): the picker is told the Service's endpoints (the subset hint, in
// its metadata context), addresses that are not among them are skipped, and none left
// is a 503; passthrough: the address is dialled as it is. A picker that names none leaves the choice to the
// Service's own balancing, as agentgateway does. (agentgateway reads one address; the comma-separated
// list, which the protocol's earlier versions used for fallbacks, is gw's addition.)
import { isIP } from 'node:net';
import { GwError } from '../../../errors.ts';
import type { RequestContext } from '../../../pipeline/context.ts';
import type { Layer } from '../../../pipeline/layer.ts';
import { extProc } from '../../../policies/ext-proc/index.ts';
import { hostBackend } from '../host/index.ts';
import type { BackendEnv, BackendKind, CompiledCall, TargetOf } from '../types.ts';

declare module '../../../pipeline/context.ts' {
  interface RequestExtensions {
    /** The endpoints an endpoint picker chose for the request (inferenceRouting), preferred first. */
    inferenceDestinations?: string[];
  }
}

/** Where an endpoint picker names the endpoint it chose. */
export const DESTINATION_HEADER = 'x-gateway-destination-endpoint';
/** Where it is told the endpoints it may choose from (filter metadata of its requests). */
const SUBSET_HINT_NAMESPACE = 'envoy.lb.subset_hint';
const SUBSET_HINT_KEY = 'x-gateway-destination-endpoint-subset';
/**
 * Passthrough addresses kept compiled; the least recently used go first. Their pools stay with the
 * routing table until the next reload, as a dynamic backend's do.
 */
const MAX_PASSTHROUGH = 256;

interface Endpoint {
  /** ip:port ([ip]:port for IPv6), as a picker names it. */
  address: string;
  weight: number;
  call: CompiledCall;
}

export const serviceBackend: BackendKind<'service'> = {
  kind: 'service',
  compile(t, env) {
    // HTTP/2 by prior knowledge where the Service says the port speaks it (and no TLS says otherwise)
    const connection = t.http2 && !env.connection.tls ? { ...env.connection, h2c: true } : env.connection;
    const endpointEnv = { ...env, connection };
    const endpoint = (host: string, port: number, weight: number): Endpoint => ({
      address: addressOf(host, port),
      weight,
      call: hostBackend.compile({ kind: 'host', host, port }, endpointEnv),
    });
    const endpoints = t.endpoints.map((e) => endpoint(e.host, e.port, e.weight));
    const picked = t.inference ? pickedEndpoints(t, endpoints, endpoint) : undefined;
    /** The endpoint of the attempt under way (named in the trace before it is called). */
    const current = new WeakMap<RequestContext, Endpoint>();
    /** The endpoints a request's attempts went to. */
    const tried = new WeakMap<RequestContext, Set<string>>();
    const pick = (ctx: RequestContext): Endpoint => {
      const known = current.get(ctx);
      if (known) return known;
      const done = tried.get(ctx);
      const chosen = picked?.(ctx);
      if (chosen) {
        const out = chosen.find((e) => !done?.has(e.address)) ?? (chosen[0] as Endpoint);
        current.set(ctx, out);
        return out;
      }
      if (endpoints.length === 0)
        throw new GwError(
          'GW_ERR_NO_ENDPOINT',
          `service ${t.service} has no endpoint: no healthy workload in workloads names it with a port for ${t.port}`,
        );
      const fresh = done ? endpoints.filter((e) => !done.has(e.address)) : endpoints;
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
      const done = tried.get(ctx) ?? new Set<string>();
      done.add(e.address);
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
      ...(t.inference ? { outer: endpointPicker(t, env, endpoints) } : {}),
    };
  },
};

/**
 * The picker's call around the backend: the client's destination header dropped, the request through
 * the picker, and the endpoints its answer names left in ctx.ext.inferenceDestinations.
 */
function endpointPicker(t: TargetOf<'service'>, env: BackendEnv, endpoints: Endpoint[]): Layer {
  const inference = t.inference as NonNullable<typeof t.inference>;
  // Validated: the picker is told which endpoints it may choose (the protocol's subset hint), as a
  // CEL list of the Service's endpoint addresses in the form its answers are compared in.
  const subset =
    !inference.passthrough && endpoints.length > 0
      ? { [SUBSET_HINT_NAMESPACE]: { [SUBSET_HINT_KEY]: JSON.stringify(endpoints.map((e) => e.address)) } }
      : undefined;
  const picker = extProc.build(subset ? { ...inference.picker, metadataContext: subset } : inference.picker, {
    global: env.global,
    policies: {},
    route: `${t.service}:${t.port}`,
    shared: (_k, n) => new SharedArrayBuffer(n),
  });
  return async (ctx, next) => {
    // A retry calls the backend again with the request as it came (its body kept for replay): the
    // picker's changes and its streamed-back body are this attempt's only.
    const { headers, body } = ctx;
    ctx.headers = { ...headers };
    delete ctx.headers[DESTINATION_HEADER];
    delete ctx.ext.inferenceDestinations;
    try {
      await picker(ctx, (c) => {
        const v = c.headers[DESTINATION_HEADER];
        delete c.headers[DESTINATION_HEADER];
        const named = v === undefined ? [] : parseDestinations(v);
        if (named.length > 0) c.ext.inferenceDestinations = named;
        c.obs?.event(c, 'inferenceRouting', {
          destinations: named.length > 0 ? named : 'none: balanced over the Service',
        });
        return next(c);
      });
    } finally {
      if (body === null || Buffer.isBuffer(body)) {
        ctx.headers = headers;
        ctx.body = body;
      }
    }
  };
}

/** ip:port as endpoints are compared: an IPv6 address in brackets, in its canonical form. */
function addressOf(ip: string, port: number): string {
  return isIP(ip) === 6 ? `${new URL(`http://[${ip}]/`).hostname}:${port}` : `${ip}:${port}`;
}

/**
 * The addresses in a picker's destination header: ip:port or [ipv6]:port, comma-separated. Anything
 * else is the picker failing (500), as a picker that cannot answer fails the request.
 */
export function parseDestinations(v: string | string[]): string[] {
  const out: string[] = [];
  for (const part of (Array.isArray(v) ? v.join(',') : v).split(',')) {
    const a = part.trim();
    if (a === '') continue;
    const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+)):([0-9]{1,5})$/.exec(a);
    const ip = m?.[1] ?? m?.[2];
    const port = Number(m?.[3]);
    if (!ip || isIP(ip) === 0 || (m?.[1] !== undefined) !== (isIP(ip) === 6) || port < 1 || port > 65535)
      throw new GwError(
        'GW_ERR_INTERNAL',
        `the endpoint picker chose ${JSON.stringify(a)} in ${DESTINATION_HEADER}, which is not ip:port`,
      );
    out.push(addressOf(ip, port));
  }
  return out;
}

/**
 * The endpoints a request's picker chose, or undefined when it named none. Validated: those of the
 * Service's endpoints, and none of them is a 503 naming what it chose; passthrough: each address as
 * a host backend of its own, compiled on first use.
 */
function pickedEndpoints(
  t: TargetOf<'service'>,
  endpoints: Endpoint[],
  endpoint: (host: string, port: number, weight: number) => Endpoint,
): (ctx: RequestContext) => Endpoint[] | undefined {
  if (t.inference?.passthrough) {
    const recent = new Map<string, Endpoint>();
    const get = (address: string): Endpoint => {
      let e = recent.get(address);
      if (e) recent.delete(address);
      else {
        const colon = address.lastIndexOf(':');
        const host = address.slice(0, colon).replace(/^\[|\]$/g, '');
        e = endpoint(host, Number(address.slice(colon + 1)), 1);
      }
      recent.set(address, e);
      if (recent.size > MAX_PASSTHROUGH) recent.delete(recent.keys().next().value as string);
      return e;
    };
    return (ctx) => ctx.ext.inferenceDestinations?.map(get);
  }
  const byAddress = new Map(endpoints.map((e) => [e.address, e]));
  /** Requests whose refusal the trace has: the trace's target() and the call both come here. */
  const reported = new WeakSet<RequestContext>();
  return (ctx) => {
    const named = ctx.ext.inferenceDestinations;
    if (!named) return undefined;
    const out = named.map((a) => byAddress.get(a)).filter((e) => e !== undefined);
    if (out.length === 0) {
      // the Service's endpoints go to the trace, not to the client
      if (ctx.obs && !reported.has(ctx)) {
        reported.add(ctx);
        ctx.obs.event(
          ctx,
          'inferenceRouting',
          { refused: named, endpoints: endpoints.map((e) => e.address) },
          null,
          'warn',
        );
      }
      throw new GwError(
        'GW_ERR_NO_ENDPOINT',
        `the endpoint picker chose ${named.join(', ')}, which is not an endpoint of service ${t.service}; destinationMode passthrough sends requests where the picker says`,
      );
    }
    return out;
  };
}
