// What mapping a policy section gives: the standalone policies, what could not be translated (the
// policy attaches without it) and what the checks refused (the policy does not attach).
import type { Problem } from '@gw/api';

export interface PolicyResult<T> {
  policies: T;
  /** What could not be translated, each prefixed with its field path; empty when all of it was. */
  problems: string[];
  /** What @gw/api's checks refused, at CRD field paths (`spec.traffic.…`); empty when valid. */
  invalid: Problem[];
}

export interface BackendPolicyResult<T> extends PolicyResult<T> {
  /**
   * A referenced Secret/ConfigMap or key of the TLS settings is missing or unusable (or the identity
   * source is one this build lacks): the policies lack what the user asked for (e.g. their CA, so
   * system CAs would be trusted instead), and the caller must not send traffic to the backend (treat
   * it as unresolved: 500) until this is fixed.
   */
  failClosed: boolean;
}
