// The `aws` backend: an Amazon Bedrock AgentCore runtime. Every request is its InvokeAgentRuntime
// operation, POST /runtimes/{URL-encoded ARN}/invocations?qualifier=…, with the client's body as the
// payload, signed with SigV4 for bedrock-agentcore in the ARN's region. The client's path and query
// are not sent (the operation has none of its own); its headers are, so AgentCore's own (user id,
// Mcp-Session-Id, Mcp-Protocol-Version, trace headers) pass through. A request without a runtime
// session id gets a new one, and the answer carries it back. The answer streams through as AgentCore
// sends it (SSE or JSON); its errors (JSON with a message, x-amzn-errortype) reach the client as they
// are, so an AWS SDK client raises the exception AgentCore named, and the trace records them.
//
// The endpoint can be overridden as the AWS SDKs allow: AWS_ENDPOINT_URL_BEDROCK_AGENTCORE, then
// AWS_ENDPOINT_URL (both ignored when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true), read when the config
// is applied.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { AwsTarget } from '../../../config/ir.ts';
import { GwError } from '../../../errors.ts';
import { awsSigner } from '../../../llm/providers/bedrock/sigv4.ts';
import { bufferUpTo } from '../../../pipeline/body.ts';
import type { RequestContext } from '../../../pipeline/context.ts';
import { callUpstream } from '../../call.ts';
import type { BackendKind } from '../types.ts';

const SERVICE = 'bedrock-agentcore';
export const SESSION_HEADER = 'x-amzn-bedrock-agentcore-runtime-session-id';
const USER_HEADER = 'x-amzn-bedrock-agentcore-runtime-user-id';
/** An error body read for the trace: AgentCore's are a short JSON object. */
const ERROR_BODY_LIMIT = 64 * 1024;

export interface AgentCoreEndpoint {
  url: URL;
  /** From AWS_ENDPOINT_URL_BEDROCK_AGENTCORE or AWS_ENDPOINT_URL, not AgentCore's own host. */
  overridden: boolean;
}

/** Where AgentCore is called: its regional host, unless the environment overrides it as for the SDKs. */
export function agentCoreEndpoint(host: string, env: NodeJS.ProcessEnv = process.env): AgentCoreEndpoint {
  const ignore = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?.toLowerCase() === 'true';
  const override = ignore ? undefined : env.AWS_ENDPOINT_URL_BEDROCK_AGENTCORE || env.AWS_ENDPOINT_URL;
  if (override) {
    let url: URL;
    try {
      url = new URL(override);
    } catch {
      throw new GwError('GW_ERR_INTERNAL', `AWS endpoint override ${JSON.stringify(override)} is not a URL`);
    }
    if (url.protocol === 'http:' || url.protocol === 'https:') return { url, overridden: true };
    throw new GwError('GW_ERR_INTERNAL', `AWS endpoint override ${override} is not http(s)`);
  }
  return { url: new URL(`https://${host}`), overridden: false };
}

export const awsBackend: BackendKind<'aws'> = {
  kind: 'aws',
  compile(t, env) {
    const { url } = agentCoreEndpoint(t.agentCore.host);
    const tls = url.protocol === 'https:';
    const port = Number(url.port || (tls ? 443 : 80));
    const hostname = url.hostname;
    const endpoint = `${hostname}:${port}`;
    // What the Host header says and the signature covers: the port only when it is not the default.
    const authority = url.port ? `${hostname}:${url.port}` : hostname;
    const connection = { ...env.connection };
    // AgentCore is reached over TLS with the system's roots and SNI from its host, unless backendTLS says more.
    if (tls && !connection.tls) connection.tls = { hostname: hostname.replace(/^\[|\]$/g, '') };
    if (!tls) delete connection.tls;
    const dispatcher = env.pools?.acquire({ ...connection, origin: `${url.protocol}//${endpoint}` });
    if (dispatcher) env.used.add(dispatcher);
    const base = url.pathname.replace(/\/+$/, '');
    const path = `${base}/runtimes/${encodeURIComponent(t.agentCore.agentRuntimeArn)}/invocations`;
    const query = t.agentCore.qualifier ? `?qualifier=${encodeURIComponent(t.agentCore.qualifier)}` : '';
    const sign = t.auth.kind === 'sigv4' ? signer(t, t.auth.credentials) : undefined;
    const limit = env.global.maxBufferSize;
    const timeout = env.attemptTimeoutMs;
    return {
      type: 'aws',
      protocol: tls ? 'https' : 'http',
      target: () => endpoint,
      endpoint,
      call: async (ctx) => {
        if (!dispatcher) throw new GwError('GW_ERR_INTERNAL');
        if (ctx.method !== 'POST')
          throw new GwError(
            'GW_ERR_METHOD_NOT_ALLOWED',
            `an AgentCore runtime is invoked with POST (InvokeAgentRuntime), not ${ctx.method}`,
            { headers: { allow: 'POST' } },
          );
        const h = ctx.headers;
        const existing = h[SESSION_HEADER];
        const session = (Array.isArray(existing) ? existing[0] : existing) || randomUUID();
        h[SESSION_HEADER] = session;
        const body = await payload(ctx, limit);
        ctx.path = path;
        ctx.query = query;
        // The Host is AgentCore's, signed: urlRewrite's authority (auto or not) has nothing to change.
        h.host = authority;
        delete ctx.ext.rewriteHostToBackend;
        h['content-length'] = String(body.length);
        if (sign) await sign(ctx, authority, body);
        await callUpstream(ctx, { dispatcher, endpoint }, timeout);
        const res = ctx.response;
        if (!res) return;
        // AgentCore answers with the session id; the client learns a new one even when it does not.
        if (res.headers[SESSION_HEADER] === undefined) res.headers[SESSION_HEADER] = session;
        if (res.status >= 400) await recordError(ctx);
      },
    };
  },
};

