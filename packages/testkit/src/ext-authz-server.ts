// A real Envoy ext_authz v3 gRPC server (grpc-js, the generated protobuf-es messages) on loopback
// port 0, plaintext or TLS (optionally requiring a client certificate). Each Check is answered by the
// test's function; every request is kept for asserts. The service definition comes from the generated
// descriptors, the same source the proxy's client uses.
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import {
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceDefinition,
  type sendUnaryData,
} from '@grpc/grpc-js';
import {
  Authorization,
  type CheckRequest,
  type CheckResponse,
  CheckResponseSchema,
} from '@gw/xds-proto/envoy/service/auth/v3/external_auth';
import { grpcMethod } from '@gw/xds-proto/grpc';

const AuthorizationService = { check: grpcMethod(Authorization.method.check) } satisfies ServiceDefinition;

export type CheckAnswer = MessageInitShape<typeof CheckResponseSchema>;

export interface AuthzServer {
  port: number;
  /** `127.0.0.1:<port>`, for `extAuthz.grpc.host`. */
  host: string;
  /** Check requests received, newest last. */
  seen: CheckRequest[];
  /** The gRPC metadata of each, in the same order. */
  metadata: Record<string, string>[];
  /** The :authority of each, in the same order. */
  authorities: string[];
  close(): Promise<void>;
}

export interface AuthzServerTls {
  cert: string;
  key: string;
  /** With `ca`: client certificates signed by it are required (mTLS). */
  ca?: string;
}

export async function startAuthzServer(
  decide: (req: CheckRequest) => CheckAnswer | Promise<CheckAnswer>,
  opts: { tls?: AuthzServerTls } = {},
): Promise<AuthzServer> {
  const seen: CheckRequest[] = [];
  const metadata: Record<string, string>[] = [];
  const authorities: string[] = [];
  const server = new Server();
  server.addService(AuthorizationService, {
    check(call: ServerUnaryCall<CheckRequest, CheckResponse>, done: sendUnaryData<CheckResponse>) {
      seen.push(call.request);
      authorities.push(call.getHost());
      metadata.push(
        Object.fromEntries(Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)])),
      );
      Promise.resolve(decide(call.request)).then(
        (answer) => done(null, create(CheckResponseSchema, answer)),
        (err: Error) => done(err),
      );
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', serverCredentials(opts.tls), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port,
    host: `127.0.0.1:${port}`,
    seen,
    metadata,
    authorities,
    close: async () => {
      server.forceShutdown();
    },
  };
}

function serverCredentials(tls: AuthzServerTls | undefined): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(
    tls.ca ? Buffer.from(tls.ca) : null,
    [{ private_key: Buffer.from(tls.key), cert_chain: Buffer.from(tls.cert) }],
    tls.ca !== undefined,
  );
}
