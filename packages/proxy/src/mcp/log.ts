// The logger of MCP's long-lived parts (stdio processes, target failures): the data plane's, once it
// sets it; before that (a dry run) a quiet one.
import pino, { type Logger } from 'pino';

let current: Logger = pino({ level: 'silent' });

export function setMcpLogger(log: Logger): void {
  current = log.child({ module: 'mcp' });
}

export function mcpLog(): Logger {
  return current;
}
