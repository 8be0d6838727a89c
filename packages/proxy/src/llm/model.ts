// One served model, compiled: its provider's endpoint and pool, transformations and header changes.
// `call` sends one attempt: the client's request converted by the format pair, to the provider, and
// the answer converted back as it streams, its usage recorded in the request's LLM slot.
import { Readable } from 'node:stream';
import { bracketHost, parseGoDuration } from '@gw/api/runtime';
import { type CelProgram, celToJson, compileCel } from '../cel/cel.ts';
import type { LlmFormat, LlmModelIR, LlmProviderIR } from '../config/ir.ts';
import { GwError } from '../errors.ts';
import { Lazy } from '../lazy.ts';
import { type AbortSource, bufferUpTo, contentLength, discard } from '../pipeline/body.ts';
import type { Headers, RequestContext } from '../pipeline/context.ts';
import type { Handler } from '../pipeline/layer.ts';
import { compileRules, decide } from '../policies/authorization/decision.ts';
import { backendAuthLayer } from '../policies/backend-auth/index.ts';
import { headerModifier } from '../policies/header-modifier/index.ts';
import { modelActiveHealthKey } from '../upstream/active-health.ts';
import { attachActiveHealth } from '../upstream/active-prober.ts';
import type { BackendEnv } from '../upstream/backends/types.ts';
import { type CallTarget, callUpstream } from '../upstream/call.ts';
import { connectionSpec } from '../upstream/connection.ts';
import { type EndpointHealth, trackHealth } from '../upstream/health.ts';
import { upgradeTarget, upgradeUpstream } from '../upstream/upgrade.ts';
import { enrichRequest } from './formats/content.ts';
import { applyPromptCaching } from './formats/prompt-caching.ts';
import { FORMAT_PAIRS } from './formats/registry.ts';
import type { FormatPair, JsonObject, StreamConverter } from './formats/types.ts';
import { compileGuards, type ModelGuards, record, type StreamGuards } from './guardrails/runner.ts';
import type { GuardRequest } from './guardrails/types.ts';
import { PROVIDERS } from './providers/registry.ts';
import type { ProviderEndpoint, ProviderModule, ProviderRequest } from './providers/types.ts';
import { LlmRequestState } from './state.ts';

export interface CompiledModel {
  ir: LlmModelIR;
  /** One attempt at this model, for the model name in the slot's `routedModel`. */
  call: Handler;
  /** Where requests go, host:port (the trace's upstream target). */
  endpoint: string;
  /** With a `health` policy: the model's passive health, fed by each call's answer. */
  health?: EndpointHealth;
}

/** Client credential headers: dropped when the gateway holds the provider's key. */
const CLIENT_CREDENTIALS = ['authorization', 'x-api-key', 'api-key'];
/** AWS's binary event stream (Bedrock ConverseStream), converted by its pair like SSE. */
const EVENT_STREAM = 'application/vnd.amazon.eventstream';
/** Set by the gateway for each attempt. */
const REPLACED = ['content-length', 'transfer-encoding', 'host', 'accept-encoding', 'content-encoding'];
/**
 * The client's address and scheme, which a provider (a third party, most often) has no use for: not
 * sent, as agentgateway sends none (the provider's own requestHeaderModifier can still set them).
 */
const CLIENT_ADDRESS = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded', 'x-real-ip'];
const NOT_FORWARDED = new Set([...REPLACED, ...CLIENT_ADDRESS]);
const NOT_FORWARDED_WITH_KEY = new Set([...REPLACED, ...CLIENT_ADDRESS, ...CLIENT_CREDENTIALS]);
/** The reader of realtime sessions' usage (and ws's frame parser): loaded by the first session. */
const realtimeUsage = new Lazy(() => import('./realtime-usage.ts'));
/** The relay that runs prompt guards on realtime sessions: loaded by the first guarded session. */
const realtimeGuard = new Lazy(() => import('./realtime-guard.ts'));

