// How OTLP exports reach their collector beyond its URL (the policies on a tracing or accessLog.otlp
// collector): TLS with a private CA, a client certificate and the name checked, and the headers, a key
// among them, sent with each export. Loaded with the exporters (otel-export.ts, otel-logs.ts), lazily.

import type { AgentOptions } from 'node:https';
import { createSecureContext, type PeerCertificate } from 'node:tls';
import { ChannelCredentials, Metadata } from '@grpc/grpc-js';
import type { CollectorConnectionIR } from '../config/ir.ts';
import { serviceHeadersOf } from '../policies/service-call.ts';
import { tlsConnectOptions } from '../upstream/pools.ts';

/** The headers of each export: `base`, then the policies' headers and the key's header. */
export function exportHeaders(
  c: CollectorConnectionIR,
  base: Record<string, string> = {},
): Record<string, string> {
  return { ...base, ...serviceHeadersOf(c) };
}

/** Headers as gRPC metadata (lower-case keys, as gRPC requires). */
export function grpcMetadata(headers: Record<string, string>): Metadata {
  const m = new Metadata();
  for (const [k, v] of Object.entries(headers)) m.set(k.toLowerCase(), v);
  return m;
}

type CheckIdentity = (host: string, cert: PeerCertificate) => Error | undefined;

/**
 * The gRPC channel's TLS when backendTLS is set (undefined: the URL's scheme decides). The name
 * checked is backendTLS's (hostname, subjectAltNames); the SNI stays the URL's host, as gRPC sets it.
 */
export function grpcCredentials(c: CollectorConnectionIR): ChannelCredentials | undefined {
  if (!c.tls) return undefined;
  const o = tlsConnectOptions(c.tls, true);
  const context = createSecureContext({
    ...(o.ca ? { ca: o.ca as string } : {}),
    ...(o.cert ? { cert: o.cert as string } : {}),
    ...(o.key ? { key: o.key as string } : {}),
    ...(o.ecdhCurve ? { ecdhCurve: o.ecdhCurve as string } : {}),
  });
  return ChannelCredentials.createFromSecureContext(context, {
    ...(o.checkServerIdentity ? { checkServerIdentity: o.checkServerIdentity as CheckIdentity } : {}),
    ...(o.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
  });
}

/** The OTLP/HTTP exporter's agent options when backendTLS is set (undefined: the SDK's own agent). */
export function httpAgentOptions(c: CollectorConnectionIR): AgentOptions | undefined {
  if (!c.tls) return undefined;
  // OTLP/HTTP is HTTP/1.1: no ALPN to offer
  const { ALPNProtocols: _, ...o } = tlsConnectOptions(c.tls, false);
  return { keepAlive: true, ...o } as AgentOptions;
}
