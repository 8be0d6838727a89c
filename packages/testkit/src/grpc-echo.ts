// A one-method gRPC service without a .proto: /test.Echo/Say, its messages raw bytes. Tests build
// grpc-js clients (makeGenericClientConstructor) and servers (addService) of it.
import type { Metadata, ServiceError } from '@grpc/grpc-js';

const raw = (b: Buffer) => b;

export const ECHO_SERVICE = {
  say: {
    path: '/test.Echo/Say',
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
};

/** The client method of ECHO_SERVICE (metadata optional, as grpc-js overloads it). */
export type EchoSay = {
  (req: Buffer, md: Metadata, cb: (err: ServiceError | null, res?: Buffer) => void): void;
  (req: Buffer, cb: (err: ServiceError | null, res?: Buffer) => void): void;
};