export function compileModel(m: LlmModelIR, env: BackendEnv): CompiledModel {
  const p = m.provider;
  const provider = PROVIDERS[p.kind] as ProviderModule<typeof p.kind>;
  const ep: ProviderEndpoint = p.endpoint ?? provider.endpoint(p as never);
  const host = bracketHost(ep.host);
  const endpoint = `${host}:${ep.port}`;
  const defaultPort = ep.port === (ep.tls ? 443 : 80);
  const authority = defaultPort ? host : endpoint;
  // The model's own connection settings (backendTLS …) replace the backend's.
  const connection =
    Object.keys(m.policies).length > 0 ? connectionSpec(m.policies, env.global) : { ...env.connection };
  // An https endpoint gets TLS (system roots, SNI from the host) unless the model's backendTLS says more.
  if (ep.tls && !connection.tls) connection.tls = { hostname: ep.host };
  else if (ep.tls && connection.tls && !connection.tls.hostname)
    connection.tls = { ...connection.tls, hostname: ep.host };
  if (!ep.tls) delete connection.tls;
  const dispatcher = env.pools?.acquire({
    ...connection,
    origin: `${ep.tls ? 'https' : 'http'}://${endpoint}`,
  });
  if (dispatcher) env.used.add(dispatcher);
  const target: CallTarget | undefined = dispatcher ? { dispatcher, endpoint } : undefined;

  const formats = provider.formats(p as never);
  const transformation = compileFields(m.transformation);
  const finalTransformation = compileFields(m.finalTransformation);
  const requestHeaders = m.requestHeaders ? headerModifier(m.requestHeaders) : undefined;
  const responseHeaders = m.responseHeaders ? headerModifier(m.responseHeaders) : undefined;
  const key = p.apiKey;
  const defaults = m.defaults;
  const overrides = m.overrides;
  const guards = compileGuards(m.guards, env);
  const prompts = m.prompts;
  const alias = m.modelAliases ? compileAliases(m.modelAliases) : undefined;
  const catalog = env.global.modelCatalog;
  const metadata = m.requestMetadata ? compileMetadata(m.requestMetadata) : undefined;
  const limit = env.global.maxBufferSize;
  // the provider's own http.requestTimeout (an ai provider's policies), else the backend's
  const own = m.policies.http?.requestTimeout ? parseGoDuration(m.policies.http.requestTimeout) : undefined;
  const timeout = own ?? env.attemptTimeoutMs;
  const rules = m.authorization ? compileRules(m.authorization) : undefined;
  const caching = m.promptCaching;
  const passthrough = m.passthrough;
  const gatewayAuth = p.auth ? backendAuthLayer(p.auth, limit) : undefined;
  const send: Handler = (ctx) => callUpstream(ctx, target as CallTarget, timeout);

  const call: Handler = async (ctx) => {
    const state = ctx.ext.llm;
    const forwarding = ctx.ext.llmForward;
    if ((!state && !forwarding) || !target) throw new GwError('GW_ERR_INTERNAL');
    if (rules) {
      const d = decide(rules, ctx.celContext());
      if (!d.allowed) {
        ctx.obs?.event(
          ctx,
          'authorization',
          { allowed: false, reason: d.reason, model: m.name },
          null,
          'warn',
        );
        throw new GwError('GW_ERR_FORBIDDEN', `authorization denied for model ${m.name}`);
      }
    }
    if (forwarding) return forward(ctx, forwarding);
    if (!state) throw new GwError('GW_ERR_INTERNAL');
    if (passthrough) return sendAsItIs(ctx, state, passthrough);
    // What the guards read of the client's request, taken before it is rewritten for the provider.
    const guarded = guards?.snapshot(ctx);
    const body = rewritten(ctx, state);
    // Guards read what the client sent (after defaults and overrides), not the operator's own prompts.
    if (guards && guarded) await guards.request(ctx, state, body, guarded);
    if (prompts) enrichRequest(state.httpFormat, body, prompts.prepend, prompts.append);
    const model = String(body.model);
    state.model = model;
    state.provider = p.name;
    state.catalog = catalog;
    const [format, pair] = pairFor(state.httpFormat, formats, p);
    state.providerFormat = format;
    const out = pair.request(
      body,
      {
        model,
        stream: state.streaming,
        bodyHasModel: provider.bodyHasModel?.(p as never, format) ?? true,
        tokenLimitField: p.kind === 'openai' ? 'max_completion_tokens' : 'max_tokens',
      },
      state,
    );
    const fields = provider.bodyFields?.(p as never, format);
    if (fields) Object.assign(out, fields);
    if (finalTransformation.length > 0) setFields(ctx, out, finalTransformation, true);
    if (metadata && format === 'bedrock-converse') {
      const md = metadata(ctx);
      if (md) out.requestMetadata = md;
    }
    if (caching) applyPromptCaching(format, model, out, caching);
    const path = providerPath(provider, p, format, model, state.streaming);
    await dispatch(ctx, 'POST', path, Buffer.from(JSON.stringify(out)), true);
    await answer(ctx, state, pair, p.name, limit, guards && guarded ? { guards, req: guarded } : undefined);
    if (responseHeaders && ctx.response) responseHeaders(ctx.response.headers);
  };

  /**
   * Sends `body` to `path` (and query) at the provider's endpoint, with its credential; `ctx.response`
   * is the answer. A JSON body unless `forwarded` (then the client's content type stays).
   */
  const dispatch = async (
    ctx: RequestContext,
    method: string,
    path: string,
    body: Buffer,
    readsAnswer: boolean,
    forwarded = false,
  ) => {
    await toProvider(ctx, method, path, body, {
      ...(forwarded ? {} : { 'content-type': 'application/json' }),
      // An answer read for usage is not compressed.
      ...(readsAnswer ? { 'accept-encoding': 'identity' } : {}),
    });
    if (gatewayAuth) await gatewayAuth(ctx, send);
    else await send(ctx);
  };

  /**
   * Makes ctx the request the provider gets: `method`, `path` (and query) and `body` at its address,
   * the client's headers without their credential (when the gateway has one), `extra` headers, the
   * model's header changes, and the provider's credential.
   */
  const toProvider = async (
    ctx: RequestContext,
    method: string,
    path: string,
    body: Buffer,
    extra: Record<string, string>,
  ) => {
    const headers = upstreamHeaders(ctx.headers, key !== undefined || gatewayAuth !== undefined);
    headers.host = authority;
    Object.assign(headers, extra);
    requestHeaders?.(headers);
    const req: ProviderRequest = { method, path, headers, body };
    await provider.authorize(p as never, req, key?.reveal(), gatewayAuth !== undefined);
    if (req.body.length > 0 || (method !== 'GET' && method !== 'HEAD'))
      req.headers['content-length'] = String(req.body.length);
    const q = req.path.indexOf('?');
    ctx.method = req.method;
    ctx.path = q === -1 ? req.path : req.path.slice(0, q);
    ctx.query = q === -1 ? '' : req.path.slice(q);
    ctx.headers = req.headers;
    ctx.body = req.body;
  };

  /**
   * The client's request with the model's fields set: the provider model (else the virtual model's
   * choice, else the client's), defaults, overrides and transformations, then an alias renames the
   * model they left.
   */
  const rewritten = (ctx: RequestContext, state: LlmRequestState): JsonObject => {
    const body: JsonObject = { ...state.request };
    body.model = p.model ?? state.routedModel ?? state.requestModel;
    if (defaults) for (const k in defaults) if (body[k] === undefined) body[k] = defaults[k];
    if (overrides) Object.assign(body, overrides);
    if (transformation.length > 0) setFields(ctx, body, transformation);
    if (alias && typeof body.model === 'string') body.model = alias(body.model) ?? body.model;
    return body;
  };
  /** Whether passthrough has fields of the model's to set (agentgateway sets them there too). */
  const setsFields =
    p.model !== undefined ||
    defaults !== undefined ||
    overrides !== undefined ||
    transformation.length > 0 ||
    alias !== undefined;
  /**
   * passthrough: the client's body goes to the provider's endpoint for the client's own format
   * (which the provider must speak), unconverted: as it came, or with the model's own fields set
   * (params.model, defaults, overrides, transformation, aliases) when it has any. detect reads the
   * answer for usage as it passes, opaque leaves it alone.
   */
  const sendAsItIs = async (ctx: RequestContext, state: LlmRequestState, mode: 'detect' | 'opaque') => {
    const format = state.httpFormat;
    if (!formats.includes(format))
      throw new GwError(
        'GW_ERR_LLM_UNSUPPORTED_FORMAT',
        `passthrough sends requests as they are, and provider ${p.name} does not speak ${format} (it speaks ${formats.join(', ')})`,
      );
    let raw: Buffer;
    if (setsFields) {
      const body = rewritten(ctx, state);
      state.model = typeof body.model === 'string' ? body.model : state.requestModel;
      raw = Buffer.from(JSON.stringify(body));
    } else {
      raw = Buffer.isBuffer(ctx.body) ? ctx.body : Buffer.from(JSON.stringify(state.request));
      state.model = state.requestModel;
    }
    state.provider = p.name;
    state.catalog = catalog;
    state.providerFormat = format;
    const path = providerPath(provider, p, format, state.model, state.streaming);
    await dispatch(ctx, 'POST', path, raw, mode === 'detect');
    const same = FORMAT_PAIRS[`${format}__${format}`];
    if (mode === 'detect' && same) await answer(ctx, state, same, p.name, limit, undefined);
    if (responseHeaders && ctx.response) responseHeaders(ctx.response.headers);
  };
  /**
   * A request the ai policy's routes forward (passthrough, detect): sent as it came, to its own path
   * (`pathPrefix` in place of the provider's base path, or `path` in place of all of it), with the
   * provider's address and credential. detect also reads the answer's usage when the request is an
   * API the gateway knows (the slot is set); otherwise it is passed on as passthrough is.
   */
  const forward = async (ctx: RequestContext, mode: 'passthrough' | 'detect' | 'realtime') => {
    if (mode === 'realtime' && ctx.ext.upgrade) return realtime(ctx);
    const state = mode === 'detect' ? ctx.ext.llm : undefined;
    if (state) {
      state.model = state.requestModel;
      state.provider = p.name;
      state.catalog = catalog;
      state.providerFormat = state.httpFormat;
    }
    const body = Buffer.isBuffer(ctx.body) ? ctx.body : EMPTY;
    await dispatch(ctx, ctx.method, forwardPath(ctx.path) + ctx.query, body, state !== undefined, true);
    const same = state && FORMAT_PAIRS[`${state.httpFormat}__${state.httpFormat}`];
    if (state && same) await answer(ctx, state, same, p.name, limit, undefined);
    if (responseHeaders && ctx.response) responseHeaders(ctx.response.headers);
  };
  /**
   * A realtime route's WebSocket (OpenAI's Realtime API): the handshake goes to the provider's
   * address and path as forward() sends a request, with its credential in place of the client's and
   * the served model in `?model=`; once switched, frames pass both ways untouched, and the
   * provider's are read as they pass for each response's usage (llm/realtime-usage.ts).
   */
  const realtime = async (ctx: RequestContext) => {
    if (gatewayAuth)
      throw new GwError(
        'GW_ERR_UPGRADE_UNSUPPORTED',
        `a realtime WebSocket with provider ${p.name}'s backendAuth is not supported by this build of gw yet (use its key)`,
      );
    const upgrade = ctx.ext.upgrade;
    const guarding = guards?.realtime();
    if (guarding && guarding.needService.length > 0)
      throw new GwError(
        'GW_ERR_UPGRADE_UNSUPPORTED',
        `guard ${guarding.needService.join(', ')} would check this realtime session through a service, which a session cannot wait for in this build of gw; only regex and promptInjection guards run on realtime sessions`,
      );
    const applies = guarding && guarding.request.length + guarding.response.length > 0;
    const reading = await realtimeUsage.ready;
    const relaying = applies ? await realtimeGuard.ready : undefined;
    // The guards read each message: no compression between the gateway and the provider, so none
    // between the client and the gateway either (the provider's 101 agrees to what it was offered).
    const guardedReq = applies ? guards?.snapshot(ctx) : undefined;
    if (applies) delete ctx.headers['sec-websocket-extensions'];
    const q = new URLSearchParams(ctx.query.slice(1));
    const state = new LlmRequestState('openai-realtime', {}, q.get('model') ?? '', true);
    let query = ctx.query;
    if (p.model !== undefined) {
      q.set('model', p.model);
      query = `?${q.toString()}`;
    }
    state.model = q.get('model') ?? undefined;
    state.provider = p.name;
    state.catalog = catalog;
    ctx.ext.llm = state;
    await toProvider(ctx, 'GET', forwardPath(ctx.path) + query, EMPTY, {});
    await upgradeUpstream(ctx, upgradeTarget(endpoint, connection), timeout);
    const up = upgrade?.upstream;
    if (!upgrade || !up || ctx.response?.status !== 101) return;
    const agreed = ctx.response.headers['sec-websocket-extensions'];
    if (relaying && agreed) {
      // offered none, it agreed to one anyway: the guards could not read its messages
      up.socket.destroy();
      delete upgrade.upstream;
      ctx.response = undefined;
      throw new GwError(
        'GW_ERR_LLM_PROVIDER',
        `provider ${p.name} agreed to WebSocket extensions it was not offered (${agreed}); the session's guards cannot read its messages`,
      );
    }
    upgrade.reader = reading.readRealtimeUsage(
      state,
      typeof agreed === 'string' ? agreed : undefined,
      (why) => {
        state.usageUnread = why;
      },
    );
    if (relaying && guarding && guardedReq)
      upgrade.relay = relaying.guardRealtime(
        guarding,
        guardedReq,
        (f) => record(ctx, state, f),
        () => up.socket.destroy(),
      );
  };
  /** The provider's own base path (`/v1` for OpenAI's), which a pathPrefix replaces. */
  const basePath = p.pathPrefix === undefined ? '' : providerBase(provider, p, formats);
  const forwardPath = (path: string): string => {
    if (p.path !== undefined) return p.path.split('?', 1)[0] ?? p.path;
    if (p.pathPrefix === undefined) return path;
    const rest = basePath !== '' && path.startsWith(basePath) ? path.slice(basePath.length) : path;
    return p.pathPrefix.replace(/\/$/, '') + rest;
  };
  if (!m.health) return { ir: m, call, endpoint };
  // Health is the provider's own, by backend and entry: two providers on one host (two API keys of
  // api.openai.com, say) are ejected apart, and an ai backend's providers, all models `*`, are told apart.
  const owner = env.backend === undefined ? (m.entry ?? m.name) : `${env.backend}/${m.entry ?? m.name}`;
  const tracked = trackHealth(m.health, owner, endpoint, env.pools, env.used, call);
  // health.active: GETs of its path (a self-hosted server's /health) through the model's own pool
  const active = m.health.active;
  if (active)
    attachActiveHealth(
      tracked.health,
      modelActiveHealthKey(env.backend ?? '', m, active),
      active,
      dispatcher
        ? { dispatcher, origin: `${ep.tls ? 'https' : 'http'}://${endpoint}`, host: authority }
        : undefined,
      env,
    );
  return { ir: m, call: tracked.call, endpoint, health: tracked.health };
}

