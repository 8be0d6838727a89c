// `@gw/testkit/otlp-receiver`: an OTLP trace and log receiver on port 0, over HTTP (protobuf, POST
// /v1/traces and /v1/logs) and gRPC (TraceService/Export, LogsService/Export), that decodes what it
// gets with the protobuf code OpenTelemetry's otlp-transformer generated from the official
// opentelemetry-proto definitions. With `tls`, both listen over TLS (https), and with `tls.clientCa`
// they take only clients with a certificate from that CA.

import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';

const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: generated protobufjs code without types for this path
const root: any = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const collector = root.opentelemetry.proto.collector.trace.v1;
const logsCollector = root.opentelemetry.proto.collector.logs.v1;

export type AttributeValue = string | number | boolean | AttributeValue[] | undefined;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** Attributes of the resource that sent it (service.name…). */
  resource: Record<string, AttributeValue>;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  startNs: bigint;
  endNs: bigint;
  traceState: string;
}

export interface ReceivedLog {
  timeNs: bigint;
  severityNumber: number;
  severityText: string;
  body: AttributeValue;
  attributes: Record<string, AttributeValue>;
  resource: Record<string, AttributeValue>;
  /** The instrumentation scope's name. */
  scope: string;
}

export interface OtlpReceiver {
  /** http(s)://127.0.0.1:port: the OTLP/HTTP endpoint (POST /v1/traces). */
  httpUrl: string;
  /** http(s)://127.0.0.1:port: the OTLP/gRPC endpoint. */
  grpcUrl: string;
  spans: ReceivedSpan[];
  logs: ReceivedLog[];
  /** Headers of each HTTP export, and metadata of each gRPC one. */
  exportHeaders: Record<string, string | string[] | undefined>[];
  /** Resolves once at least `n` spans have arrived (rejects after `ms`). */
  waitFor(n: number, ms?: number): Promise<ReceivedSpan[]>;
  /** Resolves once at least `n` log records have arrived (rejects after `ms`). */
  waitForLogs(n: number, ms?: number): Promise<ReceivedLog[]>;
  close(): Promise<void>;
}

/** The (empty) answer to an export of `kind`. */
const answerOf = (kind: 'traces' | 'logs'): Uint8Array =>
  (kind === 'logs' ? logsCollector.ExportLogsServiceResponse : collector.ExportTraceServiceResponse)
    .encode({})
    .finish();

export interface OtlpReceiverOptions {
  /** Serve over TLS with this certificate; with clientCa, a client certificate from it is required. */
  tls?: { cert: string; key: string; clientCa?: string };
}

