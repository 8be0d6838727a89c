// The gRPC form: one Envoy ext_authz v3 Check call per request, built from the request context, and
// the CheckResponse read the way Envoy's ext_authz filter reads it (OK allows, anything else denies).
// With backendTLS the channel is TLS (CA, client certificate, SNI and names to verify as for backends).
import { randomUUID } from 'node:crypto';
import { create, type JsonObject } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { type Client, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { HEADER_NAME_PATTERN, parseGoDuration } from '@gw/api/runtime';
import {
  HeaderValueOption_HeaderAppendAction as Action,
  type HeaderValueOption,
  type QueryParameter,
} from '@gw/xds-proto/envoy/config/core/v3/base';
import {
  type CheckRequest,
  CheckRequestSchema,
  type CheckResponse,
} from '@gw/xds-proto/envoy/service/auth/v3/external_auth';
import { type CelProgram, celJsonValue } from '../../cel/cel.ts';
import type { BackendTlsIR, ExtAuthzIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import {
  type Headers,
  normalizeAddress,
  type ProxyResponse,
  type RequestContext,
} from '../../pipeline/context.ts';
import { grpcClient } from '../grpc-client.ts';
import { type Check, DEFAULT_TIMEOUT_MS, type Decision } from './decision.ts';
import { type CheckBody, PARTIAL_BODY_HEADER } from './request-body.ts';
import { CHECK_PATH, deserializeCheckResponse, serializeCheckRequest } from './service.ts';

type GrpcConfig = Extract<ExtAuthzIR, { grpc: unknown }>['grpc'];

/** `metadata`: the config's requestMetadata, compiled by the caller. */
export function grpcCheck(
  cfg: GrpcConfig,
  metadata: readonly (readonly [string, CelProgram])[],
  tls?: BackendTlsIR,
  serviceHeaders: Record<string, string> = {},
  /** The credential each call obtains for its request (service-call.ts serviceAuthOf). */
  auth?: (ctx: RequestContext) => Promise<Record<string, string>>,
): Check {
  const timeoutMs = (cfg.timeout && parseGoDuration(cfg.timeout)) || DEFAULT_TIMEOUT_MS;
  const extensions = { ...(cfg.contextExtensions ?? {}) };
  const client = grpcClient(cfg.host, tls);
  return async (ctx, body) => {
    const req = checkRequest(ctx, extensions, metadata, body);
    let res: CheckResponse;
    try {
      const headers = auth ? { ...serviceHeaders, ...(await auth(ctx)) } : serviceHeaders;
      res = await call(client, req, ctx.signal, timeoutMs, headers);
    } catch (err) {
      const e = err as ServiceError;
      const reason =
        e.code === status.DEADLINE_EXCEEDED ? `no answer within ${timeoutMs}ms` : (e.details ?? e.message);
      return { kind: 'failure', reason };
    }
    return decide(res);
  };
}

/** What a connection's check decided: allow, deny, or no decision (the failure mode picks). */
export type ConnectionDecision = { kind: 'allow' } | { kind: 'deny' } | { kind: 'failure'; reason: string };

/**
 * networkExtAuthz: one Check per new connection, as Envoy's network ext_authz filter asks it: the
 * client's and the local address, the context extensions, no HTTP request. OK allows.
 */
export function connectionCheck(
  cfg: GrpcConfig,
  tls?: BackendTlsIR,
  serviceHeaders: Record<string, string> = {},
): (
  client: { address: string; port: number },
  local: { address: string; port: number },
) => Promise<ConnectionDecision> {
  const timeoutMs = (cfg.timeout && parseGoDuration(cfg.timeout)) || DEFAULT_TIMEOUT_MS;
  const contextExtensions = { ...(cfg.contextExtensions ?? {}) };
  // connected now: the first connection should not wait for the handshake inside its short deadline
  const client = grpcClient(cfg.host, tls, true);
  const never = new AbortController().signal;
  return async (peer, local) => {
    const req = create(CheckRequestSchema, {
      attributes: {
        source: { address: socketAddress(normalizeAddress(peer.address), peer.port) },
        destination: { address: socketAddress(local.address, local.port) },
        contextExtensions,
      },
    });
    try {
      const res = await call(client, req, never, timeoutMs, serviceHeaders);
      return (res.status?.code ?? status.OK) === status.OK ? { kind: 'allow' } : { kind: 'deny' };
    } catch (err) {
      const e = err as ServiceError;
      const reason =
        e.code === status.DEADLINE_EXCEEDED ? `no answer within ${timeoutMs}ms` : (e.details ?? e.message);
      return { kind: 'failure', reason };
    }
  };
}

/** The service's headers (requestHeaderModifier, its key) as the call's metadata. */
function metadataOf(headers: Record<string, string>): Metadata {
  const m = new Metadata();
  for (const [k, v] of Object.entries(headers)) m.set(k, v);
  return m;
}

function call(
  client: Client,
  req: CheckRequest,
  signal: AbortSignal,
  timeoutMs: number,
  headers: Record<string, string> = {},
) {
  return new Promise<CheckResponse>((resolve, reject) => {
    const c = client.makeUnaryRequest(
      CHECK_PATH,
      serializeCheckRequest,
      deserializeCheckResponse,
      req,
      metadataOf(headers),
      { deadline: Date.now() + timeoutMs },
      (err, res) => {
        signal.removeEventListener('abort', cancel);
        if (err || !res) reject(err ?? new Error('empty response'));
        else resolve(res);
      },
    );
    // The client went away: the decision is no longer needed.
    const cancel = () => c.cancel();
    signal.addEventListener('abort', cancel, { once: true });
  });
}

function checkRequest(
  ctx: RequestContext,
  contextExtensions: Record<string, string>,
  metadata: readonly (readonly [string, CelProgram])[],
  body: CheckBody | undefined,
): CheckRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.headers)) headers[k] = Array.isArray(v) ? v.join(',') : v;
  // Envoy sends the pseudo-headers too; authorization servers written for it look for them.
  headers[':authority'] = ctx.authority;
  headers[':method'] = ctx.method;
  headers[':path'] = ctx.path + ctx.query;
  headers[':scheme'] = ctx.scheme;
  const len = ctx.headers['content-length'];
  const size = typeof len === 'string' && /^[0-9]+$/.test(len) ? BigInt(len) : ctx.body ? -1n : 0n;
  // Envoy's with_request_body: the body as text or bytes, and whether it is cut short.
  if (body) headers[PARTIAL_BODY_HEADER] = String(body.partial);
  const sent = body
    ? body.asBytes
      ? { rawBody: new Uint8Array(body.data.buffer, body.data.byteOffset, body.data.length) }
      : { body: body.data.toString('utf8') }
    : {};
  const sock = ctx.req.socket as { localAddress?: string; localPort?: number };
  const filterMetadata: Record<string, JsonObject> = {};
  if (metadata.length > 0) {
    const cel = ctx.celContext();
    for (const [key, program] of metadata) {
      const v = jsonObject(program.eval(cel));
      if (v) filterMetadata[key] = v;
    }
  }
  const requestId = ctx.headers['x-request-id'];
  return create(CheckRequestSchema, {
    attributes: {
      source: { address: socketAddress(ctx.source.address, ctx.source.port) },
      destination: { address: socketAddress(normalizeAddress(sock.localAddress ?? ''), sock.localPort ?? 0) },
      request: {
        time: timestampFromDate(ctx.startDate),
        http: {
          id: typeof requestId === 'string' ? requestId : randomUUID(),
          method: ctx.method,
          headers,
          path: ctx.path + ctx.query,
          host: ctx.authority,
          scheme: ctx.scheme,
          protocol: ctx.httpVersion.startsWith('2') ? 'HTTP/2' : `HTTP/${ctx.httpVersion}`,
          size,
          ...sent,
        },
      },
      contextExtensions,
      metadataContext: { filterMetadata },
    },
  });
}

