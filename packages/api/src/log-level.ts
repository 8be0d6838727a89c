// config.logging.level (and GW_LOG): a level, or levels per module in RUST_LOG style, such as
// `info,proxy=debug`; as a list, one entry each (`[info, proxy=debug]`). The proxy's logger reads it
// (observability/logger.ts parseLevelFilter); checked where it is read, so a file that would fail to
// start fails to load instead.

/** The levels, least severe first (the proxy's logger has the same). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;

/** Why `text` is not a level filter, else undefined (what parseLevelFilter takes, it takes). */
export function logLevelProblem(text: string): string | undefined {
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (!part) continue;
    const eq = part.indexOf('=');
    const level = (eq === -1 ? part : part.slice(eq + 1)).toLowerCase();
    if (!(LOG_LEVELS as readonly string[]).includes(level))
      return `invalid log level ${JSON.stringify(level)}: expected one of ${LOG_LEVELS.join(', ')}, or module=level entries such as "info,proxy=debug"`;
  }
  return undefined;
}
