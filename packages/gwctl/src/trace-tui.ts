// The interactive trace view: an event list and a detail pane drawn with plain ANSI escapes on the
// alternate screen, keys read from raw stdin, redrawn on resize. It stays open until the user quits.

import type { TraceEvent } from '@gw/api/admin/trace-event';
import { type DetailMode, detailLines, eventRow, sanitize } from './trace-view.ts';

const ESC = '\x1b[';
const ENTER = `${ESC}?1049h${ESC}?25l${ESC}2J`;
const LEAVE = `${ESC}0m${ESC}?25h${ESC}?1049l`;
// A frame between these is shown whole by terminals that know synchronized output (mode 2026), so a
// redraw never tears; the others ignore the unknown mode.
const FRAME_BEGIN = `${ESC}?2026h`;
const FRAME_END = `${ESC}?2026l`;
const INVERSE = `${ESC}7m`;
const BOLD = `${ESC}1m`;
const RED = `${ESC}31m`;
const GREEN = `${ESC}32m`;
const RESET = `${ESC}0m`;

const HELP =
  ' q quit | tab pane | up/down select or scroll | e event | s snapshot | d diff | PgUp PgDn Home End';

export type Key =
  | 'tab'
  | 'up'
  | 'down'
  | 'left'
  | 'right'
  | 'pageUp'
  | 'pageDown'
  | 'home'
  | 'end'
  | 'e'
  | 's'
  | 'd'
  | 'quit';

const SEQUENCES: [string, Key][] = [
  ['\x1b[A', 'up'],
  ['\x1bOA', 'up'],
  ['\x1b[B', 'down'],
  ['\x1bOB', 'down'],
  ['\x1b[C', 'right'],
  ['\x1bOC', 'right'],
  ['\x1b[D', 'left'],
  ['\x1bOD', 'left'],
  ['\x1b[5~', 'pageUp'],
  ['\x1b[6~', 'pageDown'],
  ['\x1b[H', 'home'],
  ['\x1bOH', 'home'],
  ['\x1b[1~', 'home'],
  ['\x1b[F', 'end'],
  ['\x1bOF', 'end'],
  ['\x1b[4~', 'end'],
  ['\x1b[Z', 'tab'],
];
const SINGLE: Record<string, Key> = {
  '\t': 'tab',
  k: 'up',
  j: 'down',
  g: 'home',
  G: 'end',
  e: 'e',
  s: 's',
  d: 'd',
  q: 'quit',
  Q: 'quit',
  '\x03': 'quit',
};