/**
 * modelAliases as a lookup: an exact name first, then the patterns (each `*` any text), the longest
 * first; undefined when none matches.
 */
export function compileAliases(aliases: Record<string, string>): (model: string) => string | undefined {
  const exact = new Map<string, string>();
  const patterns: { re: RegExp; length: number; to: string }[] = [];
  for (const [from, to] of Object.entries(aliases)) {
    if (!from.includes('*')) {
      exact.set(from, to);
      continue;
    }
    const source = from
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    patterns.push({ re: new RegExp(`^${source}$`, 's'), length: from.length, to });
  }
  patterns.sort((a, b) => b.length - a.length);
  return (model) => exact.get(model) ?? patterns.find((p) => p.re.test(model))?.to;
}

function compileFields(fields: Record<string, string> | undefined): [string, CelProgram][] {
  return Object.entries(fields ?? {}).map(([field, expr]) => [field, compileCel(expr)]);
}

/**
 * Each field of `body` set from its expression over the request with `llmRequest` as `body` is.
 * `providerFormat`: `body` is the provider's request, seen as llmRequest only by these expressions
 * (later ones, the access log's among them, see the client's request again).
 */
/**
 * Bedrock's requestMetadata for one request: each key's value, or its expression's as a string; an
 * expression without a value (a missing claim or header) leaves its key out.
 */
