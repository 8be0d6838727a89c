// The Envoy ext_proc v3 gRPC method (`envoy.service.ext_proc.v3.ExternalProcessor/Process`, a
// bidirectional stream) for the gateway's grpc-js client, derived from the generated descriptors.
import { ExternalProcessor } from '@gw/xds-proto/envoy/service/ext_proc/v3/external_processor';
import { grpcMethod } from '@gw/xds-proto/grpc';

export const PROCESS = grpcMethod(ExternalProcessor.method.process);
