// Duration and ByteSize scalars of the spec ("Shared scalar types"): parsing and the patterns the
// schemas and CRDs share.

/** 1 to 4 groups of 1–5 digits followed by h, m, s or ms, e.g. `1m30s`, `250ms`. */
export const DURATION_PATTERN = '^([0-9]{1,5}(h|m|s|ms)){1,4}$';
const DURATION_RE = new RegExp(DURATION_PATTERN);
const PART_RE = /([0-9]{1,5})(ms|h|m|s)/g;
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

/**
 * The longest duration a timer can wait (2^31 - 1 ms, about 24.8 days): a longer one fires at once in
 * node (TimeoutOverflowWarning), so a `720h` meaning "practically never" cut every request. Parsed
 * durations are capped at it; for a timeout, that is never in practice.
 */
export const MAX_DURATION_MS = 2 ** 31 - 1;

/** Milliseconds of a Duration string (at most MAX_DURATION_MS), or undefined when it does not match the pattern. */
export function parseDuration(text: string): number | undefined {
  if (text.length > 32 || !DURATION_RE.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(PART_RE)) total += Number(m[1]) * (UNIT_MS[m[2] as string] ?? 0);
  return Math.min(total, MAX_DURATION_MS);
}

export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** Kubernetes quantity: an integer or decimal with an optional binary or decimal suffix. */
export const BYTE_SIZE_PATTERN = '^([0-9]+(\\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$';
const BYTE_SIZE_RE = new RegExp(BYTE_SIZE_PATTERN);
const SUFFIX: Record<string, number> = {
  '': 1,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
  k: 1000,
  K: 1000,
  M: 1000 ** 2,
  G: 1000 ** 3,
  T: 1000 ** 4,
};
/** The largest body the data plane will buffer (4 GiB), so a ByteSize must fit below it. */
export const MAX_BYTE_SIZE = 4 * 1024 ** 3;

/** Bytes of a ByteSize (number or quantity string), or undefined when malformed or too large. */
export function parseByteSize(value: string | number): number | undefined {
  if (typeof value === 'number') {
    return Number.isInteger(value) && value >= 0 && value <= MAX_BYTE_SIZE ? value : undefined;
  }
  if (value.length < 1 || value.length > 32) return undefined;
  const m = BYTE_SIZE_RE.exec(value);
  if (!m) return undefined;
  const bytes = Math.floor(Number(m[1]) * (SUFFIX[m[3] ?? ''] ?? 1));
  return bytes <= MAX_BYTE_SIZE ? bytes : undefined;
}

const GO_DURATION_RE = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|ms|s|m|h)/;
const GO_UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Milliseconds of a Go-style duration (`1m30s`, `1.5h`, `500ms`, `0`), which the standalone config
 * accepts so files written for agentgateway load unchanged; at most MAX_DURATION_MS. Undefined when
 * malformed or negative.
 */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (text.length === 0 || text.length > 64) return undefined;
  let rest = text;
  let total = 0;
  while (rest.length > 0) {
    const m = GO_DURATION_RE.exec(rest);
    if (!m) return undefined;
    const unit = /(ns|us|µs|ms|s|m|h)$/.exec(m[0])?.[1] as string;
    total += Number(m[0].slice(0, m[0].length - unit.length)) * (GO_UNIT_MS[unit] ?? 0);
    rest = rest.slice(m[0].length);
  }
  return Math.min(total, MAX_DURATION_MS);
}