/** Splits one read from raw stdin (which may hold several keys) into keys; unknown bytes are dropped. */
export function parseKeys(chunk: string): Key[] {
  const keys: Key[] = [];
  let i = 0;
  while (i < chunk.length) {
    const seq = SEQUENCES.find(([s]) => chunk.startsWith(s, i));
    if (seq) {
      keys.push(seq[1]);
      i += seq[0].length;
      continue;
    }
    const key = SINGLE[chunk[i] as string];
    if (key) keys.push(key);
    // A lone or unknown escape sequence: skip the ESC and its `[`/`O` introducer with its parameters.
    if (chunk[i] === '\x1b') {
      const m = /^\x1b[[O][0-9;]*[~A-Za-z]?/.exec(chunk.slice(i));
      i += m ? m[0].length : 1;
    } else i++;
  }
  return keys;
}

function fit(s: string, width: number): string {
  if (width <= 0) return '';
  return s.length > width ? s.slice(0, width) : s.padEnd(width);
}

function wrap(lines: string[], width: number): string[] {
  const out: string[] = [];
  const w = Math.max(1, width);
  for (const raw of lines) {
    const l = sanitize(raw);
    if (l.length <= w) out.push(l);
    else for (let i = 0; i < l.length; i += w) out.push(l.slice(i, i + w));
  }
  return out;
}

export interface TuiIo {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
}

export class TraceTui {
  readonly #io: TuiIo;
  readonly #title: string;
  readonly #events: TraceEvent[] = [];
  #selected = 0;
  #focus: 'list' | 'detail' = 'list';
  #mode: DetailMode = 'event';
  #listTop = 0;
  #detailTop = 0;
  #status = '';
  #tone: 'info' | 'ok' | 'error' = 'info';
  #pending = false;
  #active = false;
  #quit: () => void = () => {};
  readonly quit: Promise<void>;
  readonly #onData = (chunk: string) => this.#keys(parseKeys(chunk));
  readonly #onResize = () => this.render();
  readonly #onExit = () => this.stop();
  readonly #onSignal = (signal: NodeJS.Signals) => {
    this.stop();
    process.exit(signal === 'SIGHUP' ? 129 : 143);
  };

  constructor(io: TuiIo, title: string) {
    this.#io = io;
    this.#title = title;
    this.quit = new Promise((resolve) => {
      this.#quit = resolve;
    });
  }

  start(): void {
    const { input, output } = this.#io;
    this.#active = true;
    output.write(ENTER);
    input.setRawMode(true);
    input.setEncoding('utf8');
    input.on('data', this.#onData);
    input.resume();
    // Node turns SIGWINCH into a `resize` event on the output TTY.
    output.on('resize', this.#onResize);
    process.on('exit', this.#onExit);
    process.on('SIGTERM', this.#onSignal);
    process.on('SIGHUP', this.#onSignal);
    this.render();
  }

  /** Leaves the terminal as it was: cooked mode, cursor shown, main screen back. */
  stop(): void {
    if (!this.#active) return;
    this.#active = false;
    const { input, output } = this.#io;
    input.off('data', this.#onData);
    output.off('resize', this.#onResize);
    process.off('exit', this.#onExit);
    process.off('SIGTERM', this.#onSignal);
    process.off('SIGHUP', this.#onSignal);
    try {
      input.setRawMode(false);
    } catch {}
    input.pause();
    output.write(LEAVE);
  }

  addEvent(e: TraceEvent): void {
    this.#events.push(e);
    this.#schedule();
  }

  setStatus(text: string, tone: 'info' | 'ok' | 'error' = 'info'): void {
    this.#status = text;
    this.#tone = tone;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#pending || !this.#active) return;
    this.#pending = true;
    setImmediate(() => {
      this.#pending = false;
      this.render();
    });
  }

  #size(): { width: number; height: number; body: number; left: number } {
    const width = Math.max(40, this.#io.output.columns || 80);
    const height = Math.max(8, this.#io.output.rows || 24);
    const left = Math.max(28, Math.min(64, Math.floor(width * 0.42)));
    return { width, height, body: height - 3, left };
  }

  #detail(width: number): string[] {
    return wrap(detailLines(this.#events, this.#selected, this.#mode), width);
  }

  #keys(keys: Key[]): void {
    const { body, width, left } = this.#size();
    const detailWidth = width - left - 2;
    for (const key of keys) {
      if (key === 'quit') {
        this.#quit();
        return;
      }
      const last = Math.max(0, this.#events.length - 1);
      const list = this.#focus === 'list';
      const select = (i: number) => {
        const next = Math.max(0, Math.min(last, i));
        if (next !== this.#selected) this.#detailTop = 0;
        this.#selected = next;
      };
      const scroll = (by: number) => {
        const max = Math.max(0, this.#detail(detailWidth).length - body);
        this.#detailTop = Math.max(0, Math.min(max, this.#detailTop + by));
      };
      if (key === 'tab') this.#focus = list ? 'detail' : 'list';
      else if (key === 'left') this.#focus = 'list';
      else if (key === 'right') this.#focus = 'detail';
      else if (key === 'e' || key === 's' || key === 'd') {
        this.#mode = key === 'e' ? 'event' : key === 's' ? 'snapshot' : 'diff';
        this.#detailTop = 0;
      } else if (key === 'up') list ? select(this.#selected - 1) : scroll(-1);
      else if (key === 'down') list ? select(this.#selected + 1) : scroll(1);
      else if (key === 'pageUp') list ? select(this.#selected - body) : scroll(-body);
      else if (key === 'pageDown') list ? select(this.#selected + body) : scroll(body);
      else if (key === 'home') list ? select(0) : scroll(-Infinity);
      else if (key === 'end') list ? select(last) : scroll(Infinity);
    }
    this.render();
  }

  render(): void {
    if (!this.#active) return;
    const { width, height, body, left } = this.#size();
    const right = width - left - 1;
    if (this.#selected < this.#listTop) this.#listTop = this.#selected;
    if (this.#selected >= this.#listTop + body) this.#listTop = this.#selected - body + 1;
    const detail = this.#detail(right - 1);
    this.#detailTop = Math.max(0, Math.min(this.#detailTop, Math.max(0, detail.length - body)));

    const tone = this.#tone === 'error' ? RED : this.#tone === 'ok' ? GREEN : '';
    const out: string[] = [];
    const at = (row: number) => `${ESC}${row};1H`;
    const header = fit(` ${sanitize(this.#title)} | `, width);
    const statusText = fit(sanitize(this.#status), Math.max(0, width - header.trimEnd().length - 1));
    out.push(`${at(1)}${INVERSE}${header.trimEnd()} ${tone}${statusText}${RESET}${ESC}K`);

    const focus = (name: 'list' | 'detail') => (this.#focus === name ? '> ' : '  ');
    const listTitle = `${focus('list')}Events (${this.#events.length})`;
    const more =
      detail.length > body
        ? ` [${this.#detailTop + 1}-${Math.min(detail.length, this.#detailTop + body)}/${detail.length}]`
        : '';
    const detailTitle = `${focus('detail')}Detail: ${this.#mode}${more}  (e event, s snapshot, d diff)`;
    out.push(`${at(2)}${BOLD}${fit(listTitle, left)}${RESET}|${BOLD}${fit(detailTitle, right)}${RESET}`);

    for (let row = 0; row < body; row++) {
      const i = this.#listTop + row;
      const e = this.#events[i];
      let cell = ' '.repeat(left);
      if (e) {
        const text = fit(`${i === this.#selected ? '>' : ' '}${eventRow(e, i)}`, left);
        const colour = e.severity === 'error' ? RED : e.severity === 'warn' ? `${ESC}33m` : '';
        cell = i === this.#selected ? `${INVERSE}${text}${RESET}` : `${colour}${text}${RESET}`;
      } else if (i === 0) cell = fit('  waiting for events...', left);
      const d = detail[this.#detailTop + row] ?? '';
      const dColour =
        this.#mode === 'diff' ? (d.startsWith('+ ') ? GREEN : d.startsWith('- ') ? RED : '') : '';
      out.push(`${at(row + 3)}${cell}|${dColour}${fit(` ${d}`, right)}${RESET}`);
    }
    out.push(`${at(height)}${INVERSE}${fit(HELP, width - 1)}${RESET}${ESC}K`);
    this.#io.output.write(`${FRAME_BEGIN}${out.join('')}${FRAME_END}`);
  }
}
