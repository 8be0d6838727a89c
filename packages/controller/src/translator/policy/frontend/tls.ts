// spec.frontend.tls → tls: the handshake settings of the Gateway's TLS listeners that set none of their
// own (versions, cipher suites, key exchange groups; the names are the standalone ones), and the
// handshake's deadline and the ALPN protocols offered.
import type { MapContext } from '../context.ts';
import { defined } from '../context.ts';
import type { FrontendMapper } from '../spec.ts';

const VERSION = { TLS12: 'TLS_V1_2', TLS13: 'TLS_V1_3' } as const;

export const tls: FrontendMapper<'tls'> = {
  map(spec, ctx: MapContext, out, at) {
    ctx.rest(at.field, spec, [
      'minProtocolVersion',
      'maxProtocolVersion',
      'cipherSuites',
      'keyExchangeGroups',
      'handshakeTimeout',
      'alpnProtocols',
    ]);
    const t = defined({
      minVersion: spec.minProtocolVersion && VERSION[spec.minProtocolVersion],
      maxVersion: spec.maxProtocolVersion && VERSION[spec.maxProtocolVersion],
      cipherSuites: spec.cipherSuites && [...spec.cipherSuites],
      keyExchangeGroups: spec.keyExchangeGroups && [...spec.keyExchangeGroups],
      handshakeTimeout: spec.handshakeTimeout,
      alpn: spec.alpnProtocols && [...spec.alpnProtocols],
    });
    if (Object.keys(t).length > 0) out.tls = t;
  },
};
