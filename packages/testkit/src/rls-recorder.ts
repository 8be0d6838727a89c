// A rate limit v3 gRPC server (grpc-js, the generated messages) on loopback port 0 that allows every
// call and keeps each call's gRPC metadata: for tests of what gw sends a rate limit service, where the
// real envoyproxy/ratelimit (ratelimit.ts) would only say yes or no.
import { create } from '@bufbuild/protobuf';
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import {
  type RateLimitRequest,
  type RateLimitResponse,
  RateLimitResponse_Code,
  RateLimitResponseSchema,
  RateLimitService,
} from '@gw/xds-proto/envoy/service/ratelimit/v3/rls';
import { grpcMethod } from '@gw/xds-proto/grpc';

export interface RecordingRateLimitServer {
  port: number;
  /** Each call's gRPC metadata, in order. */
  metadata: Record<string, string>[];
  close(): void;
}

export async function startRecordingRateLimitServer(): Promise<RecordingRateLimitServer> {
  const metadata: Record<string, string>[] = [];
  const server = new Server();
  server.addService(
    { shouldRateLimit: grpcMethod(RateLimitService.method.shouldRateLimit) },
    {
      shouldRateLimit(
        call: ServerUnaryCall<RateLimitRequest, RateLimitResponse>,
        done: sendUnaryData<RateLimitResponse>,
      ) {
        metadata.push(
          Object.fromEntries(Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)])),
        );
        done(null, create(RateLimitResponseSchema, { overallCode: RateLimitResponse_Code.OK }));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { port, metadata, close: () => server.forceShutdown() };
}