export async function startOtlpReceiver(opts: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const logs: ReceivedLog[] = [];
  const exportHeaders: OtlpReceiver['exportHeaders'] = [];
  const waiters: (() => void)[] = [];
  const received = (
    buf: Uint8Array,
    headers: Record<string, string | string[] | undefined>,
    kind: 'traces' | 'logs' = 'traces',
  ) => {
    exportHeaders.push(headers);
    if (kind === 'logs') logs.push(...decodeLogs(buf));
    else spans.push(...decode(buf));
    for (const w of waiters.splice(0)) w();
  };
  const waitUntil =
    <T>(list: T[], what: string) =>
    (n: number, ms = 10_000): Promise<T[]> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${list.length} ${what} after ${ms} ms, wanted ${n}`)),
          ms,
        );
        const check = () => {
          if (list.length >= n) {
            clearTimeout(timer);
            resolve(list);
          } else waiters.push(check);
        };
        check();
      });

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const kind = req.url === '/v1/traces' ? 'traces' : req.url === '/v1/logs' ? 'logs' : undefined;
      if (req.method !== 'POST' || kind === undefined) {
        res.writeHead(404).end();
        return;
      }
      try {
        received(Buffer.concat(chunks), headersOf(req.headers), kind);
      } catch (err) {
        res.writeHead(400).end(String(err));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(answerOf(kind)));
    });
  };
  const t = opts.tls;
  const http: Server = t
    ? createHttpsServer(
        {
          cert: t.cert,
          key: t.key,
          ...(t.clientCa ? { ca: t.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
        },
        onRequest,
      )
    : createServer(onRequest);
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const scheme = t ? 'https' : 'http';

  const server = new grpc.Server();
  for (const kind of ['traces', 'logs'] as const)
    server.addService(
      {
        Export: {
          path: `/opentelemetry.proto.collector.${kind === 'logs' ? 'logs.v1.LogsService' : 'trace.v1.TraceService'}/Export`,
          requestStream: false,
          responseStream: false,
          requestSerialize: (v: Buffer) => v,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (v: Uint8Array) => Buffer.from(v),
          responseDeserialize: (b: Buffer) => b,
        },
      },
      {
        Export: (call: grpc.ServerUnaryCall<Buffer, Uint8Array>, done: grpc.sendUnaryData<Uint8Array>) => {
          received(call.request, call.metadata.getMap() as Record<string, string>, kind);
          done(null, answerOf(kind));
        },
      },
    );
  const grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      '127.0.0.1:0',
      t
        ? grpc.ServerCredentials.createSsl(
            t.clientCa ? Buffer.from(t.clientCa) : null,
            [{ cert_chain: Buffer.from(t.cert), private_key: Buffer.from(t.key) }],
            Boolean(t.clientCa),
          )
        : grpc.ServerCredentials.createInsecure(),
      (err, port) => (err ? reject(err) : resolve(port)),
    ),
  );

  return {
    httpUrl: `${scheme}://127.0.0.1:${(http.address() as AddressInfo).port}`,
    grpcUrl: `${scheme}://127.0.0.1:${grpcPort}`,
    spans,
    logs,
    exportHeaders,
    waitFor: waitUntil(spans, 'spans'),
    waitForLogs: waitUntil(logs, 'log records'),
    close: async () => {
      await new Promise<void>((r) => http.close(() => r()));
      server.forceShutdown();
    },
  };
}

function headersOf(h: IncomingHttpHeaders): Record<string, string | string[] | undefined> {
  return { ...h };
}

const hex = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('hex') : '');

// biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
function value(v: any): AttributeValue {
  if (!v) return undefined;
  if (v.stringValue != null) return v.stringValue;
  if (v.boolValue != null) return v.boolValue;
  if (v.intValue != null) return Number(v.intValue.toString());
  if (v.doubleValue != null) return v.doubleValue;
  if (v.arrayValue != null) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
function attrs(list: any[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list ?? []) out[kv.key] = value(kv.value);
  return out;
}

function decode(buf: Uint8Array): ReceivedSpan[] {
  const msg = collector.ExportTraceServiceRequest.decode(buf);
  const out: ReceivedSpan[] = [];
  for (const rs of msg.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name,
          kind: s.kind,
          attributes: attrs(s.attributes),
          resource,
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
          startNs: BigInt(s.startTimeUnixNano?.toString() ?? '0'),
          endNs: BigInt(s.endTimeUnixNano?.toString() ?? '0'),
          traceState: s.traceState ?? '',
        });
  }
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
function anyValue(v: any): AttributeValue {
  if (v?.kvlistValue != null) return JSON.stringify(attrs(v.kvlistValue.values));
  return value(v);
}

function decodeLogs(buf: Uint8Array): ReceivedLog[] {
  const msg = logsCollector.ExportLogsServiceRequest.decode(buf);
  const out: ReceivedLog[] = [];
  for (const rl of msg.resourceLogs ?? []) {
    const resource = attrs(rl.resource?.attributes);
    for (const sl of rl.scopeLogs ?? [])
      for (const l of sl.logRecords ?? [])
        out.push({
          timeNs: BigInt(l.timeUnixNano?.toString() ?? '0'),
          severityNumber: l.severityNumber ?? 0,
          severityText: l.severityText ?? '',
          body: anyValue(l.body),
          attributes: attrs(l.attributes),
          resource,
          scope: sl.scope?.name ?? '',
        });
  }
  return out;
}
