// Dynamic forward proxy: each request goes to its own authority, or where dynamic.target's CEL says
// (see targets.ts).
import { compileCel } from '../../../cel/cel.ts';
import { GwError } from '../../../errors.ts';
import { callUpstream } from '../../call.ts';
import { upgradeTarget, upgradeUpstream } from '../../upgrade.ts';
import type { BackendKind } from '../types.ts';
import { DynamicTargets } from './targets.ts';

export const dynamicBackend: BackendKind<'dynamic'> = {
  kind: 'dynamic',
  compile(t, env) {
    // a CEL that does not compile was refused at load
    const dial = t.target ? compileCel(t.target) : undefined;
    const targets = env.pools ? new DynamicTargets(env.pools, env.connection, env.used, dial) : null;
    const timeout = env.attemptTimeoutMs;
    return {
      type: 'dynamic',
      protocol: env.connection.tls ? 'https' : 'http',
      target: (ctx) => {
        if (!targets) return typeof ctx.headers.host === 'string' ? ctx.headers.host : ctx.authority;
        try {
          return targets.destination(ctx);
        } catch {
          return '';
        }
      },
      call: async (ctx) => {
        if (!targets) throw new GwError('GW_ERR_INTERNAL');
        await callUpstream(ctx, targets.forRequest(ctx), timeout);
      },
      upgrade: async (ctx) => {
        if (!targets) throw new GwError('GW_ERR_INTERNAL');
        // The same destination (and its checks) as a request; the pool itself is not used.
        const { endpoint } = targets.forRequest(ctx);
        await upgradeUpstream(ctx, upgradeTarget(endpoint, env.connection), timeout);
      },
    };
  },
};