function socketAddress(address: string, port: number) {
  return {
    address: {
      case: 'socketAddress' as const,
      value: { address, portSpecifier: { case: 'portValue' as const, value: port } },
    },
  };
}

/** A CEL value as a protobuf Struct; metadata must be a map, anything else is left out. */
function jsonObject(v: unknown): JsonObject | undefined {
  const json = celJsonValue(v);
  return json && typeof json === 'object' && !Array.isArray(json) ? json : undefined;
}

const nonEmpty = (o: JsonObject | undefined) => (o && Object.keys(o).length > 0 ? o : undefined);

function decide(res: CheckResponse): Decision {
  const ok = res.httpResponse.case === 'okResponse' ? res.httpResponse.value : undefined;
  // The deprecated ok_response.dynamic_metadata wins over the outer field, as in Envoy.
  const metadata = nonEmpty(ok?.dynamicMetadata) ?? nonEmpty(res.dynamicMetadata);
  if ((res.status?.code ?? status.OK) === status.OK) {
    return {
      kind: 'allow',
      apply(ctx) {
        if (metadata) ctx.ext.extauthz = metadata;
        if (!ok) return;
        applyHeaderOptions(ctx.headers, ok.headers);
        for (const name of ok.headersToRemove) {
          const k = name.toLowerCase();
          // The service may not take away what routes the request.
          if (!k.startsWith(':') && k !== 'host') delete ctx.headers[k];
        }
        applyQuery(ctx, ok.queryParametersToSet, ok.queryParametersToRemove);
      },
      onResponse:
        ok && ok.responseHeadersToAdd.length > 0
          ? (h) => applyHeaderOptions(h, ok.responseHeadersToAdd)
          : undefined,
    };
  }
  if (res.httpResponse.case !== 'deniedResponse')
    return {
      kind: 'deny',
      response: new GwError('GW_ERR_FORBIDDEN', 'denied by external authorization'),
      metadata,
    };
  const d = res.httpResponse.value;
  const code = d.status?.code ?? 0;
  const headers: Headers = {};
  applyHeaderOptions(headers, d.headers);
  const body = d.body ? Buffer.from(d.body) : null;
  if (body) headers['content-length'] = String(body.length);
  else delete headers['content-length'];
  const response: ProxyResponse = { status: code >= 200 && code <= 599 ? code : 403, headers, body };
  return { kind: 'deny', response, metadata };
}

