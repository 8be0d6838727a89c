// A backend on a unix domain socket (`host: unix:/path`).
import { GwError } from '../../../errors.ts';
import { callUpstream } from '../../call.ts';
import { upgradeTarget, upgradeUpstream } from '../../upgrade.ts';
import type { BackendKind } from '../types.ts';

export const unixBackend: BackendKind<'unix'> = {
  kind: 'unix',
  compile(t, env) {
    const endpoint = `unix:${t.path}`;
    const dispatcher = env.pools?.acquire({
      ...env.connection,
      origin: 'http://localhost',
      socketPath: t.path,
    });
    if (dispatcher) env.used.add(dispatcher);
    const timeout = env.attemptTimeoutMs;
    const upgrade = upgradeTarget(endpoint, env.connection, t.path);
    return {
      type: 'unix',
      protocol: env.connection.tls ? 'https' : 'http',
      target: () => endpoint,
      call: (ctx) => {
        if (!dispatcher) throw new GwError('GW_ERR_INTERNAL');
        return callUpstream(ctx, { dispatcher, endpoint }, timeout);
      },
      upgrade: (ctx) => upgradeUpstream(ctx, upgrade, timeout),
      ...(dispatcher ? { probe: { dispatcher, origin: 'http://localhost', host: 'localhost' } } : {}),
    };
  },
};
