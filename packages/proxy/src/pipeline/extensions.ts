// The per-feature slots of a request (`ctx.ext`), a leaf module so that observers and the context
// can both name it.
import type { Secret } from '../secret.ts';

/**
 * Per-feature state of a request, one optional slot per feature. A feature adds its slot where it is
 * implemented, by declaration merging, instead of a new field here:
 *   declare module '../../pipeline/context.ts' { interface RequestExtensions { mine?: Mine } }
 * The identity slots are declared here because the CEL view (`jwt.*`, `apiKey.*`, …) reads them.
 */
export interface RequestExtensions {
  /** Claims of a validated JWT (`jwt.*` in CEL). */
  jwt?: Record<string, unknown>;
  /** The validated JWT itself, for backendAuth passthrough. */
  jwtToken?: Secret;
  /** Metadata of the matched API key (`apiKey.*` in CEL). */
  apiKey?: Record<string, unknown>;
  /**
   * The ai backend forwards this request as it came (its ai policy's routes say passthrough, detect
   * or realtime — a WebSocket to the provider's Realtime API) instead of reading it as an LLM API.
   */
  llmForward?: 'passthrough' | 'detect' | 'realtime';
  /** The models the matched API key may use (its allowedModels, compiled); unset: any. */
  allowedModels?: (model: string) => boolean;
  /** Metadata an external authorization service returned (`extauthz.*` in CEL). */
  extauthz?: Record<string, unknown>;
  /** The user a basic-auth check accepted. */
  basicUser?: string;
  /** Values transformations stored (`metadata.*` in CEL), for the policies after them. */
  metadata?: Record<string, unknown>;
}