/**
 * Envoy's HeaderValueOption semantics: the deprecated `append` flag wins when set (true appends,
 * false overwrites); otherwise `append_action`, whose default appends (or adds when absent).
 */
export function applyHeaderOptions(h: Headers, options: readonly HeaderValueOption[]): void {
  for (const o of options) {
    if (!o.header) continue;
    const key = o.header.key.toLowerCase();
    if (key.startsWith(':') || !HEADER_NAME_PATTERN.test(key)) continue;
    const raw = o.header.rawValue;
    const value = raw.length > 0 ? Buffer.from(raw).toString('latin1') : o.header.value;
    if (/[\r\n\0]/.test(value) || (value === '' && !o.keepEmptyValue)) continue;
    const action =
      o.append === undefined
        ? o.appendAction
        : o.append
          ? Action.APPEND_IF_EXISTS_OR_ADD
          : Action.OVERWRITE_IF_EXISTS_OR_ADD;
    const cur = h[key];
    switch (action) {
      case Action.ADD_IF_ABSENT:
        if (cur === undefined) h[key] = value;
        break;
      case Action.OVERWRITE_IF_EXISTS_OR_ADD:
        h[key] = value;
        break;
      case Action.OVERWRITE_IF_EXISTS:
        if (cur !== undefined) h[key] = value;
        break;
      default:
        h[key] = cur === undefined ? value : Array.isArray(cur) ? [...cur, value] : [cur, value];
    }
  }
}

function applyQuery(ctx: RequestContext, set: readonly QueryParameter[], remove: readonly string[]): void {
  // Only rebuilt when asked: URLSearchParams re-encodes the whole query.
  if (set.length === 0 && remove.length === 0) return;
  const q = new URLSearchParams(ctx.query);
  for (const k of remove) q.delete(k);
  for (const p of set) q.set(p.key, p.value);
  const s = q.toString();
  ctx.query = s ? `?${s}` : '';
}
