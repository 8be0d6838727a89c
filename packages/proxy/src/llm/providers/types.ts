// What an LLM provider module provides: where its API lives, which wire formats it speaks, the path
// of each operation and how a request carries its credential. Converting bodies between formats is
// not a provider's job: that is a format pair's (llm/formats/).
import type { LlmFormat, LlmProviderIR, LlmProviderKind } from '../../config/ir.ts';
import type { Headers } from '../../pipeline/context.ts';

export interface ProviderEndpoint {
  host: string;
  port: number;
  tls: boolean;
}

/** An operation's path: `prefix` is what `pathPrefix` replaces, `path` the operation, then the query. */
export interface ProviderPath {
  prefix: string;
  path: string;
  /** With its leading `?`, or empty. */
  query: string;
}

/** The request to the provider, final but for credentials: what `authorize` may read and change. */
export interface ProviderRequest {
  method: string;
  /** Path and query. */
  path: string;
  /** Lower-case names; `host` is set. */
  headers: Headers;
  body: Buffer;
}

export interface ProviderModule<K extends LlmProviderKind> {
  kind: K;
  /** The formats the provider's endpoint speaks, preferred first. */
  formats(p: LlmProviderIR<K>): readonly LlmFormat[];
  /** The endpoint when the config sets none (host/baseUrl overrides win). */
  endpoint(p: LlmProviderIR<K>): ProviderEndpoint;
  /**
   * The path of an operation in one of `formats(p)`, for `model` (the model sent, after overrides:
   * some providers put it in the path). `path`/`pathPrefix` overrides are applied after this.
   */
  path(p: LlmProviderIR<K>, format: LlmFormat, req: { model: string; stream: boolean }): ProviderPath;
  /**
   * Whether the request body keeps its `model` field (a deployment path that names the model may
   * make it redundant); default true.
   */
  bodyHasModel?(p: LlmProviderIR<K>, format: LlmFormat): boolean;
  /**
   * Fields the provider's settings write into the request body once it is in `format` (replacing the
   * client's), before the model's final transformations: OpenAI's inline moderation.
   */
  bodyFields?(p: LlmProviderIR<K>, format: LlmFormat): Readonly<Record<string, unknown>> | undefined;
  /**
   * Adds the credential to the request: `key` is the configured apiKey (revealed), or undefined when
   * none is configured and the client's own credential headers pass through unchanged. May be async
   * (a signer, a token exchange) and may read the final body (SigV4 signs it). `gatewayAuth`: the
   * model's `auth` (a backendAuth form) writes the credential after this, and the client's have been
   * dropped: the provider looks for none of its own (the AWS chain, Google's ADC).
   */
  authorize(
    p: LlmProviderIR<K>,
    req: ProviderRequest,
    key: string | undefined,
    gatewayAuth?: boolean,
  ): void | Promise<void>;
}
