// A fake Amazon Bedrock runtime on loopback: Converse (JSON) and ConverseStream (the binary AWS event
// stream, frames encoded by the AWS SDK's own codec) at /model/<modelId>/converse[-stream], and
// ApplyGuardrail at /guardrail/<id>/version/<v>/apply (./bedrock-guardrail.ts), answers from
// ./fixtures/bedrock, AWS's error JSON with `x-amzn-errortype`. Every request must be signed
// with SigV4 for service `bedrock` (or carry a Bedrock API key as a bearer, when one is set): the
// fake parses the Authorization header, checks its scope and signed headers, and recomputes the
// signature with the AWS SDK's signer and the test's secret, as AWS would.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { applyGuardrail, type FakeGuardrailRules } from './bedrock-guardrail.ts';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'bedrock');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');

type Json = Record<string, unknown>;

export interface FakeBedrockRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  json: Json | undefined;
  /** The parts of the SigV4 Authorization header, when it has them. */
  sigv4?: { accessKeyId: string; date: string; region: string; service: string; signedHeaders: string[] };
}

export type FakeBedrockAnswer =
  | { error: 400 | 429 | 500 }
  /** An edge proxy's HTML page with this status, as when the service is unreachable. */
  | { html: number }
  /** The fixture's answer with another of Converse's stopReason values. */
  | { stopReason: string }
  /** A stream that ends in an exception frame after this many events. */
  | { streamExceptionAfter: number };

export interface FakeBedrockOptions {
  /** The credentials requests must be signed with. */
  accessKeyId: string;
  secretAccessKey: string;
  /** Required as `x-amz-security-token` when set. */
  sessionToken?: string;
  /** When set, `Authorization: Bearer <apiKey>` is accepted instead of a signature. */
  apiKey?: string;
  /** The region signatures must name (default us-east-1). */
  region?: string;
  chunkDelayMs?: number;
  /** Awaited before the last event of a stream is written (tests hold the stream open with it). */
  beforeLastEvent?: () => Promise<void>;
  answer?: (req: FakeBedrockRequest) => FakeBedrockAnswer | undefined;
  /** The one guardrail ApplyGuardrail knows (./bedrock-guardrail.ts says what it finds). */
  guardrail?: { identifier: string; version: string } & FakeGuardrailRules;
}

export interface FakeBedrock {
  port: number;
  origin: string;
  seen: FakeBedrockRequest[];
  /** When the last event of the latest stream was written (performance.now()). */
  lastEventAt: number | undefined;
  close(): Promise<void>;
}

/** The usage in the fixtures, for assertions. */
export const FAKE_BEDROCK_USAGE = {
  converse: { inputTokens: 25, outputTokens: 12 },
  tools: { inputTokens: 40, outputTokens: 30, cacheReadInputTokens: 64 },
  stream: { inputTokens: 14, outputTokens: 9 },
  toolsStream: { inputTokens: 60, outputTokens: 21 },
  reasoning: { inputTokens: 42, outputTokens: 58 },
  reasoningStream: { inputTokens: 42, outputTokens: 61 },
} as const;
export const FAKE_BEDROCK_REPLY = 'Hello! How can I help you today?';
/** The reasoning text and signature of the reasoning fixtures (served when `thinking` is asked for). */
export const FAKE_BEDROCK_REASONING = {
  text: 'The user greets me. A short, friendly greeting back is enough.',
  signature: 'EqQBCkgIBxABGAIiQJ7yvBSh3fM0c9eJbYwqQ2kQ',
} as const;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

/** One event of a ConverseStream answer as its binary frame. */
export function eventFrame(eventType: string, payload: Json): Uint8Array {
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: eventType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: fromUtf8(JSON.stringify(payload)),
  });
}

function exceptionFrame(type: string, message: string): Uint8Array {
  return codec.encode({
    headers: {
      ':exception-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'exception' },
    },
    body: fromUtf8(JSON.stringify({ message })),
  });
}

export async function startFakeBedrock(opts: FakeBedrockOptions): Promise<FakeBedrock> {
  const seen: FakeBedrockRequest[] = [];
  const state: StreamState = { lastEventAt: undefined };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let json: Json | undefined;
      try {
        json = JSON.parse(body.toString('utf8')) as Json;
      } catch {}
      const r: FakeBedrockRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        json,
      };
      seen.push(r);
      serve(r, req, body, res, opts, state).catch(() => res.destroy());
    });
  };
  // Bedrock speaks HTTP/1.1 and HTTP/2; the AWS SDK uses HTTP/2 (prior knowledge on http://). A
  // connection goes to one server or the other by its first bytes.
  const h1 = http.createServer(handle);
  h1.keepAliveTimeout = 30_000;
  const h2 = http2.createServer(handle as never);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.once('data', (first) => {
      socket.pause();
      socket.unshift(first);
      // Each server reads the unshifted bytes first; http2 takes over the socket's handle, while
      // the HTTP/1 server reads the paused socket once resumed.
      if (first.subarray(0, 3).toString('latin1') === 'PRI') h2.emit('connection', socket);
      else {
        h1.emit('connection', socket);
        socket.resume();
      }
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    seen,
    get lastEventAt() {
      return state.lastEventAt;
    },
    close: () =>
      new Promise<void>((done) => {
        for (const s of sockets) s.destroy();
        server.close(() => done());
      }),
  };
}

