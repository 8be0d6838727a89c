// One JSON call to a guard service (a webhook, OpenAI moderation, Bedrock Guardrails, Model Armor)
// over a keep-alive pool per origin: the answer parsed, or a ServiceFailure saying in a few words how
// the call failed (status, not JSON, unreachable, too slow, cancelled). The service's own error text
// is never passed on: it may hold the content, and the client gets the guard's failure, not the
// service's.
import type { Dispatcher } from 'undici';
import type { LlmGuardServiceIR } from '../../config/ir.ts';
import { headerModifier } from '../../policies/header-modifier/index.ts';
import { connectionSpec } from '../../upstream/connection.ts';
import type { GuardEnv } from './types.ts';

/** How much of an answer is read: more is a failed call (a verdict is a few kilobytes). */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** A call that failed; the message is the rule the finding names. */
export class ServiceFailure extends Error {}

export interface ServiceRequest {
  /** Default POST. */
  method?: string;
  path: string;
  /** Lower-case names; content-type and content-length are set by the call, host unless given. */
  headers: Record<string, string>;
  body: Buffer;
  /** Cancels the call (the client went away, or the stream ended without it). */
  signal?: AbortSignal;
}

export interface GuardService {
  /** The Host the service is called with (what a signature covers). */
  host: string;
  /** Sends `req` (completed by `prepare`, the host set) and returns the 2xx answer parsed. */
  post(req: ServiceRequest, prepare?: (req: ServiceRequest) => Promise<void>): Promise<unknown>;
}

/**
 * The origin of a service: `https://<host>` unless a `host:port` override names a stand-in, called
 * over plain HTTP, or over HTTPS when the service has TLS settings of its own.
 */
export function serviceOrigin(host: string, override: string | undefined, tls = false): string {
  return override === undefined ? `https://${host}` : `${tls ? 'https' : 'http'}://${override}`;
}

/**
 * `waitsFor`: what a timeout says was missing (`no <waitsFor> within <n> ms`).
 */
export function guardService(ir: LlmGuardServiceIR, env: GuardEnv, waitsFor = 'answer'): GuardService {
  const url = new URL(ir.origin);
  const https = url.protocol === 'https:';
  // The service's tcp and http policies as a backend's; the pool's size and idle time are the guards'.
  const spec = connectionSpec(
    {
      ...(ir.tcp ? { tcp: ir.tcp } : {}),
      ...(ir.http2 ? { http: { version: 'HTTP2' as const } } : {}),
      ...(https ? { backendTLS: ir.tls ?? {} } : {}),
      ...(ir.tunnel ? { backendTunnel: ir.tunnel } : {}),
    },
    env.global,
  );
  const pool: Dispatcher | undefined = env.pools?.acquire({
    ...spec,
    origin: ir.origin,
    idleTimeoutMs: env.global.guardrailWebhook.keepAliveMs,
    maxConnections: env.global.guardrailWebhook.maxConnections,
    ...(ir.endpoints ? { endpoints: ir.endpoints } : {}),
  });
  if (pool) env.used.add(pool);
  const host = url.host;
  const modify = ir.requestHeaders ? headerModifier(ir.requestHeaders) : undefined;
  return {
    host,
    async post(req, prepare) {
      if (!pool) throw new ServiceFailure('no connection (validation run)');
      req.headers.host ??= host;
      req.headers['content-type'] = 'application/json';
      req.headers['content-length'] = String(req.body.length);
      // before a signature is made over them
      modify?.(req.headers);
      for (const c of ir.credentials ?? []) req.headers[c.header] = c.value.reveal();
      if (prepare) {
        try {
          await prepare(req);
        } catch (err) {
          throw new ServiceFailure(`no credentials: ${(err as Error).message.split('\n')[0]}`);
        }
      }
      if (req.signal?.aborted) throw new ServiceFailure('cancelled');
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), ir.timeoutMs);
      const cancel = () => abort.abort();
      req.signal?.addEventListener('abort', cancel, { once: true });
      try {
        const res: Dispatcher.ResponseData = await pool.request({
          method: (req.method ?? 'POST') as Dispatcher.HttpMethod,
          path: req.path,
          headers: req.headers,
          body: req.body,
          signal: abort.signal,
        });
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const c of res.body as AsyncIterable<Buffer>) {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) {
            abort.abort();
            throw new ServiceFailure(`answered more than ${MAX_ANSWER_BYTES} bytes`);
          }
          chunks.push(c);
        }
        if (res.statusCode < 200 || res.statusCode > 299)
          throw new ServiceFailure(`answered ${res.statusCode}`);
        try {
          return JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          throw new ServiceFailure('answered something that is not JSON');
        }
      } catch (err) {
        if (err instanceof ServiceFailure) throw err;
        if (req.signal?.aborted) throw new ServiceFailure('cancelled');
        if (abort.signal.aborted) throw new ServiceFailure(`no ${waitsFor} within ${ir.timeoutMs} ms`);
        const code = (err as { code?: string }).code;
        throw new ServiceFailure(`unreachable${code ? ` (${code})` : ''}`);
      } finally {
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', cancel);
      }
    },
  };
}

/** A guard's failure verdict: fail closed unless `open` (an audit never stops traffic). */
export function failed(err: unknown, closed: boolean): { action: 'error'; rule: string; closed: boolean } {
  const how = err instanceof ServiceFailure ? err.message : 'failed';
  return { action: 'error', rule: how, closed };
}

/** An object field of a service's answer, or a failure naming what was missing. */
export function field<T>(v: unknown, name: string, test: (x: unknown) => x is T): T {
  const x = v && typeof v === 'object' ? (v as Record<string, unknown>)[name] : undefined;
  if (!test(x)) throw new ServiceFailure(`invalid answer: no ${name}`);
  return x;
}