function compileMetadata(
  entries: NonNullable<LlmModelIR['requestMetadata']>,
): (ctx: RequestContext) => Record<string, string> | undefined {
  const compiled = entries.map((e) => ({
    key: e.key,
    value: e.value,
    prog: e.expression === undefined ? undefined : compileCel(e.expression),
  }));
  return (ctx) => {
    const out: Record<string, string> = {};
    const cel = compiled.some((c) => c.prog) ? ctx.celContext() : undefined;
    for (const c of compiled) {
      if (c.value !== undefined) {
        out[c.key] = c.value;
        continue;
      }
      const v = c.prog && cel ? c.prog.eval(cel) : undefined;
      if (v === undefined || v === null) continue;
      const j = celToJson(v);
      out[c.key] = (typeof j === 'string' ? j : JSON.stringify(j)).slice(0, 256);
    }
    return Object.keys(out).length > 0 ? out : undefined;
  };
}

function setFields(
  ctx: RequestContext,
  body: JsonObject,
  fields: readonly [string, CelProgram][],
  providerFormat = false,
): void {
  const cel = ctx.celContext();
  const before = cel.llmRequest;
  cel.llmRequest = body;
  for (const [field, prog] of fields) {
    const v = prog.eval(cel);
    if (v !== undefined) body[field] = celToJson(v);
  }
  if (providerFormat) cel.llmRequest = before;
}

