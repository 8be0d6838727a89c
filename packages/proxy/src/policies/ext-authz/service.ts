// The Envoy ext_authz v3 gRPC service (`envoy.service.auth.v3.Authorization/Check`) as a grpc-js
// service definition over the protobuf-es messages: the gateway's client and test servers share it.
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import type { ServiceDefinition } from '@grpc/grpc-js';
import {
  Authorization,
  type CheckRequest,
  CheckRequestSchema,
  type CheckResponse,
  CheckResponseSchema,
} from '@gw/xds-proto/envoy/service/auth/v3/external_auth';

export const CHECK_PATH = `/${Authorization.typeName}/${Authorization.method.check.name}`;

export const serializeCheckRequest = (m: CheckRequest): Buffer =>
  Buffer.from(toBinary(CheckRequestSchema, m));
export const deserializeCheckRequest = (b: Buffer): CheckRequest => fromBinary(CheckRequestSchema, b);
export const serializeCheckResponse = (m: CheckResponse): Buffer =>
  Buffer.from(toBinary(CheckResponseSchema, m));
export const deserializeCheckResponse = (b: Buffer): CheckResponse => fromBinary(CheckResponseSchema, b);

export const AuthorizationService = {
  check: {
    path: CHECK_PATH,
    originalName: 'Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: serializeCheckRequest,
    requestDeserialize: deserializeCheckRequest,
    responseSerialize: serializeCheckResponse,
    responseDeserialize: deserializeCheckResponse,
  },
} satisfies ServiceDefinition;
