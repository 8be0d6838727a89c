// One Envoy ext_proc v3 Process stream per request, in the order Envoy's ext_proc filter uses it:
// request headers, request body, response headers, response body, each sent once and answered once.
// Loaded lazily (index.ts): grpc-js and the generated messages come in with the first config that
// has an extProc.
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { Client, type ClientDuplexStream, credentials, Metadata } from '@grpc/grpc-js';
import { HEADER_NAME_PATTERN } from '@gw/api/runtime';
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

// One channel per processing service, shared by every route and kept across reloads (as ext_authz).
const clients = new Map<string, Client>();
function clientFor(host: string): Client {
  let c = clients.get(host);
  if (!c) {
    c = new Client(host, credentials.createInsecure(), {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
    clients.set(host, c);
  }
  return c;
}

export type Phase = 'requestHeaders' | 'requestBody' | 'responseHeaders' | 'responseBody';

/** What the service answered to one message. */
export type Answer =
  | { kind: 'continue'; common: CommonResponse | undefined }
  /** The service closed the stream without answering: nothing more is processed (as Envoy). */
  | { kind: 'done' }
  | { kind: 'immediate'; response: ProxyResponse };

export class ExtProcFailure extends Error {}

type RequestInit = NonNullable<MessageInitShape<typeof ProcessingRequestSchema>['request']>;

/** A Process stream: `exchange` sends one message and waits for its answer. */
export class ProcessStream {
  readonly #call: ClientDuplexStream<ProcessingRequest, ProcessingResponse>;
  readonly #timeoutMs: number;
  #waiting: { resolve: (r: ProcessingResponse | null) => void; reject: (e: Error) => void } | undefined;
  #error: Error | undefined;
  #ended = false;

  constructor(host: string, timeoutMs: number, signal: AbortSignal) {
    this.#timeoutMs = timeoutMs;
    const call = clientFor(host).makeBidiStreamRequest(
      PROCESS.path,
      PROCESS.requestSerialize,
      PROCESS.responseDeserialize,
      new Metadata(),
      {},
    );
    this.#call = call;
    call.on('data', (m: ProcessingResponse) => {
      const w = this.#waiting;
      this.#waiting = undefined;
      if (w) w.resolve(m);
      else this.#fail(new ExtProcFailure('an answer nothing was sent for'));
    });
    call.on('error', (e: Error & { details?: string }) =>
      this.#fail(new ExtProcFailure(e.details || e.message)),
    );
    call.on('end', () => {
      this.#ended = true;
      const w = this.#waiting;
      this.#waiting = undefined;
      w?.resolve(null);
    });
    const abort = () => this.close();
    signal.addEventListener('abort', abort, { once: true });
    call.on('close', () => signal.removeEventListener('abort', abort));
  }

  #fail(e: Error): void {
    this.#error ??= e;
    const w = this.#waiting;
    this.#waiting = undefined;
    w?.reject(e);
  }

  async exchange(phase: Phase, req: RequestInit): Promise<Answer> {
    if (this.#error) throw this.#error;
    if (this.#ended) return { kind: 'done' };
    const answer = new Promise<ProcessingResponse | null>((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ExtProcFailure(`no answer to ${phase} within ${this.#timeoutMs}ms`)),
        this.#timeoutMs,
      );
    });
    this.#call.write(create(ProcessingRequestSchema, { request: req }));
    let res: ProcessingResponse | null;
    try {
      res = await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
      this.#waiting = undefined;
    }
    if (res === null) return { kind: 'done' };
    const r = res.response;
    if (r.case === 'immediateResponse') return { kind: 'immediate', response: immediate(r.value) };
    if (r.case !== phase) throw new ExtProcFailure(`answered ${r.case ?? 'nothing'} to ${phase}`);
    return { kind: 'continue', common: r.value.response };
  }

  close(): void {
    if (!this.#ended) this.#call.cancel();
    this.#ended = true;
  }

  /** Ends our side; the service sees the end of the stream. */
  end(): void {
    this.#call.end();
    this.#ended = true;
  }
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
