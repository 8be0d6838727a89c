// Logging: pino, with a level filter in RUST_LOG style (`info`, `warn,proxy=debug`) that can be
// changed at runtime, and two output formats: json (one object per line) and text (logfmt-like).
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import pino, { type DestinationStream, type Logger } from 'pino';

export const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type Level = (typeof LEVELS)[number];

export interface LevelFilter {
  default: Level;
  modules: Record<string, Level>;
}

/** Parses `level[,module=level]...`; throws with a reason a user can act on. */
export function parseLevelFilter(text: string): LevelFilter {
  const out: LevelFilter = { default: 'info', modules: {} };
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (!part) continue;
    const eq = part.indexOf('=');
    const lvl = (eq === -1 ? part : part.slice(eq + 1)).toLowerCase();
    if (!(LEVELS as readonly string[]).includes(lvl)) {
      throw new Error(`invalid log level ${JSON.stringify(lvl)}: expected one of ${LEVELS.join(', ')}`);
    }
    if (eq === -1) out.default = lvl as Level;
    else out.modules[part.slice(0, eq).trim()] = lvl as Level;
  }
  return out;
}

export function formatLevelFilter(f: LevelFilter): string {
  return [f.default, ...Object.entries(f.modules).map(([m, l]) => `${m}=${l}`)].join(',');
}

const PINO_LEVEL_NAMES: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

/** One text line: `time level module message key=value…` (values with spaces, quotes or `=` quoted). */
function textLine(
  time: number,
  level: string,
  module: unknown,
  msg: unknown,
  fields: Record<string, unknown>,
): string {
  let out = `${isoTime(time)} ${level}`;
  if (module) out += ` ${module as string}`;
  if (msg !== undefined) out += ` ${msg as string}`;
  for (const k in fields) {
    const v = fields[k];
    if (v === undefined) continue;
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    out += ` ${k}=${s !== undefined && QUOTE.test(s) ? JSON.stringify(s) : s}`;
  }
  return `${out}\n`;
}
const QUOTE = /[\s"=]/;

// Lines in the same millisecond (a busy worker writes several) share one formatted time.
let lastTime = -1;
let lastIso = '';
function isoTime(time: number): string {
  if (time !== lastTime) {
    lastTime = time;
    lastIso = new Date(time).toISOString();
  }
  return lastIso;
}

/** Rewrites pino's JSON lines as text lines. */
function textDestination(dest: DestinationStream): DestinationStream {
  return {
    write(line: string) {
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line);
      } catch {
        dest.write(line);
        return;
      }
      const { time, level, msg, module, pid: _p, hostname: _h, ...rest } = o;
      const name = (PINO_LEVEL_NAMES[level as number] ?? level) as string;
      dest.write(textLine(time as number, name, module, msg, rest));
    },
  };
}

/**
 * A module's info records written straight to the log's destination, in the line pino would have
 * written (json) or the text line — without pino serializing a record and, for text, the line being
 * parsed back. One access-log record a request made that round trip the largest cost of the log.
 */
export interface RecordLog {
  isLevelEnabled(level: Level): boolean;
  info(record: Record<string, unknown>): void;
}

/**
 * What a batched hub gathers before it writes. Each write is a round trip through libuv's thread pool
 * (a wake-up of a pool thread and one back), which a pinned worker pays on its own core. Profiled on one
 * pinned worker with the default access log at about 16k req/s, the writes and their completions took
 * 3.7% of the process's CPU with 4 KiB blocks (a dozen lines) and 1.6% with 32 KiB ones. Lines still go
 * out at least every 100 ms.
 */
const BATCH_BYTES = 32 * 1024;

/** The longest a batched line waits before it is written. */
const FLUSH_EVERY_MS = 100;

/** How long flush() waits for a write in flight (stdout may be a pipe nobody reads). */
const FLUSH_WAIT_MS = 2000;

export class LogHub {
  readonly root: Logger;
  #filter: LevelFilter;
  readonly #children = new Map<string, Logger>();
  readonly #base: DestinationStream;
  readonly #format: 'json' | 'text';
  #flushSync: () => void = () => {};
  /** The batched destination's write in flight, if any: flush() waits for it before writing the rest. */
  #inFlight: () => Promise<unknown> | undefined = () => undefined;