/** The pair converting the client's format to one the provider speaks: its own first. */
function pairFor(
  client: LlmFormat,
  formats: readonly LlmFormat[],
  p: LlmProviderIR,
): [LlmFormat, FormatPair] {
  if (formats.includes(client)) {
    const same = FORMAT_PAIRS[`${client}__${client}`];
    if (same) return [client, same];
  }
  for (const f of formats) {
    const pair = FORMAT_PAIRS[`${client}__${f}`];
    if (pair) return [f, pair];
  }
  throw new GwError(
    'GW_ERR_LLM_UNSUPPORTED_FORMAT',
    `this gateway cannot convert ${client} requests to what provider ${p.name} speaks (${formats.join(', ')}): no ${client}__${formats[0] ?? 'none'} format pair in this build`,
  );
}

const EMPTY = Buffer.alloc(0);

/** The path prefix of the provider's first format (empty when its paths have none). */
function providerBase(
  provider: ProviderModule<LlmProviderIR['kind']>,
  p: LlmProviderIR,
  formats: readonly LlmFormat[],
): string {
  const first = formats[0];
  return first === undefined ? '' : provider.path(p as never, first, { model: '', stream: false }).prefix;
}

function providerPath(
  provider: ProviderModule<LlmProviderIR['kind']>,
  p: LlmProviderIR,
  format: LlmFormat,
  model: string,
  stream: boolean,
): string {
  const pp = provider.path(p as never, format, { model, stream });
  if (p.path !== undefined) return p.path.includes('?') || pp.query === '' ? p.path : p.path + pp.query;
  return (p.pathPrefix ?? pp.prefix) + pp.path + pp.query;
}

