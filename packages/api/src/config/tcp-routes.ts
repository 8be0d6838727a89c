// agentgateway's `tcpRoutes` (LocalTCPRoute, and the top-level LocalAttachedTCPRoute): layer-4 routes
// of TCP and TLS listeners. A route's `hostnames` are matched against the TLS SNI; its `backends` are
// weighted host:port targets (or named host backends, or Services of the top-level services), reached
// with optional backendTLS.
//
// The shared pieces (backendTLS, the host:port pattern, the "not supported" marker) are schema.ts's;
// it passes them in, so this module does not import it back.
import { z } from 'zod';

const strict = z.strictObject;

export interface TcpRouteParts<
  TLS extends z.ZodType,
  HP extends z.ZodType,
  SR extends z.ZodType,
  BT extends z.ZodType,
> {
  backendTLS: TLS;
  /** backendTunnel: the backend reached through an HTTP forward proxy (CONNECT). */
  backendTunnel: BT;
  hostPort: HP;
  /** `{name: <namespace>/<hostname>, port}` of the top-level services. */
  serviceRef: SR;
  /** A field refused by name ("… is not supported by this build of gw yet"). */
  notYet: (what: string) => z.ZodType;
  /** A CEL expression. */
  cel: z.ZodType<string>;
}

/** A route hostname: a DNS name, or `*.` and one (the TLS SNI is matched against it). */
export const TCP_HOSTNAME_PATTERN =
  /^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

export function tcpRouteSchemas<
  TLS extends z.ZodType,
  HP extends z.ZodType,
  SR extends z.ZodType,
  BT extends z.ZodType,
>(p: TcpRouteParts<TLS, HP, SR, BT>) {
  const weight = z.number().int().min(0).optional().meta({
    description: 'relative weight among the route backends (default 1; 0: never chosen)',
  });
  const TcpBackendPolicies = strict({
    backendTLS: p.backendTLS.optional().meta({
      description: 'TLS from the gateway to the backend: the bytes the client sends are carried inside it',
    }),
    backendTunnel: p.backendTunnel.optional().meta({
      description:
        'the backend reached through an HTTP forward proxy: a CONNECT to it, then the bytes (inside backendTLS, if set)',
    }),
  });
  const TcpRouteBackend = z.union([
    strict({ host: p.hostPort, weight, policies: TcpBackendPolicies.nullable().optional() }),
    strict({
      backend: z.string().min(1).meta({ description: 'a host backend of the top-level backends list' }),
      weight,
      policies: TcpBackendPolicies.nullable().optional(),
    }),
    strict({
      service: p.serviceRef.meta({
        description:
          'a Service of the top-level services: each connection goes to one of the workloads that name it, by capacity',
      }),
      weight,
      policies: TcpBackendPolicies.nullable().optional(),
    }),
    strict({
      dynamic: strict({
        target: p.cel.nullable().optional().meta({
          description:
            'CEL giving the host:port to dial, over source.* (the client) and destination.* (address and port the connection came to; hostname: the TLS server name); unset: the server name at the port the client connected to',
        }),
      }).meta({
        description:
          'each connection dialled where it asks to go: the TLS server name (SNI) at the same port, or where dynamic.target says (an egress gateway for TLS passthrough)',
      }),
      weight,
      policies: TcpBackendPolicies.nullable().optional(),
    }),
  ]);
  const fields = {
    name: z.string().min(1).nullable().optional(),
    namespace: z.string().nullable().optional(),
    ruleName: z.string().nullable().optional(),
    hostnames: z.array(z.string().min(1)).optional().meta({
      description:
        'TLS listeners: server names (SNI) this route takes, exact or *.suffix; the most specific match wins, a route without hostnames takes the rest',
    }),
    policies: strict({
      backendTLS: p.backendTLS.optional().meta({ description: 'TLS to every backend of the route' }),
    })
      .nullable()
      .optional(),
    backends: z
      .array(TcpRouteBackend)
      .optional()
      .meta({ description: 'weighted backends the connection is sent to (none: connections are closed)' }),
  };
  const TcpRoute = strict(fields);
  const AttachedTcpRoute = strict({
    ...fields,
    gateways: z
      .union([z.string().min(1), z.array(z.string().min(1))])
      .optional()
      .meta({
        description:
          '<gateway> or <gateway>/<listener> this route attaches to (default: the gateway named default)',
      }),
  });
  return { TcpRoute, AttachedTcpRoute, TcpRouteBackend };
}