function awsError(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    'x-amzn-requestid': crypto.randomUUID(),
  });
  res.end(body);
}

const header = (req: IncomingMessage, name: string) => {
  // HTTP/2 carries the host as :authority.
  const v = req.headers[name] ?? (name === 'host' ? req.headers[':authority'] : undefined);
  return Array.isArray(v) ? v.join(',') : v;
};

/** Why the request's credential is refused; undefined when it is good. */
async function refusal(r: FakeBedrockRequest, req: IncomingMessage, body: Buffer, opts: FakeBedrockOptions) {
  const auth = header(req, 'authorization') ?? '';
  if (opts.apiKey !== undefined && auth === `Bearer ${opts.apiKey}`) return undefined;
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;:-]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (!m) return 'missing or malformed SigV4 Authorization header';
  const [, accessKeyId, date, region, service, signed, signature] = m as unknown as string[];
  const signedHeaders = (signed as string).split(';');
  r.sigv4 = {
    accessKeyId: accessKeyId as string,
    date: date as string,
    region: region as string,
    service: service as string,
    signedHeaders,
  };
  if (accessKeyId !== opts.accessKeyId) return `unknown access key ${accessKeyId}`;
  if (service !== 'bedrock') return `credential scope names service ${service}, not bedrock`;
  if (region !== (opts.region ?? 'us-east-1')) return `credential scope names region ${region}`;
  // Over HTTP/2 the AWS SDK signs :authority in place of host.
  if (!signedHeaders.includes('host') && !signedHeaders.includes(':authority'))
    return 'SignedHeaders lacks host';
  if (!signedHeaders.includes('x-amz-date')) return 'SignedHeaders lacks x-amz-date';
  const amzDate = header(req, 'x-amz-date') ?? '';
  const d = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!d || !amzDate.startsWith(date as string)) return `x-amz-date ${amzDate} does not match the scope`;
  const when = new Date(Date.UTC(+d[1]!, +d[2]! - 1, +d[3]!, +d[4]!, +d[5]!, +d[6]!));
  if (Math.abs(when.getTime() - Date.now()) > 5 * 60_000) return 'signature expired';
  const sha = header(req, 'x-amz-content-sha256');
  if (sha !== undefined && sha !== createHash('sha256').update(body).digest('hex'))
    return 'x-amz-content-sha256 does not match the body';
  if (opts.sessionToken !== undefined && header(req, 'x-amz-security-token') !== opts.sessionToken)
    return 'missing or wrong x-amz-security-token';
  const headers: Record<string, string> = {};
  for (const h of signedHeaders) {
    const v = header(req, h);
    if (v === undefined) return `signed header ${h} was not sent`;
    headers[h] = v;
  }
  const url = new URL(r.url, 'http://x');
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const signer = new SignatureV4({
    credentials: {
      accessKeyId: opts.accessKeyId,
      secretAccessKey: opts.secretAccessKey,
      ...(opts.sessionToken !== undefined ? { sessionToken: opts.sessionToken } : {}),
    },
    region: region as string,
    service: 'bedrock',
    sha256: Hash.bind(null, 'sha256'),
  });
  const expected = await signer.sign(
    {
      method: r.method,
      protocol: 'https:',
      hostname: headers.host ?? '',
      // As sent (already escaped once): the signer escapes it again, as AWS does for non-S3 services.
      path: r.url.split('?', 1)[0] ?? '',
      query,
      headers,
      body,
    },
    { signingDate: when },
  );
  const got = /Signature=([0-9a-f]{64})/.exec(String(expected.headers.authorization))?.[1];
  return got === signature ? undefined : 'signature does not match';
}

interface StreamState {
  lastEventAt: number | undefined;
}

