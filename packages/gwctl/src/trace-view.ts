// What the trace UI shows, as plain text lines: the event list rows and the three detail modes
// (event JSON, readable snapshot, diff against the previous snapshot). No terminal IO here.
import {
  type BodySnapshotMessage,
  isBodySnapshotMessage,
  isSnapshotMessage,
  type TraceEvent,
} from '@gw/api/admin/trace-event';

export type DetailMode = 'event' | 'snapshot' | 'diff';

/** Replaces control characters, so a header value cannot move the cursor or recolour the terminal. */
export function sanitize(s: string): string {
  return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) =>
    c === '\t' ? ' ' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

const str = (v: unknown) => (v === undefined || v === null ? '' : String(v));

/** `stage`, `phase`, or for a policy event `phase policy outcome`: the second column of the list. */
export function eventSummary(e: TraceEvent): string {
  const m = e.message;
  switch (m.type) {
    case 'policy':
      return [m.phase, m.policy, m.outcome, m.status].map(str).filter(Boolean).join(' ');
    case 'policySelection':
      return str(m.phase);
    case 'routeSelection': {
      const r = m.selectedRoute as { key?: string } | null | undefined;
      return r?.key ? `-> ${r.key}` : 'no route';
    }
    case 'backendCallStart':
      return str(m.target);
    case 'backendCallResult':
      return m.error ? `error: ${str(m.error)}` : str(m.status);
    case 'error':
      return str(m.reason ?? m.error ?? m.status);
    case 'a2a':
      return [m.phase, m.method, m.taskId, m.taskState, m.outcome].map(str).filter(Boolean).join(' ');
    default:
      return str(m.stage ?? m.phase);
  }
}

export function eventRow(e: TraceEvent, index: number): string {
  const offset = `${e.eventEnd.toFixed(3)}ms`;
  return sanitize(
    `${String(index).padStart(3)} ${offset.padStart(11)}  ${e.message.type}  ${eventSummary(e)}`,
  );
}

// Events come validated (trace-stream.ts), so a snapshot's requestState has the shared shape.
const stateOf = (e: TraceEvent | undefined) =>
  e && isSnapshotMessage(e.message) ? e.message.requestState : undefined;

/** Index of the snapshot that describes the request at `index`: that event, or the last one before. */
export function snapshotAt(events: TraceEvent[], index: number): number {
  for (let i = Math.min(index, events.length - 1); i >= 0; i--) if (stateOf(events[i])) return i;
  return -1;
}

function headerLines(h: Record<string, string>, indent: string): string[] {
  return Object.entries(h).map(([k, v]) => `${indent}${k}: ${v}`);
}

/** A snapshot as a person reads a request: request line, headers, source, then the response if any. */
export function snapshotLines(e: TraceEvent, withExtras = true): string[] {
  const s = stateOf(e);
  if (!s) return [];
  const r = s.request;
  const out = [`${r.method} ${r.uri} ${r.version}`.trim()];
  out.push(...headerLines(r.headers, ''));
  out.push('');
  out.push(`source: ${s.source.address}:${s.source.port}`);
  const env = Object.entries(s.env);
  out.push(`env: ${env.length === 0 ? '(standalone)' : env.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  if (r.startTime) out.push(`started: ${r.startTime}`);
  const backend = e.message.backend as { name?: string; type?: string; protocol?: string } | undefined;
  if (backend && withExtras)
    out.push(`backend: ${str(backend.name)} (${str(backend.type)}, ${str(backend.protocol)})`);
  const proxy = e.message.proxy as Record<string, unknown> | undefined;
  if (proxy && withExtras) {
    out.push(
      `timing: processing ${str(proxy.requestProcessingDuration)}s, upstream ${str(proxy.upstreamDuration)}s`,
    );
  }
  if (s.response) {
    out.push('');
    out.push(`response: ${s.response.code}`);
    out.push(...headerLines(s.response.headers, '  '));
  }
  return out;
}

/** Line diff (longest common subsequence): unchanged lines as `  x`, removed `- x`, added `+ x`. */
export function diffLines(before: string[], after: string[]): string[] {
  const n = before.length;
  const m = after.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    const row = lcs[i] as number[];
    const next = lcs[i + 1] as number[];
    for (let j = m - 1; j >= 0; j--) {
      row[j] =
        before[i] === after[j]
          ? (next[j + 1] as number) + 1
          : Math.max(next[j] as number, row[j + 1] as number);
    }
  }
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && before[i] === after[j]) {
      out.push(`  ${before[i]}`);
      i++;
      j++;
    } else if (j < m && (i === n || (lcs[i]?.[j + 1] as number) >= (lcs[i + 1]?.[j] as number))) {
      out.push(`+ ${after[j]}`);
      j++;
    } else {
      out.push(`- ${before[i]}`);
      i++;
    }
  }
  return out;
}

function title(events: TraceEvent[], i: number): string {
  const e = events[i];
  return e ? `#${i} ${e.message.type}${e.message.stage ? ` (${str(e.message.stage)})` : ''}` : '';
}

function bodyLines(m: BodySnapshotMessage): string[] {
  const data = Buffer.from(m.body, 'base64');
  const text = data.toString('utf8');
  const printable = !/[\u0000-\u0008\u000e-\u001f]/.test(text) && !text.includes('\ufffd');
  const head = `body (${m.stage}): ${m.size} bytes${m.truncated ? `, first ${data.length} shown` : ''}`;
  if (!printable) {
    const hex =
      data
        .subarray(0, 512)
        .toString('hex')
        .match(/.{1,64}/g) ?? [];
    return [head, '(binary, hex)', ...hex];
  }
  return [head, '', ...text.split('\n')];
}

/** The detail pane's lines for the event at `index` in `mode`. */
export function detailLines(events: TraceEvent[], index: number, mode: DetailMode): string[] {
  const e = events[index];
  if (!e) return ['(no event yet)'];
  if (mode === 'event') return JSON.stringify(e, null, 2).split('\n');
  if (mode === 'snapshot' && isBodySnapshotMessage(e.message)) return bodyLines(e.message);
  const at = snapshotAt(events, index);
  if (at === -1) return [`${title(events, index)}: no request snapshot yet at this point`];
  const note = at === index ? [] : [`(state at ${title(events, at)})`];
  const current = snapshotLines(events[at] as TraceEvent);
  if (mode === 'snapshot') return [...note, ...current];
  const prev = snapshotAt(events, at - 1);
  if (prev === -1) {
    return [
      ...note,
      `${title(events, at)} is the first snapshot; all lines are new`,
      '',
      ...snapshotLines(events[at] as TraceEvent, false).map((l) => `+ ${l}`),
    ];
  }
  // Only requestState is compared: the backend and timing blocks belong to one snapshot each.
  const d = diffLines(
    snapshotLines(events[prev] as TraceEvent, false),
    snapshotLines(events[at] as TraceEvent, false),
  );
  const changed = d.some((l) => !l.startsWith('  '));
  return [...note, `${title(events, at)} against ${title(events, prev)}`, changed ? '' : '(no change)', ...d];
}
