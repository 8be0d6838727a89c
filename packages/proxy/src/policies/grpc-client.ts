// The gRPC channels of the policy services (ext_authz, ext_proc, the rate limit service): one per
// address and TLS setting, shared by every route and kept across config reloads, so a reload does not
// reconnect. A restarted service is retried within seconds, not grpc-js's 2 minutes. With backendTLS
// the channel is TLS: the CA, client certificate, SNI and names verified as for backends. A service
// given as a Service of `services` comes as grpc-js's list of its workloads' addresses
// (ipv4:a:p,b:p), balanced round robin. Loaded with grpc-js, only by the lazily loaded modules of
// those policies.
import { createHash } from 'node:crypto';
import { checkServerIdentity, createSecureContext, type PeerCertificate } from 'node:tls';
import { type ChannelCredentials, Client, credentials } from '@grpc/grpc-js';
import type { BackendTlsIR } from '../config/ir.ts';

const clients = new Map<string, Client>();

/** grpc-js spreads the calls of a channel given several addresses over all of them. */
const ROUND_ROBIN = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/**
 * The channel to `host` (host:port, or an ipv4:/ipv6: address list), in plain text or with `tls`.
 * `connect`: dial now, not on first call.
 */
export function grpcClient(host: string, tls: BackendTlsIR | undefined, connect = false): Client {
  const key = tls ? `${host} ${tlsFingerprint(tls)}` : host;
  let c = clients.get(key);
  if (!c) {
    const options: Record<string, string | number> = {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    };
    // SNI and the name verified: backendTLS.hostname instead of the host dialled.
    if (tls?.hostname) options['grpc.ssl_target_name_override'] = tls.hostname;
    if (host.includes(',')) options['grpc.service_config'] = ROUND_ROBIN;
    c = new Client(host, tls ? tlsCredentials(tls) : credentials.createInsecure(), options);
    // The first request should not pay for the handshake inside its short deadline.
    if (connect) c.getChannel().getConnectivityState(true);
    clients.set(key, c);
  }
  return c;
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

function tlsFingerprint(tls: BackendTlsIR): string {
  const material = { ...tls, key: tls.key?.reveal() };
  return createHash('sha256').update(JSON.stringify(material)).digest('base64url');
}
