// Every backend kind, keyed by the IR's target kind. A kind without an entry is a type error, so a
// new kind (ai, mcp, a2a, aws) is one folder here plus one line below, never a branch in the table
// (an agent kind is also exported from agent.ts).
import { requireEntry } from '../../lazy.ts';
import type * as AgentBackends from './agent.ts';
import { awsBackend } from './aws/index.ts';
import { dynamicBackend } from './dynamic/index.ts';
import { hostBackend } from './host/index.ts';
import { internalBackend } from './internal/index.ts';
import { invalidBackend } from './invalid/index.ts';
import { serviceBackend } from './service/index.ts';
import type { BackendKind, BackendKindName } from './types.ts';
import { unixBackend } from './unix/index.ts';

// The agent kinds (agent.ts, the bundle's gw-agent entry) load with the first config that has one.
let agent: typeof AgentBackends | undefined;

function agentKind<K extends 'ai' | 'mcp' | 'a2a'>(
  kind: K,
  pick: (m: typeof AgentBackends) => BackendKind<K>,
): BackendKind<K> {
  return {
    kind,
    compile(target, env) {
      agent ??= requireEntry<typeof AgentBackends>(import.meta.url, './agent.ts', 'gw-agent');
      return pick(agent).compile(target, env);
    },
  };
}

export const BACKEND_KINDS: { [K in BackendKindName]: BackendKind<K> } = {
  host: hostBackend,
  unix: unixBackend,
  dynamic: dynamicBackend,
  invalid: invalidBackend,
  internal: internalBackend,
  ai: agentKind('ai', (m) => m.aiBackend),
  mcp: agentKind('mcp', (m) => m.mcpBackend),
  a2a: agentKind('a2a', (m) => m.a2aBackend),
  aws: awsBackend,
  service: serviceBackend,
};
