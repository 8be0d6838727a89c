// The debug trace on the wire (spec "Events"): one JSON object per message of the admin
// `/debug/trace` event stream. The proxy writes these; gwctl (and later the UI) validate them on read.
import { z } from 'zod';

const HeaderMap = z.record(z.string(), z.string());

/** The request as a snapshot shows it: header values of sensitive headers already redacted. */
export const RequestSnapshotState = z.object({
  request: z.object({
    method: z.string(),
    uri: z.string(),
    path: z.string(),
    pathAndQuery: z.string(),
    host: z.string(),
    scheme: z.string(),
    /** `HTTP/1.1`, `HTTP/2.0`. */
    version: z.string(),
    headers: HeaderMap,
    /** ISO 8601. */
    startTime: z.string(),
  }),
  source: z.object({
    address: z.string(),
    port: z.number().int(),
    rawAddress: z.string(),
    rawPort: z.number().int(),
  }),
  /** Kubernetes workload facts; empty in standalone mode. */
  env: HeaderMap,
  /** Present on response snapshots. */
  response: z.object({ code: z.number().int(), headers: HeaderMap }).optional(),
});
export type RequestSnapshotState = z.infer<typeof RequestSnapshotState>;

/** `requestSnapshot` / `responseSnapshot`: the request (and response) at a named stage. */
export const SnapshotMessage = z.looseObject({
  type: z.enum(['requestSnapshot', 'responseSnapshot']),
  stage: z.string(),
  requestState: RequestSnapshotState,
});
export type SnapshotMessage = z.infer<typeof SnapshotMessage>;

/** `bodySnapshot`: the first bytes of a body, taken as it streamed past. */
export const BodySnapshotMessage = z.looseObject({
  type: z.literal('bodySnapshot'),
  stage: z.string(),
  /** Base64 of at most the snapshot limit's first bytes. */
  body: z.string(),
  /** The whole body's length in bytes. */
  size: z.number().int().nonnegative(),
  truncated: z.boolean(),
});
export type BodySnapshotMessage = z.infer<typeof BodySnapshotMessage>;

// The message types whose fields a reader relies on; every other type is open (`type` plus any
// fields), so a newer proxy's events still reach an older reader.
const KNOWN_MESSAGES: Partial<Record<string, z.ZodType>> = {
  requestSnapshot: SnapshotMessage,
  responseSnapshot: SnapshotMessage,
  bodySnapshot: BodySnapshotMessage,
};

export const TraceMessage = z.looseObject({ type: z.string() }).superRefine((m, ctx) => {
  const known = KNOWN_MESSAGES[m.type];
  const result = known?.safeParse(m);
  if (!result || result.success) return;
  for (const issue of result.error.issues) {
    ctx.addIssue({ code: 'custom', path: issue.path, message: `${m.type}: ${issue.message}` });
  }
});
export type TraceMessage = z.infer<typeof TraceMessage>;

export const TraceSeverity = z.enum(['info', 'warn', 'error']);
export type TraceSeverity = z.infer<typeof TraceSeverity>;

export const TraceEvent = z.object({
  /** Milliseconds since the request started; null for instantaneous events. */
  eventStart: z.number().nullable(),
  eventEnd: z.number(),
  severity: TraceSeverity,
  message: TraceMessage,
});
export type TraceEvent = z.infer<typeof TraceEvent>;

/** Narrows a message of a validated event to a snapshot, whose `requestState` is then checked. */
export const isSnapshotMessage = (m: TraceMessage): m is SnapshotMessage =>
  m.type === 'requestSnapshot' || m.type === 'responseSnapshot';

/** Narrows a message of a validated event to a body snapshot. */
export const isBodySnapshotMessage = (m: TraceMessage): m is BodySnapshotMessage => m.type === 'bodySnapshot';
