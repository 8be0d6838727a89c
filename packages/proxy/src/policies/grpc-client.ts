// The gRPC channels of the policy services (ext_authz, ext_proc, the rate limit service): one per
// address and TLS setting, shared by every route and kept across config reloads, so a reload does not
// reconnect. A restarted service is retried within seconds, not grpc-js's 2 minutes. With backendTLS
// the channel is TLS: the CA, client certificate, SNI and names verified as for backends. A service
// given as a Service of `services` comes as grpc-js's list of its workloads' addresses with the
// Service as authority (ipv4://svc:port/a:p,b:p), balanced round robin: one channel per Service,
// which a config that changes its workloads replaces. Loaded with grpc-js, only by the lazily loaded
// modules of those policies.
import { checkServerIdentity, createSecureContext, type PeerCertificate } from 'node:tls';
import { type ChannelCredentials, Client, credentials } from '@grpc/grpc-js';
import type { BackendTlsIR } from '../config/ir.ts';
import { dispatcherKey } from '../upstream/in-turn.ts';

/** By address (and TLS), or for a Service by its name (and TLS), with the target it was made for. */
const clients = new Map<string, { target: string; client: Client }>();

/** grpc-js spreads the calls of a channel given several addresses over all of them. */
const ROUND_ROBIN = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });
/** A Service's workloads, as config/load.ts grpcService writes them: scheme, authority, addresses. */
const SERVICE_TARGET = /^(?:ipv4|ipv6):\/\/([^/]+)\/(.+)$/;
/** How long a replaced Service channel stays open for the calls the previous config started. */
const REPLACED_CLOSE_MS = 60_000;

/**
 * The channel to `host` (host:port, or a Service's ipv4:// / ipv6:// address list), in plain text or
 * with `tls`. `connect`: dial now, not on first call.
 */
export function grpcClient(host: string, tls: BackendTlsIR | undefined, connect = false): Client {
  const service = SERVICE_TARGET.exec(host);
  const name = service ? `service ${service[1]}` : host;
  const key = tls ? `${name} ${dispatcherKey(tls)}` : name;
  const held = clients.get(key);
  if (held?.target === host) return held.client;
  if (held) {
    // the Service's workloads changed: calls already made on the old channel may finish
    const old = held.client;
    setTimeout(() => old.close(), REPLACED_CLOSE_MS).unref();
  }
  const options: Record<string, string | number> = {
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 2_000,
  };
  // SNI and the name verified: backendTLS.hostname instead of the host dialled.
  if (tls?.hostname) options['grpc.ssl_target_name_override'] = tls.hostname;
  if (service) {
    // :authority is the Service's name, not the first address grpc-js would name
    options['grpc.default_authority'] = service[1] as string;
    if (service[2]?.includes(',')) options['grpc.service_config'] = ROUND_ROBIN;
  }
  const client = new Client(host, tls ? tlsCredentials(tls) : credentials.createInsecure(), options);
  // The first request should not pay for the handshake inside its short deadline.
  if (connect) client.getChannel().getConnectivityState(true);
  clients.set(key, { target: host, client });
  return client;
}

/** backendTLS as grpc-js credentials: the same material and verification rules as backend TLS. */
function tlsCredentials(tls: BackendTlsIR): ChannelCredentials {
  const context = createSecureContext({
    ...(tls.root ? { ca: tls.root } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key.reveal() } : {}),
    ...(tls.ecdhCurve ? { ecdhCurve: tls.ecdhCurve } : {}),
  });
  let verify: ((host: string, cert: PeerCertificate) => Error | undefined) | undefined;
  if (tls.insecureHost) verify = () => undefined;
  else if (tls.subjectAltNames) {
    const wanted = tls.subjectAltNames;
    verify = (_host, cert) =>
      wanted.some((name) => checkServerIdentity(name, cert) === undefined)
        ? undefined
        : new Error(`certificate does not match any of subjectAltNames ${wanted.join(', ')}`);
  }
  return credentials.createFromSecureContext(context, {
    ...(tls.insecure ? { rejectUnauthorized: false } : {}),
    ...(verify ? { checkServerIdentity: verify } : {}),
  });
}
