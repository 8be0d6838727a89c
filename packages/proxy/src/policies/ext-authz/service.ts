// The Envoy ext_authz v3 gRPC service (`envoy.service.auth.v3.Authorization/Check`) as a grpc-js
// service definition over the protobuf-es messages: the gateway's client and test servers share it.
import type { ServiceDefinition } from '@grpc/grpc-js';
import { Authorization } from '@gw/xds-proto/envoy/service/auth/v3/external_auth';
import { grpcMethod } from '@gw/xds-proto/grpc';

const check = grpcMethod(Authorization.method.check);

export const CHECK_PATH = check.path;
export const serializeCheckRequest = check.requestSerialize;
export const deserializeCheckRequest = check.requestDeserialize;
export const serializeCheckResponse = check.responseSerialize;
export const deserializeCheckResponse = check.responseDeserialize;

export const AuthorizationService = { check } satisfies ServiceDefinition;