function upstreamHeaders(client: Headers, dropCredentials: boolean): Headers {
  // Copied without the dropped names rather than copied then deleted from: an object that had
  // properties deleted is slower for undici to read.
  const skip = dropCredentials ? NOT_FORWARDED_WITH_KEY : NOT_FORWARDED;
  const h: Headers = {};
  for (const k in client) {
    const v = client[k];
    if (v !== undefined && !skip.has(k)) h[k] = v;
  }
  return h;
}

/**
 * Turns the provider's answer into the client's: a JSON answer converted whole, a stream event by
 * event as it arrives, an error in JSON passed on (converted), anything else a 502.
 */
async function answer(
  ctx: RequestContext,
  state: LlmRequestState,
  pair: FormatPair,
  provider: string,
  limit: number,
  guarding: { guards: ModelGuards; req: GuardRequest } | undefined,
): Promise<void> {
  const res = ctx.response;
  if (!res) return;
  const type = String(res.headers['content-type'] ?? '').toLowerCase();
  const json = type.includes('json');
  const stream = type.startsWith('text/event-stream') || type.startsWith(EVENT_STREAM);
  if (res.status >= 400 || (!json && !stream)) {
    if (!json) {
      discard(res.body);
      ctx.response = undefined;
      throw new GwError(
        'GW_ERR_LLM_PROVIDER',
        `provider ${provider} answered ${res.status} with ${type.split(';')[0] || 'no content type'}, not JSON`,
      );
    }
    const parsed = await readJson(res, limit, ctx);
    if (parsed === undefined) {
      ctx.response = undefined;
      throw new GwError(
        'GW_ERR_LLM_PROVIDER',
        `provider ${provider} answered ${res.status} with invalid JSON`,
      );
    }
    if (parsed.over) {
      // An error body over the buffer limit: passed on as it comes.
      res.body = parsed.stream;
      return;
    }
    const converted = pair.error ? pair.error(parsed.value, res.status) : undefined;
    setBody(res, converted ? Buffer.from(JSON.stringify(converted)) : parsed.raw);
    return;
  }
  if (!json) {
    const conv = pair.stream(state);
    res.body = convertStream(res.body, conv, state, guarding?.guards.stream(ctx, state, conv, guarding.req));
    delete res.headers['content-length'];
    // Bedrock's binary event stream reaches the client as SSE.
    if (type.startsWith(EVENT_STREAM)) res.headers['content-type'] = 'text/event-stream';
    return;
  }
  const parsed = await readJson(res, limit, ctx);
  if (parsed === undefined) {
    ctx.response = undefined;
    throw new GwError('GW_ERR_LLM_PROVIDER', `provider ${provider} answered with invalid JSON`);
  }
  if (parsed.over) {
    // Larger than the buffer limit: sent on as it comes, its usage uncounted.
    res.body = parsed.stream;
    state.finish();
    return;
  }
  const converted = pair.response(parsed.value, state);
  let changed = false;
  if (guarding) {
    try {
      changed = await guarding.guards.response(ctx, state, converted ?? parsed.value, guarding.req);
    } catch (err) {
      // A rejected answer still used its tokens.
      state.finish();
      ctx.response = undefined;
      throw err;
    }
  }
  const out = converted ?? (changed ? parsed.value : undefined);
  setBody(res, out ? Buffer.from(JSON.stringify(out)) : parsed.raw);
  state.finish();
}

