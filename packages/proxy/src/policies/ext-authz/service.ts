// The Envoy ext_authz v3 gRPC method (`envoy.service.auth.v3.Authorization/Check`) for the gateway's
// grpc-js client, derived from the generated descriptors (test servers derive theirs the same way).
import { Authorization } from '@gw/xds-proto/envoy/service/auth/v3/external_auth';
import { grpcMethod } from '@gw/xds-proto/grpc';

const check = grpcMethod(Authorization.method.check);

export const CHECK_PATH = check.path;
export const serializeCheckRequest = check.requestSerialize;
export const deserializeCheckRequest = check.requestDeserialize;
export const serializeCheckResponse = check.responseSerialize;
export const deserializeCheckResponse = check.responseDeserialize;
