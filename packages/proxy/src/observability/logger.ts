// Logging: pino, with a level filter in RUST_LOG style (`info`, `warn,proxy=debug`) that can be
// changed at runtime, and two output formats: json (one object per line) and text (logfmt-like).
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

/** Rewrites pino's JSON lines as `time level module message key=value…`. */
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
      let out = `${new Date(time as number).toISOString()} ${(PINO_LEVEL_NAMES[level as number] ?? level) as string}`;
      if (module) out += ` ${module as string}`;
      if (msg !== undefined) out += ` ${msg as string}`;
      for (const [k, v] of Object.entries(rest)) {
        const s = typeof v === 'string' ? v : JSON.stringify(v);
        out += ` ${k}=${s !== undefined && /[\s"=]/.test(s) ? JSON.stringify(s) : s}`;
      }
      dest.write(`${out}\n`);
    },
  };
}

export class LogHub {
  readonly root: Logger;
  #filter: LevelFilter;
  readonly #children = new Map<string, Logger>();

  constructor(filter: string, format: 'json' | 'text', dest?: DestinationStream) {
    this.#filter = parseLevelFilter(filter);
    const base = dest ?? pino.destination({ fd: 1, sync: false });
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