type ReadJson = { over: false; value: JsonObject; raw: Buffer } | { over: true; stream: Readable };

/** The body parsed, or the stream when it is over the limit; undefined: not a JSON object. */
async function readJson(
  res: NonNullable<RequestContext['response']>,
  limit: number,
  request: AbortSource,
): Promise<ReadJson | undefined> {
  const body = res.body;
  let raw: Buffer;
  if (body === null) raw = Buffer.alloc(0);
  else if (Buffer.isBuffer(body)) raw = body;
  else {
    // An answer that came whole with its head is taken in one read (bufferUpTo's takeComplete).
    const r = await bufferUpTo(body, limit, contentLength(res.headers), request);
    if (!r.ok) return { over: true, stream: r.stream };
    raw = r.data;
  }
  try {
    const v = JSON.parse(raw.toString('utf8')) as unknown;
    if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
    return { over: false, value: v as JsonObject, raw };
  } catch {
    return undefined;
  }
}

function setBody(res: NonNullable<RequestContext['response']>, body: Buffer): void {
  res.body = body;
  res.headers['content-length'] = String(body.length);
  delete res.headers['transfer-encoding'];
}

/**
 * The provider's stream through the pair's converter (and the guards, if any) as the client's body,
 * at the client's pace; the slot's usage is final when it ends. A guard that ends the stream aborts
 * the provider's answer (the tokens counted are those received), and a client that goes away
 * cancels it and the guards' pending calls. Driven by the provider stream's events, so each chunk
 * goes on in the turn it arrives in.
 */
