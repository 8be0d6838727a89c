// spec.backend.tls (or GwBackend spec.policies.tls) → backendTLS: client certificate and CA from
// Secrets/ConfigMaps, SNI, names to verify, ALPN, key exchange groups. Missing or non-PEM material
// fails closed: the backend is not used rather than reached with weaker TLS than asked for. A key
// exchange group the TLS library lacks makes the policy Invalid (checkBackendPolicies, as standalone).
import { decodeBase64, defined, isPem, isSecretRef, type MapContext, quote, readKey } from '../context.ts';
import type { BackendMapper, BackendPolicies, BackendSpec } from '../spec.ts';

type BackendTlsSpec = NonNullable<BackendSpec['tls']>;
type BackendTLS = NonNullable<BackendPolicies['backendTLS']>;

export const tls: BackendMapper<'tls'> = {
  map(spec, ctx, out, at) {
    const r = backendTls(ctx, at.field, spec);
    out.backendTLS = r.policy;
    if (r.failClosed) ctx.failClosed = true;
  },
};

/** A CRD `tls` block as the standalone backendTLS; failClosed: material missing, or asked for SPIFFE. */
export function backendTls(
  ctx: MapContext,
  field: string,
  spec: BackendTlsSpec,
): { policy: BackendTLS; failClosed: boolean } {
  ctx.rest(field, spec, [
    'certificateSource',
    'mtlsCertificateRef',
    'caCertificateRefs',
    'insecureSkipVerify',
    'sni',
    'verifySubjectAltNames',
    'alpnProtocols',
    'keyExchangeGroups',
  ]);
  let failClosed = false;
  if (spec.certificateSource === 'SPIFFE') {
    ctx.unsupported(`${field}.certificateSource SPIFFE`);
    failClosed = true;
  }
  const out: BackendTLS = defined({
    hostname: spec.sni,
    insecure: spec.insecureSkipVerify === 'All' ? true : undefined,
    insecureHost: spec.insecureSkipVerify === 'Hostname' ? true : undefined,
    subjectAltNames: spec.verifySubjectAltNames && [...spec.verifySubjectAltNames],
    alpn: spec.alpnProtocols && [...spec.alpnProtocols],
    // the same names; one the TLS library lacks is refused by checkBackendPolicies (Invalid)
    keyExchangeGroups: spec.keyExchangeGroups && [...spec.keyExchangeGroups],
  });
  let root: string | undefined;
  const mtls = spec.mtlsCertificateRef?.[0];
  if (mtls) {
    const mf = `${field}.mtlsCertificateRef[0]`;
    if (isSecretRef(ctx, mf, mtls)) {
      const cert = readKey(ctx, mf, 'Secret', mtls.name, 'tls.crt');
      const key = readKey(ctx, mf, 'Secret', mtls.name, 'tls.key');
      const what = (k: string) => `secret ${quote(mtls.name)} key ${quote(k)}`;
      if (
        cert !== undefined &&
        key !== undefined &&
        isPem(ctx, mf, what('tls.crt'), cert) &&
        isPem(ctx, mf, what('tls.key'), key)
      ) {
        out.cert = cert;
        out.key = key;
      } else failClosed = true;
      // ca.cert is optional, and caCertificateRefs takes priority over it
      const ca = ctx.lookup.get('Secret', ctx.namespace, mtls.name)?.data?.['ca.cert'];
      if (ca !== undefined && !spec.caCertificateRefs?.length) {
        const text = decodeBase64(ca);
        if (isPem(ctx, mf, what('ca.cert'), text)) root = text;
        else failClosed = true;
      }
    } else failClosed = true;
  }
  const caRef = spec.caCertificateRefs?.[0];
  if (caRef) {
    const cf = `${field}.caCertificateRefs[0]`;
    const text = readKey(ctx, cf, caRef.kind, caRef.name, 'ca.crt');
    if (
      text !== undefined &&
      isPem(ctx, cf, `${caRef.kind.toLowerCase()} ${quote(caRef.name)} key "ca.crt"`, text)
    )
      root = text;
    else failClosed = true;
  }
  if (root !== undefined) out.root = root;
  return { policy: out, failClosed };
}
