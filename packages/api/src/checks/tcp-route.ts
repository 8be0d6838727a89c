// Checks of layer-4 listeners and their tcpRoutes: which route list a protocol takes, and route
// hostnames, which are matched against the TLS SNI (a TCP listener has no name to match).
import type { FieldPath } from '../config/source.ts';
import { TCP_HOSTNAME_PATTERN } from '../config/tcp-routes.ts';
import type { Problem } from './problem.ts';

export type ListenerProtocol = 'HTTP' | 'HTTPS' | 'TCP' | 'TLS';

/** HTTP and HTTPS listeners take `routes`, TCP and TLS listeners `tcpRoutes`. */
export function checkListenerRouteKind(
  protocol: ListenerProtocol,
  l: { routes?: unknown[] | undefined; tcpRoutes?: unknown[] | undefined },
  path: FieldPath,
): Problem[] {
  const layer4 = protocol === 'TCP' || protocol === 'TLS';
  if (layer4 && l.routes?.length)
    return [
      {
        path: [...path, 'routes'],
        message: `protocol ${protocol} takes tcpRoutes, not routes (HTTP routes need protocol HTTP or HTTPS)`,
      },
    ];
  if (!layer4 && l.tcpRoutes?.length)
    return [
      {
        path: [...path, 'tcpRoutes'],
        message: `tcpRoutes need protocol TCP or TLS, not ${protocol}`,
      },
    ];
  return [];
}

/** A tcp route's hostnames: names or `*.` wildcards, and only where there is an SNI to match. */
export function checkTcpRouteHostnames(
  protocol: ListenerProtocol,
  hostnames: readonly string[] | undefined,
  path: FieldPath,
): Problem[] {
  if (!hostnames?.length) return [];
  if (protocol === 'TCP')
    return [
      {
        path: [...path, 'hostnames'],
        message:
          'hostnames are matched against the TLS server name (SNI), which a TCP listener does not read: use protocol TLS, or leave hostnames out',
      },
    ];
  const out: Problem[] = [];
  hostnames.forEach((h, i) => {
    if (!TCP_HOSTNAME_PATTERN.test(h) || h.length > 253)
      out.push({
        path: [...path, 'hostnames', i],
        message: `invalid hostname ${JSON.stringify(h)}: expected a DNS name or *.name`,
      });
  });
  return out;
}
