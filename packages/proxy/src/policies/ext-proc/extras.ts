// What an extProc stream carries besides headers and bodies, from CEL: the attributes on the first
// message of each direction (Envoy's `attributes["envoy.filters.http.ext_proc"]`), the metadata context
// on every message (`metadata_context.filter_metadata`), and gRPC metadata on the stream itself (the
// metadataContext namespace agentgateway reserves for it). A value that fails to evaluate is left out.
import type { JsonObject } from '@bufbuild/protobuf';
import type { ExtProc } from '@gw/api';
import { EXTPROC_ATTRIBUTES_NAMESPACE, EXTPROC_GRPC_METADATA_NAMESPACE, hostPort } from '@gw/api/runtime';
import { type CelContext, type CelProgram, celJsonValue, compileCel } from '../../cel/cel.ts';
import { normalizeAddress, type RequestContext } from '../../pipeline/context.ts';

type Programs = [string, CelProgram][];

const compile = (m: Record<string, string> | undefined): Programs | undefined => {
  const entries = Object.entries(m ?? {});
  return entries.length > 0 ? entries.map(([k, v]) => [k, compileCel(v)]) : undefined;
};

function evaluate(programs: Programs, cel: CelContext): JsonObject {
  const out: JsonObject = {};
  for (const [k, p] of programs) {
    const v = celJsonValue(p.eval(cel));
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * The connection's own attributes, under Envoy's names; when requestAttributes names one of them,
 * it carries this value whatever its expression says.
 */
function connectionAttributes(ctx: RequestContext): JsonObject {
  const sock = ctx.req.socket as { localAddress?: string; localPort?: number };
  const local = normalizeAddress(sock.localAddress ?? '');
  const localPort = sock.localPort ?? 0;
  return {
    'source.address': hostPort(ctx.source.address, ctx.source.port),
    'source.port': ctx.source.port,
    'destination.address': hostPort(local, localPort),
    'destination.port': localPort,
    'request.protocol': ctx.httpVersion.startsWith('2') ? 'HTTP/2' : `HTTP/${ctx.httpVersion}`,
  };
}

export interface StreamExtras {
  /** gRPC metadata sent when the stream opens. */
  grpcMetadata: Record<string, string> | undefined;
  /** Sent with every message of the request side. */
  metadataContext: Record<string, JsonObject> | undefined;
  /** Sent with the first message of the request side. */
  requestAttributes: Record<string, JsonObject> | undefined;
}

export class ExtProcExtras {
  readonly #grpc: Programs | undefined;
  readonly #context: [string, Programs][];
  readonly #request: Programs | undefined;
  readonly #response: Programs | undefined;

  constructor(config: Pick<ExtProc, 'metadataContext' | 'requestAttributes' | 'responseAttributes'>) {
    const ns = Object.entries(config.metadataContext ?? {});
    this.#grpc = compile(config.metadataContext?.[EXTPROC_GRPC_METADATA_NAMESPACE]);
    this.#context = ns
      .filter(([name]) => name !== EXTPROC_GRPC_METADATA_NAMESPACE)
      .map(([name, fields]) => [name, compile(fields) ?? []]);
    this.#request = compile(config.requestAttributes);
    this.#response = compile(config.responseAttributes);
  }

  /** Whether there is nothing to add: the common case costs no CEL context. */
  get none(): boolean {
    return !this.#grpc && this.#context.length === 0 && !this.#request && !this.#response;
  }

  /** What goes with the stream and its request side, evaluated once the request is known. */
  forRequest(ctx: RequestContext): StreamExtras {
    if (this.none)
      return { grpcMetadata: undefined, metadataContext: undefined, requestAttributes: undefined };
    const cel = ctx.celContext();
    let grpcMetadata: Record<string, string> | undefined;
    if (this.#grpc) {
      grpcMetadata = {};
      for (const [k, v] of Object.entries(evaluate(this.#grpc, cel))) {
        // Metadata is text: scalars only.
        if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
          grpcMetadata[k] = String(v);
      }
    }
    return {
      grpcMetadata,
      metadataContext: this.#metadataContext(cel),
      requestAttributes: this.#request && this.#attributes(this.#request, cel, connectionAttributes(ctx)),
    };
  }

  /**
   * What goes with the response side: its attributes on the first message, and the metadata context
   * again, evaluated with the response known.
   */
  forResponse(ctx: RequestContext): Pick<StreamExtras, 'metadataContext'> & {
    responseAttributes: Record<string, JsonObject> | undefined;
  } {
    if (this.#context.length === 0 && !this.#response)
      return { metadataContext: undefined, responseAttributes: undefined };
    const cel = ctx.celContext();
    return {
      metadataContext: this.#metadataContext(cel),
      responseAttributes: this.#response && this.#attributes(this.#response, cel, connectionAttributes(ctx)),
    };
  }

  #metadataContext(cel: CelContext): Record<string, JsonObject> | undefined {
    if (this.#context.length === 0) return undefined;
    return Object.fromEntries(this.#context.map(([name, programs]) => [name, evaluate(programs, cel)]));
  }

  #attributes(programs: Programs, cel: CelContext, own: JsonObject): Record<string, JsonObject> | undefined {
    const fields = evaluate(programs, cel);
    for (const [k] of programs) {
      const v = own[k];
      if (v !== undefined) fields[k] = v;
    }
    return Object.keys(fields).length > 0 ? { [EXTPROC_ATTRIBUTES_NAMESPACE]: fields } : undefined;
  }
}
