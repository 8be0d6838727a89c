// Checks of an MCP backend the schema cannot make: one transport per target, unique target names,
// remote targets that name where they are, and CEL rules that compile.
import type { McpAuthorization, McpBackend } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';
import { checkAuthorization } from './traffic.ts';

const TRANSPORTS = ['stdio', 'sse', 'mcp', 'openapi'] as const;

export function checkMcpBackend(b: McpBackend, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  const seen = new Map<string, number>();
  b.targets.forEach((t, i) => {
    const tp = [...path, 'targets', i];
    const set = TRANSPORTS.filter((k) => t[k] !== undefined);
    if (set.length !== 1) {
      out.push({
        path: tp,
        message:
          set.length === 0
            ? 'a target needs exactly one of stdio, sse, mcp (streamable HTTP) or openapi'
            : `a target has exactly one of stdio, sse, mcp or openapi (this one has ${set.join(' and ')})`,
      });
    }
    const first = seen.get(t.name);
    if (first !== undefined) {
      out.push({
        path: [...tp, 'name'],
        message: `target name ${JSON.stringify(t.name)} is also used by targets[${first}]; names must be unique`,
      });
    } else seen.set(t.name, i);
    for (const k of ['sse', 'mcp', 'openapi'] as const) {
      const r = t[k];
      if (!r) continue;
      if ('backend' in r && r.backend !== undefined) {
        if ('host' in r && r.host !== undefined)
          out.push({ path: [...tp, k, 'backend'], message: 'set host or backend, not both' });
        continue;
      }
      if (!('host' in r) || r.host === undefined) {
        out.push({ path: [...tp, k, 'host'], message: 'where the API is: host or backend' });
        continue;
      }
      const url = /^[a-z]+:\/\//i.test(r.host);
      if (url && (r.port !== undefined || r.path !== undefined)) {
        out.push({
          path: [...tp, k],
          message: 'a URL in host already says the port and path; drop port and path',
        });
      }
      if (!url && r.port === undefined && !/:\d+$/.test(r.host)) {
        out.push({
          path: [...tp, k, 'port'],
          message: 'a target given by host name needs a port (or a URL in host)',
        });
      }
      if (url && !/^https?:\/\//i.test(r.host)) {
        out.push({
          path: [...tp, k, 'host'],
          message: `an ${k === 'openapi' ? 'API' : 'MCP target'} URL is http:// or https://`,
        });
      }
    }
    const connection = Object.keys(t.policies ?? {}).filter((k) => k !== 'mcpAuthorization');
    if (t.stdio && connection.length > 0)
      out.push({
        path: [...tp, 'policies', connection[0] as string],
        message: 'a stdio target takes no connection policies (only mcpAuthorization)',
      });
  });
  if (b.statefulMode && b.sessionRouting && b.statefulMode.toLowerCase() !== b.sessionRouting.toLowerCase())
    out.push({
      path: [...path, 'sessionRouting'],
      message: 'statefulMode and sessionRouting disagree; set one',
    });
  return out;
}

export function checkMcpAuthorization(a: McpAuthorization, path: FieldPath): Problem[] {
  return checkAuthorization(a, path);
}