/** The payload, read whole: the signature covers its hash. A retried attempt finds it read. */
async function payload(ctx: RequestContext, limit: number): Promise<Buffer> {
  if (Buffer.isBuffer(ctx.body)) return ctx.body;
  if (!ctx.body) {
    ctx.body = Buffer.alloc(0);
    return ctx.body;
  }
  const declared = Number(ctx.headers['content-length'] ?? Number.NaN);
  const r = await bufferUpTo(ctx.body as Readable, limit, Number.isNaN(declared) ? undefined : declared, ctx);
  if (!r.ok) {
    ctx.body = r.stream;
    throw new GwError(
      'GW_ERR_REQUEST_TOO_LARGE',
      `an AgentCore payload is signed whole, and this one is larger than the buffer limit (${limit} bytes; config.maxBufferSize)`,
    );
  }
  ctx.body = r.data;
  return r.data;
}

type Sign = (ctx: RequestContext, authority: string, body: Buffer) => Promise<void>;

function signer(t: AwsTarget, c: Extract<AwsTarget['auth'], { kind: 'sigv4' }>['credentials']): Sign {
  const creds = c && {
    accessKeyId: c.accessKeyId,
    secretAccessKey: c.secretAccessKey.reveal(),
    ...(c.sessionToken ? { sessionToken: c.sessionToken.reveal() } : {}),
  };
  const region = t.agentCore.region;
  return async (ctx, authority, body) => {
    const h = ctx.headers;
    // The client's own credential and signature pieces (an SDK client signs for the gateway) give way.
    delete h.authorization;
    for (const k of Object.keys(h)) if (k.startsWith('x-amz-')) delete h[k];
    // Signed: what the gateway sets (host, the session) and what AgentCore reads of the payload and caller.
    const signed: Record<string, string> = { host: authority };
    for (const k of ['content-type', SESSION_HEADER, USER_HEADER]) {
      const v = h[k];
      if (v !== undefined) signed[k] = Array.isArray(v) ? v.join(',') : v;
    }
    const query: Record<string, string> = {};
    for (const [k, v] of new URLSearchParams(ctx.query)) query[k] = v;
    const out = await (await awsSigner(region, SERVICE, creds)).sign({
      method: 'POST',
      protocol: 'https:',
      hostname: authority,
      // As sent (the ARN escaped once): the signer escapes it again, as AWS does for its non-S3 services.
      path: ctx.path,
      query,
      headers: signed,
      body,
    });
    for (const [k, v] of Object.entries(out.headers)) h[k.toLowerCase()] = v;
  };
}

/** AgentCore's error, in the trace: its type (x-amzn-errortype) and message. The client gets it as sent. */
async function recordError(ctx: RequestContext): Promise<void> {
  const res = ctx.response;
  const obs = ctx.obs;
  if (!res || !obs) return;
  const type = String(res.headers['x-amzn-errortype'] ?? '').split(':')[0] || undefined;
  let message: string | undefined;
  if (res.body && !Buffer.isBuffer(res.body)) {
    const r = await bufferUpTo(res.body, ERROR_BODY_LIMIT, undefined, ctx);
    if (r.ok) {
      res.body = r.data;
      try {
        const parsed = JSON.parse(r.data.toString('utf8')) as { message?: unknown; Message?: unknown };
        const m = parsed.message ?? parsed.Message;
        if (typeof m === 'string') message = m;
      } catch {
        // not JSON: the status and type say enough
      }
    } else res.body = r.stream;
  }
  obs.event(
    ctx,
    'agentCore',
    {
      message: `AgentCore answered ${res.status}${type ? ` ${type}` : ''}${message ? `: ${message}` : ''}`,
      status: res.status,
      ...(type ? { errorType: type } : {}),
    },
    null,
    'warn',
  );
}
