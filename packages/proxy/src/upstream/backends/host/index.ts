// A backend at host:port, over one keep-alive pool shared by every route that names it.

import { hostPort } from '@gw/api/runtime';
import { GwError } from '../../../errors.ts';
import { callUpstream, hostHeaderOf } from '../../call.ts';
import { upgradeTarget, upgradeUpstream } from '../../upgrade.ts';
import type { BackendKind } from '../types.ts';

export const hostBackend: BackendKind<'host'> = {
  kind: 'host',
  compile(t, env) {
    const tls = env.connection.tls !== undefined;
    const endpoint = hostPort(t.host, t.port);
    const dispatcher = env.pools?.acquire({
      ...env.connection,
      origin: `${tls ? 'https' : 'http'}://${endpoint}`,
    });
    if (dispatcher) env.used.add(dispatcher);
    const timeout = env.attemptTimeoutMs;
    const hostHeader = t.rewriteHost ? hostHeaderOf(t.host, t.port, tls) : undefined;
    const upgrade = { ...upgradeTarget(endpoint, env.connection), hostHeader };
    return {
      type: 'static',
      protocol: tls ? 'https' : 'http',
      target: () => endpoint,
      endpoint,
      call: (ctx) => {
        if (!dispatcher) throw new GwError('GW_ERR_INTERNAL');
        return callUpstream(ctx, { dispatcher, endpoint, hostHeader }, timeout);
      },
      upgrade: (ctx) => upgradeUpstream(ctx, upgrade, timeout),
      ...(dispatcher
        ? { probe: { dispatcher, origin: `${tls ? 'https' : 'http'}://${endpoint}`, host: endpoint } }
        : {}),
    };
  },
};