function convertStream(
  body: NonNullable<RequestContext['response']>['body'],
  conv: StreamConverter,
  state: LlmRequestState,
  guards: StreamGuards | undefined,
): Readable {
  const upstream = body === null || Buffer.isBuffer(body) ? undefined : body;
  /** The client's side is full: read no more until it asks. */
  let full = false;
  /** The guards' windows hold too much: read no more until they release it. */
  let held = false;
  let stopped = false;
  let listening = false;
  const out = new Readable({
    read() {
      full = false;
      flow();
    },
    destroy(err, cb) {
      unlisten();
      windows?.cancel();
      if (upstream && !upstream.readableEnded) discard(upstream);
      cb(err);
    },
  });
  const send = (s: string | Buffer) => {
    if (state.firstOutputAt === undefined && s.length > 0) state.firstOutputAt = performance.now();
    if (!out.destroyed && !out.push(s)) full = true;
  };
  const windows = guards?.windows({
    send,
    fail: (raw) => {
      stopped = true;
      send(raw);
    },
  });
  const scanned = guards?.conv ?? conv;
  const fail = (err: Error) => {
    if (!out.destroyed) out.destroy(err);
  };
  /** Passes converted output on; a promise while the guards' windows hold too much of it. */
  const feed = (converted: string | Buffer | undefined): Promise<void> | undefined => {
    if (converted === undefined || converted.length === 0) return undefined;
    if (windows) return windows.write(converted);
    send(converted);
    return undefined;
  };
  /** The provider's answer is over, or a guard ended it: the rest converted, the usage final. */
  const finish = async () => {
    if (out.destroyed) return;
    if (!stopped) await feed(scanned.end());
    if (windows) await windows.end();
    // A stream a guard ended still used the tokens it carried.
    state.finish();
    if (!out.destroyed) out.push(null);
  };
  const flow = () => {
    if (listening && !full && !held) upstream?.resume();
  };
  const onData = (chunk: Buffer) => {
    let wait: Promise<void> | undefined;
    try {
      wait = feed(scanned.write(chunk));
    } catch (err) {
      fail(err as Error);
      return;
    }
    if (guards?.rejected()) stopped = true;
    if (stopped) return stop();
    if (wait) {
      held = true;
      upstream?.pause();
      wait.then(() => {
        held = false;
        if (stopped) stop();
        else flow();
      }, fail);
    } else if (full) upstream?.pause();
  };
  /** A guard ended the stream: the provider's connection is closed, not drained. */
  const stop = () => {
    unlisten();
    discard(upstream);
    finish().catch(fail);
  };
  const onEnd = () => {
    unlisten();
    finish().catch(fail);
  };
  const onError = (err: Error) => {
    unlisten();
    fail(err);
  };
  const onClose = () => {
    unlisten();
    fail(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
  };
  const unlisten = () => {
    if (!listening || !upstream) return;
    listening = false;
    upstream.off('data', onData);
    upstream.off('end', onEnd);
    upstream.off('error', onError);
    upstream.off('close', onClose);
  };
  if (upstream) {
    listening = true;
    upstream.on('data', onData);
    upstream.on('end', onEnd);
    upstream.on('error', onError);
    upstream.on('close', onClose);
  } else {
    (async () => {
      if (Buffer.isBuffer(body)) await feed(scanned.write(body));
      if (guards?.rejected()) stopped = true;
      await finish();
    })().catch(fail);
  }
  return out;
}
