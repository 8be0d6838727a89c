// `gwctl proxy trace`: arms a trace on the admin interface, optionally sends the request itself
// (inject mode), and shows the events as JSON Lines (--raw) or in the interactive view.

import type { TraceEvent } from '@gw/api/admin/trace-event';
import { GwctlError, usageError } from './errors.ts';
import { type InjectRequest, type InjectResponse, parseCurlArgs, sendInjected } from './inject-request.ts';
import { openTrace, type TraceStream } from './trace-stream.ts';
import { TraceTui } from './trace-tui.ts';

/** How long inject mode waits for every worker to be armed before it gives up. */
const ARM_TIMEOUT_MS = 10_000;

export interface TraceOptions {
  adminPort: number;
  /** The proxy listener port the injected request goes to. */
  listenerPort: number | undefined;
  /** How messages name that port when 127.0.0.1:<port> is only a forward (`pod web-1 port 8080`). */
  listenerName?: string | undefined;
  expression: string | undefined;
  raw: boolean;
  /** The words after `--`: a URL and curl-style arguments; undefined in watch mode. */
  curl: string[] | undefined;
  /** Shown in the view's title bar, e.g. `admin 127.0.0.1:15000`. */
  target: string;
}

function armedInTime(stream: TraceStream): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    stream.armed,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new GwctlError(
              'GWCTL_ERR_TRACE_TIMEOUT',
              `the proxy did not arm tracing within ${ARM_TIMEOUT_MS} ms`,
            ),
          ),
        ARM_TIMEOUT_MS,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

const statusLine = (r: InjectResponse) => `HTTP/${r.httpVersion} ${r.status} ${r.statusMessage}`.trimEnd();

/** The request to inject, or undefined in watch mode; throws usage errors. */
export function parseInject(o: Pick<TraceOptions, 'curl' | 'listenerPort'>): InjectRequest | undefined {
  if (o.curl === undefined) return undefined;
  const req = parseCurlArgs(o.curl);
  if (o.listenerPort === undefined) {
    throw usageError('inject mode needs --port <listener port>: the request is sent to 127.0.0.1:<port>');
  }
  return req;
}

async function traceRaw(o: TraceOptions, inject: InjectRequest | undefined): Promise<number> {
  const stream = openTrace({
    adminPort: o.adminPort,
    expression: o.expression,
    onEvent: (e) => process.stdout.write(`${JSON.stringify(e)}\n`),
  });
  const abort = new AbortController();
  try {
    if (!inject) {
      await stream.armed;
      process.stderr.write('gwctl: tracing armed; waiting for the next request\n');
      await stream.done;
      return 0;
    }
    await armedInTime(stream);
    const response = sendInjected(inject, o.listenerPort as number, abort.signal, o.listenerName).then(
      (r) => {
        process.stderr.write(`${statusLine(r)}\n`);
        return r;
      },
    );
    // A failed request never finishes its trace, so whichever fails first decides the error.
    await Promise.all([stream.done, response]);
    return 0;
  } finally {
    // Whatever failed first, nothing may keep the process alive afterwards.
    abort.abort();
    stream.close();
  }
}

/** Without --raw the interactive view needs stdin and stdout to be a terminal; throws when they are not. */
export function checkTerminal(raw: boolean): void {
  if (!raw && (!process.stdin.isTTY || !process.stdout.isTTY)) {
    throw new GwctlError(
      'GWCTL_ERR_NO_TERMINAL',
      'the interactive trace view needs a terminal; use --raw to print JSON Lines',
    );
  }
}

async function traceTui(o: TraceOptions, inject: InjectRequest | undefined): Promise<number> {
  const { stdin, stdout } = process;
  checkTerminal(false);
  const tui = new TraceTui({ input: stdin, output: stdout }, `gwctl trace | ${o.target}`);
  const abort = new AbortController();
  let failure: Error | undefined;
  let quitting = false;
  let response = '';
  let trace = 'arming...';
  const show = () =>
    tui.setStatus(
      [trace, response].filter(Boolean).join(' | '),
      failure ? 'error' : trace.startsWith('trace complete') ? 'ok' : 'info',
    );
  // The first failure is the one shown, and reported again on stderr once the view is gone.
  const fail = (err: unknown) => {
    if (quitting || failure) return;
    failure = err as Error;
    trace = `error: ${failure.message}`;
    show();
  };
  const stream = openTrace({
    adminPort: o.adminPort,
    expression: o.expression,
    onEvent: (e: TraceEvent) => tui.addEvent(e),
  });
  tui.start();
  show();
  const run = (async () => {
    if (inject) await armedInTime(stream);
    else await stream.armed;
    trace = inject
      ? `sending ${inject.method} ${inject.url.href} to ${o.listenerName ?? `127.0.0.1:${o.listenerPort}`}`
      : 'armed; waiting for the next request';
    show();
    if (inject) {
      sendInjected(inject, o.listenerPort as number, abort.signal, o.listenerName).then(
        (r) => {
          response = `${statusLine(r)} (${r.body.length} bytes)`;
          show();
        },
        (err) => {
          fail(err);
          stream.close();
        },
      );
    }
    const events = await stream.done;
    if (!failure) trace = `trace complete: ${events.length} events`;
    show();
  })();
  run.catch(fail);
  await tui.quit;
  quitting = true;
  abort.abort();
  stream.close();
  tui.stop();
  if (failure) throw failure;
  return 0;
}

/** `inject` is parsed from `o` unless a caller that had to check the command line first passes it. */
export async function runTrace(o: TraceOptions, inject = parseInject(o)): Promise<number> {
  return o.raw ? await traceRaw(o, inject) : await traceTui(o, inject);
}
