// One Envoy ext_proc v3 Process stream per request, in the order Envoy's ext_proc filter uses it:
// request headers, request body, response headers, response body. A headers phase and a buffered
// body phase are one message and one answer; a FULL_DUPLEX_STREAMED body goes to the service chunk by
// chunk as it arrives, and the service's streamed_response chunks come back as a stream of their own,
// neither side waiting for the other. Loaded lazily (index.ts): grpc-js and the generated messages come
// in with the first config that has an extProc.
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { create, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import type { Client, ClientDuplexStream } from '@grpc/grpc-js';
import { Metadata } from '@grpc/grpc-js';
import { HEADER_NAME_PATTERN } from '@gw/api/runtime';
import {
  ProcessingMode_BodySendMode as BodySendMode,
  ProcessingMode_HeaderSendMode as HeaderSendMode,
  type ProcessingMode,
} from '@gw/xds-proto/envoy/extensions/filters/http/ext_proc/v3/processing_mode';
import {
  type CommonResponse,
  type HeaderMutation,
  type ImmediateResponse,
  type ProcessingRequest,
  ProcessingRequestSchema,
  type ProcessingResponse,
} from '@gw/xds-proto/envoy/service/ext_proc/v3/external_processor';
import type { Headers, ProxyResponse } from '../../pipeline/context.ts';
import { applyHeaderOptions } from '../ext-authz/grpc-check.ts';
import { PROCESS } from './service.ts';

// the channel, made by the policy once per route (this module is the lazily loaded grpc side)
export { grpcClient } from '../grpc-client.ts';

export type Phase = 'requestHeaders' | 'requestBody' | 'responseHeaders' | 'responseBody';
export type BodyPhase = 'requestBody' | 'responseBody';
export type BodyMode = 'none' | 'buffered' | 'bufferedPartial' | 'fullDuplexStreamed';

/** What the service answered to one message. */
export type Answer =
  | { kind: 'continue'; common: CommonResponse | undefined; modeOverride: ProcessingMode | undefined }
  /** The service closed the stream without answering: nothing more is processed (as Envoy). */
  | { kind: 'done' }
  | { kind: 'immediate'; response: ProxyResponse };

export class ExtProcFailure extends Error {}

type RequestInit = NonNullable<MessageInitShape<typeof ProcessingRequestSchema>['request']>;
/** What one direction of the stream carries beside its messages (extras.ts). */
export interface SideExtras {
  attributes?: Record<string, JsonObject> | undefined;
  metadataContext?: Record<string, JsonObject> | undefined;
}
type Waiter = { resolve: (r: ProcessingResponse | null) => void; reject: (e: Error) => void };

/** A FULL_DUPLEX_STREAMED body in flight: what goes to the service and what comes back. */
interface Duplex {
  /** The service's streamed_response chunks, in order, ended by its end_of_stream. */
  out: PassThrough;
  /** The original body, until the pump starts reading it. */
  source: Readable | Buffer | null;
  /** Chunks sent to the service and received from it. */
  sent: number;
  received: number;
  /** Settles when the last chunk (end_of_stream) was handed to the stream, or the pump gave up. */
  pumped: Promise<void>;
  /** `out` ended or failed: nothing more comes back for this phase. */
  over: boolean;
}

/** A Process stream: `exchange` sends one message and waits for its answer; `duplex` streams a body. */
export class ProcessStream {
  readonly #client: Client;
  readonly #call: ClientDuplexStream<ProcessingRequest, ProcessingResponse>;
  readonly #timeoutMs: number;
  readonly #signal: AbortSignal;
  readonly #waiting = new Map<Phase, Waiter>();
  readonly #duplex = new Map<BodyPhase, Duplex>();
  #error: Error | undefined;
  #ended = false;
  #closed = false;
  /** An immediate response that came while a streamed body was in flight (no exchange waited for it). */
  immediate: ProxyResponse | undefined;

  /**
   * What goes beside each direction's messages: the metadata context with every one, the attributes
   * with the first only (then they are dropped). Set by the policy as each side starts.
   */
  readonly side: Record<'request' | 'response', SideExtras> = { request: {}, response: {} };

  /** `client`: the service's channel (grpcClient, made once per route). */
  constructor(client: Client, timeoutMs: number, signal: AbortSignal, grpcMetadata?: Record<string, string>) {
    this.#timeoutMs = timeoutMs;
    this.#signal = signal;
    this.#client = client;
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(grpcMetadata ?? {})) metadata.set(k, v);
    const call = this.#client.makeBidiStreamRequest(
      PROCESS.path,
      PROCESS.requestSerialize,
      PROCESS.responseDeserialize,
      metadata,
      {},
    );
    this.#call = call;
    call.on('data', (m: ProcessingResponse) => this.#answer(m));
    call.on('error', (e: Error & { details?: string }) =>
      this.#fail(new ExtProcFailure(e.details || e.message)),
    );
    call.on('end', () => {
      this.#ended = true;
      for (const w of this.#waiting.values()) w.resolve(null);
      this.#waiting.clear();
      // Chunks the service took and never gave back cannot go on: the body is cut short.
      for (const [phase, d] of this.#active())
        this.#stop(d, new ExtProcFailure(`the service closed the stream before the end of the ${phase}`));
    });
    const abort = () => this.close();
    signal.addEventListener('abort', abort, { once: true });
    call.on('close', () => signal.removeEventListener('abort', abort));
  }

  #answer(m: ProcessingResponse): void {
    const r = m.response;
    if (r.case === 'immediateResponse') {
      const response = immediate(r.value);
      const waiting = [...this.#waiting.values()];
      this.#waiting.clear();
      for (const w of waiting) w.resolve(m);
      const active = this.#active();
      if (active.length > 0) {
        // No exchange may be waiting for it: the phase streaming a body takes it up (index.ts).
        this.immediate = response;
        for (const [, d] of active) this.#stop(d, new ExtProcFailure('an immediate response'));
      }
      return;
    }
    const d = r.case === 'requestBody' || r.case === 'responseBody' ? this.#duplex.get(r.case) : undefined;
    if ((r.case === 'requestBody' || r.case === 'responseBody') && d && !d.over) {
      const mut = r.value.response?.bodyMutation?.mutation;
      if (mut?.case !== 'streamedResponse') {
        this.#fail(
          new ExtProcFailure(
            `answered a fullDuplexStreamed ${r.case} with ${mut?.case ?? 'no body mutation'} (it takes streamed_response)`,
          ),
        );
        return;
      }
      d.received++;
      if (mut.value.body.length > 0) d.out.write(Buffer.from(mut.value.body));
      if (mut.value.endOfStream) {
        d.over = true;
        d.out.end();
      }
      return;
    }
    const w = r.case ? this.#waiting.get(r.case as Phase) : undefined;
    if (w) {
      this.#waiting.delete(r.case as Phase);
      w.resolve(m);
      return;
    }
    // A standalone mode_override (Envoy's pre-header-response form) changes nothing here.
    if (r.case === undefined && m.modeOverride) return;
    this.#fail(new ExtProcFailure(`an answer nothing was sent for (${r.case ?? 'empty'})`));
  }

  #fail(e: Error): void {
    this.#error ??= e;
    for (const w of this.#waiting.values()) w.reject(e);
    this.#waiting.clear();
    for (const [, d] of this.#active()) this.#stop(d, e);
  }

  /** The streamed bodies still coming back. */
  #active(): [BodyPhase, Duplex][] {
    return [...this.#duplex].filter(([, d]) => !d.over);
  }

  #stop(d: Duplex, e: Error): void {
    d.over = true;
    d.out.destroy(e);
  }

  /** Sends one message and waits for its answer; `timed` false: no deadline (as Envoy's full duplex). */
  async exchange(phase: Phase, req: RequestInit, timed = true): Promise<Answer> {
    if (this.#error) throw this.#error;
    if (this.#ended || this.#closed) return { kind: 'done' };
    const answer = new Promise<ProcessingResponse | null>((resolve, reject) => {
      this.#waiting.set(phase, { resolve, reject });
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      if (timed)
        timer = setTimeout(
          () => reject(new ExtProcFailure(`no answer to ${phase} within ${this.#timeoutMs}ms`)),
          this.#timeoutMs,
        );
    });
    this.#call.write(this.#message(req));
    let res: ProcessingResponse | null;
    try {
      res = await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
      this.#waiting.delete(phase);
    }
    if (res === null) return { kind: 'done' };
    const r = res.response;
    if (r.case === 'immediateResponse') return { kind: 'immediate', response: immediate(r.value) };
    if (r.case !== phase) throw new ExtProcFailure(`answered ${r.case ?? 'nothing'} to ${phase}`);
    return { kind: 'continue', common: r.value.response, modeOverride: res.modeOverride };
  }

  /**
   * Streams a body to the service as it arrives (FULL_DUPLEX_STREAMED) and returns the body the
   * service streams back. Starts at once, without waiting for the headers' answer (the service may
   * hold that answer until it has the whole body). The first chunk waits for the channel to be ready,
   * so an unreachable service fails before any of the body is gone (`takeBack`).
   */
  duplex(phase: BodyPhase, body: Readable | Buffer): Readonly<Pick<Duplex, 'out' | 'sent' | 'received'>> {
    const out = new PassThrough();
    // The service may fail, or answer with an immediate response, before the headers' answer hands
    // `out` on as the body (a service that holds that answer until it has the whole body): its error
    // then has no reader yet, and must not be an uncaught exception. A reader later sees it.
    out.on('error', () => {});
    const d: Duplex = { out, source: body, sent: 0, received: 0, pumped: Promise.resolve(), over: false };
    this.#duplex.set(phase, d);
    d.pumped = this.#pump(phase, d).catch((err: unknown) => {
      // The original body failed (the client went away): the service's side is over too.
      this.#fail(err instanceof Error ? err : new Error(String(err)));
    });
    return d;
  }

  /** The original body of a streamed phase, if none of it went to the service yet. */
  takeBack(phase: BodyPhase): Readable | Buffer | undefined {
    const d = this.#duplex.get(phase);
    if (!d || d.source === null) return undefined;
    const s = d.source;
    d.source = null;
    if (!d.over) this.#stop(d, new ExtProcFailure('taken back'));
    return s;
  }

  async #pump(phase: BodyPhase, d: Duplex): Promise<void> {
    await this.#ready();
    const body = d.source;
    if (body === null || this.#stopped()) return;
    d.source = null;
    if (Buffer.isBuffer(body)) {
      d.sent++;
      await this.#send(phase, body, true);
      return;
    }
    for await (const chunk of body) {
      // Once the service is out of the picture the rest is read and dropped (not destroyed: the
      // client's connection still carries the answer).
      if (this.#stopped()) continue;
      d.sent++;
      await this.#send(phase, chunk as Buffer, false);
    }
    // gw's pipeline carries no trailers: the end of the body is an empty chunk with end_of_stream.
    if (!this.#stopped()) await this.#send(phase, Buffer.alloc(0), true);
  }

  #stopped(): boolean {
    return this.#error !== undefined || this.#ended || this.#closed || this.immediate !== undefined;
  }

  async #send(phase: BodyPhase, body: Buffer, endOfStream: boolean): Promise<void> {
    const ok = this.#call.write(this.#message({ case: phase, value: { body, endOfStream } }));
    if (!ok && !this.#stopped()) await once(this.#call, 'drain', { signal: this.#signal });
  }

  /** A ProcessingRequest with what its direction carries beside it (attributes: its first only). */
  #message(req: RequestInit): ProcessingRequest {
    const side = this.side[req.case?.startsWith('request') ? 'request' : 'response'];
    const { attributes, metadataContext } = side;
    side.attributes = undefined;
    return create(ProcessingRequestSchema, {
      request: req,
      ...(attributes ? { attributes } : {}),
      ...(metadataContext ? { metadataContext: { filterMetadata: metadataContext } } : {}),
    });
  }

  /** Waits (up to the message timeout) for the channel to connect; a failed connection fails the call. */
  #ready(): Promise<void> {
    return new Promise((resolve) => this.#client.waitForReady(Date.now() + this.#timeoutMs, () => resolve()));
  }

  close(): void {
    if (!this.#ended && !this.#closed) this.#call.cancel();
    this.#closed = true;
    for (const [, d] of this.#active()) this.#stop(d, new ExtProcFailure('the stream was closed'));
  }

  /** Ends our side once every streamed body was sent; the service sees the end of the stream. */
  end(): void {
    if (this.#closed) return;
    const pumps = [...this.#duplex.values()].map((d) => d.pumped);
    const finish = () => {
      if (!this.#closed && !this.#ended) this.#call.end();
    };
    if (pumps.length === 0) finish();
    else void Promise.all(pumps).then(finish);
  }
}

const BODY_MODES: Partial<Record<BodySendMode, BodyMode>> = {
  [BodySendMode.NONE]: 'none',
  [BodySendMode.BUFFERED]: 'buffered',
  [BodySendMode.BUFFERED_PARTIAL]: 'bufferedPartial',
  [BodySendMode.FULL_DUPLEX_STREAMED]: 'fullDuplexStreamed',
};

/**
 * A mode_override, as Envoy applies it: it replaces the processing mode, so a body mode left at its
 * zero value is NONE. STREAMED and GRPC, which gw does not have, leave that mode as it was.
 */
export function overrideModes(o: ProcessingMode): {
  requestBody: BodyMode | undefined;
  responseBody: BodyMode | undefined;
  responseHeaders: boolean;
} {
  return {
    requestBody: BODY_MODES[o.requestBodyMode],
    responseBody: BODY_MODES[o.responseBodyMode],
    responseHeaders: o.responseHeaderMode !== HeaderSendMode.SKIP,
  };
}

/** Headers as Envoy sends them: lower-case keys, values as raw_value bytes, pseudo-headers first. */
export function headerMap(h: Headers, pseudo: Record<string, string>) {
  const out: { key: string; rawValue: Uint8Array }[] = [];
  const push = (key: string, v: string) => out.push({ key, rawValue: Buffer.from(v, 'latin1') });
  for (const [k, v] of Object.entries(pseudo)) push(k, v);
  for (const [k, v] of Object.entries(h)) {
    if (Array.isArray(v)) for (const x of v) push(k, x);
    else push(k, v);
  }
  return { headers: out };
}

/** A HeaderMutation on a header map: set_headers, then remove_headers (never pseudo or host). */
export function applyMutation(h: Headers, m: HeaderMutation | undefined): number {
  if (!m) return 0;
  applyHeaderOptions(h, m.setHeaders);
  for (const name of m.removeHeaders) {
    const k = name.toLowerCase();
    if (!k.startsWith(':') && k !== 'host') delete h[k];
  }
  return m.setHeaders.length + m.removeHeaders.length;
}

/** The body a CommonResponse sets, if it sets one (null: cleared). */
export function bodyMutation(c: CommonResponse | undefined): Buffer | null | undefined {
  const m = c?.bodyMutation?.mutation;
  if (m?.case === 'body') return Buffer.from(m.value);
  if (m?.case === 'clearBody' && m.value) return null;
  return undefined;
}

function immediate(r: ImmediateResponse): ProxyResponse {
  const code = r.status?.code ?? 0;
  const headers: Headers = {};
  applyMutation(headers, r.headers);
  for (const k of Object.keys(headers)) if (!HEADER_NAME_PATTERN.test(k)) delete headers[k];
  const body = r.body.length > 0 ? Buffer.from(r.body) : null;
  headers['content-length'] = String(body?.length ?? 0);
  return { status: code >= 200 && code <= 599 ? code : 200, headers, body };
}
