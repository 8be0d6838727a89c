// The catalogue of status conditions gw writes: each condition type with the reasons it may carry and
// what each reason means. The controller builds conditions only through these names (a reason not
// listed is a type error), so this file is the list a user, a dashboard or a doc can rely on.

export const CONDITIONS = {
  Accepted: {
    Accepted: 'the object is valid and handled by gw',
    PartiallyAccepted: 'accepted without the parts the message names',
    Invalid:
      'the spec is invalid (schema, CEL, regular expression, JWKS, htpasswd …); the message names the field',
    InvalidReference: 'a reference the object needs cannot be resolved, so it is not used',
    Unsupported: 'valid, but this gw build does not implement it yet',
    UnsupportedValue: 'a field has a value gw does not support (e.g. a route filter or TLS mode)',
    UnsupportedProtocol: 'a listener protocol other than HTTP, HTTPS, TCP and TLS',
    Conflicted: 'an older policy of the same kind already sets this on the target (BackendTLSPolicy)',
    TargetNotFound: 'the target (a Service, or its port by name) does not exist (BackendTLSPolicy)',
    NotAllowed: "the parent Gateway's allowedListeners does not admit this ListenerSet",
    NoMatchingParent: 'no listener of the parent matches the sectionName/port, or none is programmed',
    NotAllowedByListeners: "no listener's allowedRoutes admits the route",
    NoMatchingListenerHostname: "no hostname of the route intersects a listener's hostname",
    HTTPRouteNotAccepted:
      'the HTTPRoutes of this parent that send to the InferencePool are not accepted (see their status)',
  },
  Attached: {
    Attached: 'the policy is part of the configuration of its target',
    PartiallyAttached: 'attached without the parts the message names',
    Invalid: 'not attached: the policy is invalid (see Accepted)',
    TargetNotFound: 'the target does not exist, is not usable or is not handled by gw',
    InvalidReference:
      'a reference of the policy itself (a Secret, a CA) cannot be resolved, so its target is not used until it does',
    Unsupported: 'the kind of target, or a sectionName on it, is not supported',
  },
  Programmed: {
    Programmed: 'every connected proxy of the Gateway acknowledged its current configuration',
    Pending: 'the configuration is ready, but no proxy has acknowledged it yet (or none is connected)',
    ConfigRejected: 'a proxy rejected the configuration (NACK); the message is the proxy error',
    Invalid: 'nothing to program: no valid listener, or the parent is not attached',
  },
  ResolvedRefs: {
    ResolvedRefs: 'every reference resolved',
    InvalidRouteKinds: 'allowedRoutes names route kinds gw does not serve',
    InvalidCertificateRef: 'a certificate reference is missing, not a Secret or not PEM',
    RefNotPermitted: 'a reference to another namespace without a ReferenceGrant there',
    BackendNotFound: 'a backend Service, port or GwBackend is missing or not usable',
    InvalidKind: 'a backendRef kind gw cannot route to',
    InvalidCACertificateRef: 'a CA certificate reference is missing, of another kind, or not PEM',
    InvalidExtensionRef:
      "an InferencePool's endpoint picker is missing, of a kind gw does not call, or not usable",
  },
  Conflicted: {
    NoConflicts: 'the listener conflicts with no other on its port (status False)',
    ProtocolConflict: 'listeners on one port disagree on the protocol (status True)',
    HostnameConflict: 'another listener on the port serves the same hostname (status True)',
  },
} as const satisfies Record<string, Record<string, string>>;

export type ConditionType = keyof typeof CONDITIONS;
/** The reasons condition type `T` may carry. */
export type Reason<T extends ConditionType> = keyof (typeof CONDITIONS)[T] & string;