  /**
   * `batched`: lines are written to stdout in blocks of BATCH_BYTES, and at least every 100 ms,
   * instead of one write(2) each — a data-plane worker writes an access-log line per request.
   * Call flush() before the thread ends.
   */
  constructor(filter: string, format: 'json' | 'text', dest?: DestinationStream, batched = false) {
    this.#filter = parseLevelFilter(filter);
    let base = dest;
    if (base === undefined) {
      // Batched lines go to sonic-boom as Buffers. Given a string, it takes the UTF-8 length of all
      // that is still buffered on every write, flattening and scanning up to 4 KiB per line. With an
      // access-log line per request, that cost a worker about 10 µs of CPU per request.
      const boom = pino.destination({
        fd: 1,
        sync: false,
        minLength: 0,
        // sonic-boom wants minLength below maxWrite (its largest single write).
        ...(batched
          ? { contentMode: 'buffer' as const, minLength: BATCH_BYTES, maxWrite: 2 * BATCH_BYTES }
          : {}),
      });
      this.#flushSync = () => boom.flushSync();
      if (batched) {
        // sonic-boom's own fields: `_len` is what is buffered, `_writing` a write under way.
        const state = boom as unknown as { _len?: number; _writing?: boolean };
        this.#inFlight = () => (state._writing ? once(boom, 'write') : undefined);
        // Buffered lines are flushed within 100 ms by a timer armed when the first of them is written,
        // so an idle thread is not woken up by the log: an interval woke each worker ten times a
        // second for ever. A flush while a write is under way does nothing and the lines stay
        // buffered, so the timer is armed again. (Without `_len`, it flushes every 100 ms for ever, as
        // the interval did.)
        let armed = false;
        const tick = () => {
          armed = false;
          if (state._len === 0) return;
          boom.flush();
          if (state._len !== 0) arm();
        };
        // One timer, re-armed with refresh(); its first run, with nothing buffered yet, does nothing.
        const timer = setTimeout(tick, FLUSH_EVERY_MS).unref();
        const arm = () => {
          if (armed) return;
          armed = true;
          timer.refresh();
        };
        base = {
          write: (line: string) => {
            boom.write(Buffer.from(line) as unknown as string);
            arm();
          },
        };
      } else {
        base = boom;
      }
    }
    this.#base = base;
    this.#format = format;
    this.root = pino(
      { level: 'trace', base: null, timestamp: pino.stdTimeFunctions.epochTime },
      format === 'text' ? textDestination(base) : base,
    );
    this.root.level = this.#filter.default;
  }

  /** A module logger; its level follows the filter, now and after every change. */
  module(name: string): Logger {
    let l = this.#children.get(name);
    if (!l) {
      l = this.root.child({ module: name });
      l.level = this.#filter.modules[name] ?? this.#filter.default;
      this.#children.set(name, l);
    }
    return l;
  }

  /** The module's info records, written without pino (see RecordLog); its level follows the filter. */
  records(name: string): RecordLog {
    const l = this.module(name);
    const base = this.#base;
    const prefix = `,"module":${JSON.stringify(name)}`;
    const info =
      this.#format === 'text'
        ? (rec: Record<string, unknown>) => base.write(textLine(Date.now(), 'info', name, undefined, rec))
        : (rec: Record<string, unknown>) => {
            const body = JSON.stringify(rec);
            base.write(
              `{"level":30,"time":${Date.now()}${prefix}${body.length > 2 ? `,${body.slice(1)}` : '}'}\n`,
            );
          };
    return { isLevelEnabled: (level) => l.isLevelEnabled(level), info };
  }

  /**
   * Writes out what is buffered (before a worker ends). A batched hub first waits for the write already
   * under way (sonic-boom's `_writing`), up to FLUSH_WAIT_MS: written at once, the rest would land
   * before the lines in flight, out of order.
   */
  async flush(): Promise<void> {
    const late = sleep(FLUSH_WAIT_MS, 'late', { ref: false });
    for (let w = this.#inFlight(); w !== undefined; w = this.#inFlight()) {
      if ((await Promise.race([w.catch(() => {}), late])) === 'late') break;
    }
    try {
      this.#flushSync();
    } catch {
      // Nothing to write yet, or stdout is gone: nothing more can be done.
    }
  }

  get filter(): string {
    return formatLevelFilter(this.#filter);
  }

  setFilter(text: string): string {
    this.#filter = parseLevelFilter(text);
    this.root.level = this.#filter.default;
    for (const [name, l] of this.#children) l.level = this.#filter.modules[name] ?? this.#filter.default;
    return this.filter;
  }
}
