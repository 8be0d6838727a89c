// The one hand-written module here: a grpc-js method definition derived from a generated protobuf-es
// method descriptor (path, streaming flags, serializers), so the controller and the proxy take the
// same definitions from the generated code instead of each writing them out.
import {
  type DescMessage,
  type DescMethodStreaming,
  type DescMethodUnary,
  fromBinary,
  type MessageShape,
  toBinary,
} from '@bufbuild/protobuf';

/** A grpc-js `MethodDefinition` (structurally: this package does not depend on grpc-js). */
export function grpcMethod<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O> | DescMethodStreaming<I, O>,
) {
  return {
    path: `/${method.parent.typeName}/${method.name}`,
    originalName: method.name,
    requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
    responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
    requestSerialize: (m: MessageShape<I>): Buffer => Buffer.from(toBinary(method.input, m)),
    requestDeserialize: (b: Buffer): MessageShape<I> => fromBinary(method.input, b),
    responseSerialize: (m: MessageShape<O>): Buffer => Buffer.from(toBinary(method.output, m)),
    responseDeserialize: (b: Buffer): MessageShape<O> => fromBinary(method.output, b),
  };
}

/** The `Any` type URL of a message, e.g. `type.googleapis.com/gw.resource.v1.Resource`. */
export const typeUrlOf = (schema: DescMessage): string => `type.googleapis.com/${schema.typeName}`;
