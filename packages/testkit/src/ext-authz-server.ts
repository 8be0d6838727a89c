// A real Envoy ext_authz v3 gRPC server (grpc-js, the generated protobuf-es messages) on loopback
// port 0. Each Check is answered by the test's function; every request is kept for asserts. The
// service definition comes from the generated descriptors, the same source the proxy's client uses.
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
  close(): Promise<void>;
}

export async function startAuthzServer(
  decide: (req: CheckRequest) => CheckAnswer | Promise<CheckAnswer>,
): Promise<AuthzServer> {
  const seen: CheckRequest[] = [];
  const server = new Server();
  server.addService(AuthorizationService, {
    check(call: ServerUnaryCall<CheckRequest, CheckResponse>, done: sendUnaryData<CheckResponse>) {
      seen.push(call.request);
      Promise.resolve(decide(call.request)).then(
        (answer) => done(null, create(CheckResponseSchema, answer)),
        (err: Error) => done(err),
      );
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port,
    host: `127.0.0.1:${port}`,
    seen,
    close: async () => {
      server.forceShutdown();
    },
  };
}