async function serve(
  r: FakeBedrockRequest,
  req: IncomingMessage,
  body: Buffer,
  res: ServerResponse,
  opts: FakeBedrockOptions,
  state: StreamState,
): Promise<void> {
  const why = await refusal(r, req, body, opts);
  if (why !== undefined) {
    const type = why.startsWith('signature does not')
      ? 'InvalidSignatureException'
      : 'UnrecognizedClientException';
    awsError(
      res,
      403,
      type,
      type === 'InvalidSignatureException'
        ? fixture('error-signature.json')
        : JSON.stringify({ message: why }),
    );
    return;
  }
  const apply = /^\/guardrail\/([^/]+)\/version\/([^/]+)\/apply$/.exec(r.url.split('?', 1)[0] ?? '');
  const m = /^\/model\/([^/]+)\/(converse|converse-stream)$/.exec(r.url.split('?', 1)[0] ?? '');
  if (req.method !== 'POST' || !(m || apply)) {
    awsError(res, 404, 'UnknownOperationException', JSON.stringify({ message: `no operation at ${r.url}` }));
    return;
  }
  const special = opts.answer?.(r);
  if (special && 'html' in special) {
    const page = readFileSync(join(FIXTURES, '..', 'openai', 'html-502.html'));
    res.writeHead(special.html, { 'content-type': 'text/html', 'content-length': page.length });
    res.end(page);
    return;
  }
  if (special && 'error' in special) {
    if (special.error === 500)
      awsError(res, 500, 'InternalServerException', JSON.stringify({ message: 'Internal server error' }));
    else if (special.error === 429)
      awsError(res, 429, 'ThrottlingException', fixture('error-throttling.json'));
    else awsError(res, 400, 'ValidationException', fixture('error-validation.json'));
    return;
  }
  if (apply) {
    const g = opts.guardrail;
    const [id, version] = [decodeURIComponent(apply[1] ?? ''), decodeURIComponent(apply[2] ?? '')];
    if (!g || g.identifier !== id || g.version !== version) {
      awsError(
        res,
        404,
        'ResourceNotFoundException',
        JSON.stringify({ message: `The guardrail ${id} version ${version} does not exist.` }),
      );
      return;
    }
    const answer = applyGuardrail(r.json, g);
    if (typeof answer === 'string')
      awsError(res, 400, 'ValidationException', JSON.stringify({ message: answer }));
    else {
      const out = JSON.stringify(answer);
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(out),
        'x-amzn-requestid': crypto.randomUUID(),
      });
      res.end(out);
    }
    return;
  }
  if (!m) return;
  if (!r.json || !Array.isArray(r.json.messages)) {
    awsError(res, 400, 'ValidationException', JSON.stringify({ message: 'Malformed input request' }));
    return;
  }
  const tools = wantsToolUse(r.json);
  const reasoning = !tools && obj(r.json.additionalModelRequestFields)?.thinking !== undefined;
  const name = tools ? 'converse-tools' : reasoning ? 'converse-reasoning' : 'converse';
  const stop = special && 'stopReason' in special ? special.stopReason : undefined;
  if (m[2] === 'converse') {
    const answer = JSON.parse(fixture(`${name}.json`)) as Json;
    if (stop !== undefined) answer.stopReason = stop;
    const out = JSON.stringify(answer);
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(out),
      'x-amzn-requestid': crypto.randomUUID(),
    });
    res.end(out);
    return;
  }
  const events = JSON.parse(fixture(`${name}-stream.json`)) as [string, Json][];
  res.writeHead(200, {
    'content-type': 'application/vnd.amazon.eventstream',
    'x-amzn-requestid': crypto.randomUUID(),
  });
  const cut = special && 'streamExceptionAfter' in special ? special.streamExceptionAfter : undefined;
  for (const [i, [type, payload]] of events.entries()) {
    if (cut !== undefined && i === cut) {
      res.end(exceptionFrame('throttlingException', 'Too many tokens, please wait before trying again.'));
      return;
    }
    const lastOne = i === events.length - 1;
    if (lastOne && opts.beforeLastEvent) await opts.beforeLastEvent();
    const frame = eventFrame(
      type,
      type === 'messageStop' && stop ? { ...payload, stopReason: stop } : payload,
    );
    if (lastOne) state.lastEventAt = performance.now();
    // Each frame in two writes, so a reader must reassemble frames split across chunks.
    const half = frame.length >> 1;
    res.write(frame.subarray(0, half));
    await pause(opts.chunkDelayMs ?? 0);
    res.write(frame.subarray(half));
    await pause(opts.chunkDelayMs ?? 0);
  }
  res.end();
}

const pause = (ms: number) =>
  new Promise<void>((done) => (ms > 0 ? setTimeout(done, ms) : setImmediate(done)));

const obj = (v: unknown): Json | undefined => (v && typeof v === 'object' ? (v as Json) : undefined);

/** Tools declared and no tool result yet: the fixtures' answer is a tool call. */
function wantsToolUse(body: Json): boolean {
  if (!body.toolConfig) return false;
  const messages = body.messages as { content?: Json[] }[];
  return !messages.some((m) => m.content?.some((b) => b.toolResult !== undefined));
}
