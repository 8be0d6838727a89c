// The memory a config's policies share across workers, asked of each policy definition: the main
// thread allocates it once and hands the same buffers to every worker before any of them builds a route.
import type { ProxyIR } from '../config/ir.ts';
import { POLICIES } from './registry.ts';
import type { PolicyDefinition, PolicyName, SharedMemoryNeed } from './types.ts';

export function sharedMemoryOf(ir: ProxyIR): SharedMemoryNeed[] {
  const out: SharedMemoryNeed[] = [];
  for (const b of ir.binds) {
    for (const l of b.listeners) {
      for (const r of l.routes) {
        for (const [name, config] of Object.entries(r.policies)) {
          // Fields without a definition here (backendTLS) are the upstream's, never shared.
          const def = POLICIES[name as PolicyName] as PolicyDefinition<PolicyName> | undefined;
          if (config === undefined || !def?.sharedMemory) continue;
          out.push(...def.sharedMemory(config as never, { route: r.key }));
        }
      }
    }
  }
  return out;
}
