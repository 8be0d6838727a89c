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
    // gRPC is HTTP/2 only: a backend whose http.version says nothing gets gRPC requests over HTTP/2
    // (h2c in plain text, h2 by ALPN over TLS) rather than an HTTP/1.1 call it cannot answer, as
    // agentgateway's follow the client's HTTP/2. Other requests keep HTTP/1.1.
    const c = env.connection;
    const grpc =
      dispatcher && !c.versionSet && !c.allowH2 && !c.tunnel && !c.socketPath
        ? env.pools?.acquire({
            ...c,
            origin: `${tls ? 'https' : 'http'}://${endpoint}`,
            allowH2: true,
            ...(tls ? {} : { h2c: true }),
          })
        : undefined;
    if (grpc) env.used.add(grpc);
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
        const via = grpc && isGrpc(ctx.headers['content-type']) ? grpc : dispatcher;
        return callUpstream(ctx, { dispatcher: via, endpoint, hostHeader }, timeout);
      },
      upgrade: (ctx) => upgradeUpstream(ctx, upgrade, timeout),
      ...(dispatcher
        ? { probe: { dispatcher, origin: `${tls ? 'https' : 'http'}://${endpoint}`, host: endpoint } }
        : {}),
    };
  },
};

/** gRPC's own content types (`application/grpc`, `+proto`, `;charset…`), not gRPC-Web's. */
function isGrpc(type: string | string[] | undefined): boolean {
  if (typeof type !== 'string' || !type.startsWith('application/grpc')) return false;
  const rest = type.charAt(16);
  return rest === '' || rest === '+' || rest === ';';
}
