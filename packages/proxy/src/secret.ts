// Secret values (TLS keys, credentials) print as [redacted] in logs, dumps and traces by construction.
import { inspect } from 'node:util';

export class Secret {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toJSON(): string {
    return '[redacted]';
  }
  toString(): string {
    return '[redacted]';
  }
  [inspect.custom](): string {
    return '[redacted]';
  }
}

/** Structured clone drops classes, so secrets cross thread boundaries as tagged plain objects. */
export interface WireSecret {
  $secret: string;
}

export function encodeSecrets(value: unknown): unknown {
  if (value instanceof Secret) return { $secret: value.reveal() } satisfies WireSecret;
  if (Array.isArray(value)) return value.map(encodeSecrets);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = encodeSecrets(v);
    return out;
  }
  return value;
}

export function decodeSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decodeSecrets);
  if (value && typeof value === 'object') {
    if (typeof (value as WireSecret).$secret === 'string' && Object.keys(value).length === 1) {
      return new Secret((value as WireSecret).$secret);
    }
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = decodeSecrets(v);
    return out;
  }
  return value;
}
