// A real Envoy ext_proc v3 gRPC server (grpc-js, the generated protobuf-es messages) on loopback port
// 0. Each ProcessingRequest of a Process stream is answered by the test's function: with one message,
// several (a list: e.g. FULL_DUPLEX_STREAMED body chunks), or none (undefined or []); a stream's
// answers go out in the order of its requests, even when the function takes its time. Every stream's
// requests and gRPC metadata are kept for asserts.
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { Server, ServerCredentials, type ServerDuplexStream, type ServiceDefinition } from '@grpc/grpc-js';
import {
  ExternalProcessor,
  type ProcessingRequest,
  type ProcessingResponse,
  ProcessingResponseSchema,
} from '@gw/xds-proto/envoy/service/ext_proc/v3/external_processor';
import { grpcMethod } from '@gw/xds-proto/grpc';

const ExternalProcessorService = {
  process: grpcMethod(ExternalProcessor.method.process),
} satisfies ServiceDefinition;

export type ProcessingAnswer = MessageInitShape<typeof ProcessingResponseSchema>;

/** A processor's answer to the request or response headers that sets one header and nothing else. */
export function setHeaderAnswer(
  phase: 'requestHeaders' | 'responseHeaders',
  name: string,
  value: string,
): ProcessingAnswer {
  const response = {
    headerMutation: { setHeaders: [{ header: { key: name, rawValue: Buffer.from(value) } }] },
  };
  return phase === 'requestHeaders'
    ? { response: { case: 'requestHeaders', value: { response } } }
    : { response: { case: 'responseHeaders', value: { response } } };
}

/**
 * setHeaderAnswer for the request headers (the answer most tests need); undefined for every other
 * message, which then gets no answer.
 */
export function setRequestHeader(
  req: ProcessingRequest,
  name: string,
  value: string,
): ProcessingAnswer | undefined {
  return req.request.case === 'requestHeaders' ? setHeaderAnswer('requestHeaders', name, value) : undefined;
}

export interface ExtProcServer {
  port: number;
  /** `127.0.0.1:<port>`, for `extProc.host`. */
  host: string;
  /** Each stream's requests, in order; newest stream last. */
  streams: ProcessingRequest[][];
  /** Each stream's gRPC metadata as it opened (text values), in the order of `streams`. */
  metadata: Record<string, string>[];
  /** Each stream's client certificate subject CN (TLS with `clientCa`), in the order of `streams`. */
  clientCerts: (string | undefined)[];
  close(): Promise<void>;
}

type Answers = ProcessingAnswer | ProcessingAnswer[] | undefined;

/** An answer function that lets the request and response headers pass unchanged (and nothing else). */
export function passHeaders(req: ProcessingRequest): Answers {
  if (req.request.case === 'requestHeaders')
    return { response: { case: 'requestHeaders', value: { response: {} } } };
  if (req.request.case === 'responseHeaders')
    return { response: { case: 'responseHeaders', value: { response: {} } } };
  return undefined;
}

/** TLS for the server: its certificate and key (PEM); with `clientCa`, a client certificate signed by it is required. */
export interface ExtProcServerTls {
  cert: string;
  key: string;
  clientCa?: string;
}

/** `answer` gets each request and the ones before it on the same stream. */
export async function startExtProcServer(
  answer: (req: ProcessingRequest, earlier: readonly ProcessingRequest[]) => Answers | Promise<Answers>,
  tls?: ExtProcServerTls,
  port = 0,
): Promise<ExtProcServer> {
  const streams: ProcessingRequest[][] = [];
  const metadata: Record<string, string>[] = [];
  const clientCerts: (string | undefined)[] = [];
  const server = new Server();
  server.addService(ExternalProcessorService, {
    process(call: ServerDuplexStream<ProcessingRequest, ProcessingResponse>) {
      const seen: ProcessingRequest[] = [];
      streams.push(seen);
      const md: Record<string, string> = {};
      for (const [k, v] of Object.entries(call.metadata.getMap())) md[k] = String(v);
      metadata.push(md);
      const peer = call.getAuthContext().sslPeerCertificate;
      clientCerts.push(peer?.subject?.CN as string | undefined);
      let order: Promise<unknown> = Promise.resolve();
      call.on('data', (req: ProcessingRequest) => {
        const earlier = [...seen];
        seen.push(req);
        const pending = Promise.resolve(answer(req, earlier));
        order = order.then(() =>
          pending.then(
            (a) => {
              for (const x of a === undefined ? [] : Array.isArray(a) ? a : [a])
                call.write(create(ProcessingResponseSchema, x));
            },
            (err: Error) => call.destroy(err),
          ),
        );
      });
      call.on('end', () => void order.then(() => call.end()));
      call.on('error', () => {});
    },
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, credentialsOf(tls), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port: bound,
    host: `127.0.0.1:${bound}`,
    streams,
    metadata,
    clientCerts,
    close: async () => {
      server.forceShutdown();
    },
  };
}

function credentialsOf(tls: ExtProcServerTls | undefined): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(
    tls.clientCa ? Buffer.from(tls.clientCa) : null,
    [{ cert_chain: Buffer.from(tls.cert), private_key: Buffer.from(tls.key) }],
    tls.clientCa !== undefined,
  );
}
