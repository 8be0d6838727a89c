// The `mcp` backend: an MCP gateway federating several MCP servers (mcp/federation.ts) behind one
// endpoint (mcp/server.ts). Remote targets use the proxy's pools; connection-bound targets (stdio
// processes, legacy SSE streams) live in a runtime the pool registry keeps while a config uses it;
// an openapi target is served by the gateway itself over the API's pool (mcp/upstream/openapi.ts).
import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { McpTargetIR } from '../../../config/ir.ts';
import { Federation } from '../../../mcp/federation.ts';
import { McpGuardrails } from '../../../mcp/guardrails.ts';
import { McpRuntime } from '../../../mcp/runtime.ts';
import { McpServer } from '../../../mcp/server.ts';
import type { TargetConnection } from '../../../mcp/upstream/connection.ts';
import { OpenApiConnection } from '../../../mcp/upstream/openapi.ts';
import { AUTHORIZATION, credentialHeader } from '../../../policies/backend-auth/index.ts';
import { headerModifier } from '../../../policies/header-modifier/index.ts';
import { connectionSpec } from '../../connection.ts';
import type { BackendKind } from '../types.ts';

export const mcpBackend: BackendKind<'mcp'> = {
  kind: 'mcp',
  compile(t, env) {
    const dispatchers = new Map<string, Dispatcher>();
    const direct = new Map<string, TargetConnection>();
    for (const target of t.targets) {
      const tr = target.transport;
      if (tr.kind === 'stdio' || !env.pools) continue;
      const own = Object.keys(target.policies).length > 0;
      const spec = own ? connectionSpec(target.policies, env.global) : env.connection;
      const base = env.pools.acquire({ ...spec, origin: tr.origin });
      env.used.add(base);
      const pool = withHeaders(base, target.policies);
      dispatchers.set(target.name, pool);
      if (tr.kind === 'openapi')
        direct.set(
          target.name,
          new OpenApiConnection({
            name: target.name,
            origin: tr.origin,
            path: tr.path,
            tools: tr.tools,
            schemaUrl: tr.schemaUrl,
            dispatcher: pool,
            maxAnswerBytes: env.global.maxBufferSize,
          }),
        );
    }
    // One runtime per distinct set of targets: a reload that keeps them keeps their processes (a
    // change of authorization rules alone does too).
    const key = `mcp:${JSON.stringify(t.targets.map(({ authorization: _, ...rest }) => rest))}|${t.sessionRouting}`;
    const runtime = env.pools
      ? env.pools.keep(key, () => new McpRuntime(hashKey(key)))
      : new McpRuntime('dry-run');
    if (env.pools) env.used.add(runtime);
    else void runtime.close();
    // the ttl's sessions lose their processes when it is up, whether or not the client comes back
    runtime.setLimits({ ttlMs: env.global.mcpSessionTtlMs ?? 0 });
    const guards = t.guardrails.length > 0 ? new McpGuardrails(t.guardrails, env) : undefined;
    const fed = new Federation(t, runtime, dispatchers, env.attemptTimeoutMs, guards, direct);
    const server = new McpServer(fed, env.global.maxBufferSize, env.global.mcpSessionTtlMs);
    const first = t.targets[0];
    const where =
      first && first.transport.kind !== 'stdio'
        ? first.transport.origin.replace(/^https?:\/\//, '')
        : 'stdio';
    return {
      type: 'mcp',
      protocol: first?.transport.kind !== 'stdio' && first?.transport.tls ? 'https' : 'http',
      target: (ctx) => ctx.ext.mcp?.target ?? where,
      errorFormat: 'jsonrpc',
      call: (ctx) => server.handle(ctx),
    };
  },
};

function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/**
 * The target's calls with the headers its policies set: the backendAuth key (Authorization: Bearer
 * unless a header location says otherwise) and the requestHeaderModifier, on every call the gateway
 * makes to it (the loader refuses the policies a target does not take).
 */
function withHeaders(pool: Dispatcher, p: McpTargetIR['policies']): Dispatcher {
  const modify = p.requestHeaderModifier ? headerModifier(p.requestHeaderModifier) : undefined;
  const key = p.backendAuth && 'key' in p.backendAuth ? p.backendAuth.key : undefined;
  // the extra credentials first, so the key wins a header both name (the loader took headers only)
  const written = [
    ...(p.backendAuth?.credentials ?? []).map((c) => credentialHeader(c.location, c.value.reveal())),
    key && credentialHeader(key.location ?? AUTHORIZATION, key.value.reveal()),
  ].filter((h): h is [string, string] => h !== undefined);
  if (!modify && written.length === 0) return pool;
  return pool.compose((dispatch) => (opts, handler) => {
    const headers: Record<string, string | string[]> = { ...(opts.headers as Record<string, string>) };
    modify?.(headers);
    for (const [name, value] of written) headers[name] = value;
    return dispatch({ ...opts, headers }, handler);
  });
}
