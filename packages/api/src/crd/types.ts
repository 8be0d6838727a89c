// The spec's shared scalar types and reference types ("Shared scalar types", "Reference types"). Each
// is defined once here and used by every kind and by the standalone config, so a limit or a pattern
// has one wording everywhere.
import { z } from 'zod';
import { DURATION_PATTERN } from '../duration.ts';
import { HEADER_NAME_SOURCE } from '../header-name.ts';
import { exactlyOne, obj, type Rule, rules } from './kube.ts';

/** The words every field this build refuses by name is refused with (CRD descriptions, controller status). */
export const notBuiltMessage = (what: string) => `${what} is not supported by this build of gw yet`;
/**
 * An agentgateway field this build accepts in the CRD (the API server and the runtime validator check
 * its shape) but does not implement: its description says so, hack/compat.ts counts it as
 * "not supported", and the controller names it in the policy's status.
 */
export function notBuilt<T extends z.ZodType>(schema: T, what = 'this field'): T {
  return schema.meta({ ...(schema.meta() ?? {}), description: notBuiltMessage(what) }) as T;
}

export const TinyString = z.string().min(1).max(64);
export const ShortString = z.string().min(1).max(256);
export const LongString = z.string().min(1).max(1024);
export const CELExpression = z
  .string()
  .min(1)
  .max(16384)
  .meta({ description: 'A CEL expression (at most 16384 characters).' });

export const DURATION_MESSAGE =
  'must be a duration: 1 to 4 groups of 1-5 digits, each followed by h, m, s or ms (e.g. 30s, 1m30s, 250ms)';
export const Duration = rules(
  z.string().max(32).meta({ description: 'A duration such as 30s, 1m30s or 250ms.' }),
  { rule: `self.matches('${DURATION_PATTERN}')`, message: DURATION_MESSAGE },
);

/** The largest body the data plane buffers; a ByteSize must fit below it. */
export const BYTE_SIZE_MAX = '4Gi';
export const BYTE_SIZE_MESSAGE = `must be a size in bytes such as 1048576, 512Ki or 2Mi, at most ${BYTE_SIZE_MAX}`;
export const ByteSize = rules(
  z.string().min(1).max(32).meta({ description: 'A size in bytes as a Kubernetes quantity, e.g. 2Mi.' }),
  {
    rule: `isQuantity(self) && !quantity(self).isLessThan(quantity('0')) && !quantity(self).isGreaterThan(quantity('${BYTE_SIZE_MAX}'))`,
    message: BYTE_SIZE_MESSAGE,
  },
);

/**
 * ByteSize as agentgateway's CRDs write it: a quantity string or a plain number of bytes
 * (x-kubernetes-int-or-string). The spec calls ByteSize a quantity string; a number is the same
 * quantity, so both are accepted, with ByteSize's limits.
 */
export const IntOrByteSize = rules(
  z.union([z.int(), z.string().min(1).max(32)]).meta({
    'x-kubernetes-int-or-string': true,
    maxLength: 32,
    description: 'A size in bytes: a number, or a Kubernetes quantity such as 2Mi.',
  }),
  {
    // the runtime CEL sees a JSON number as a double, the API server as an int: test for string
    rule: `type(self) == string ? (isQuantity(self) && !quantity(self).isLessThan(quantity('0')) && !quantity(self).isGreaterThan(quantity('${BYTE_SIZE_MAX}'))) : (self >= 0 && self <= ${4 * 2 ** 30})`,
    message: BYTE_SIZE_MESSAGE,
  },
);

export const SNI_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const SNI = z.string().min(1).max(253).regex(new RegExp(SNI_PATTERN));

export const HEADER_NAME_PATTERN = HEADER_NAME_SOURCE;
export const HeaderName = z.string().min(1).max(256).regex(new RegExp(HEADER_NAME_PATTERN));

/** A header value: no line break or NUL, which no HTTP message can carry (RFC 9110 §5.5). */
export const HEADER_VALUE_PATTERN = '^[^\\r\\n\\x00]*$';
export const HEADER_VALUE_MESSAGE =
  'a header value cannot hold a line break or NUL (a value read from a file or variable may end with a newline)';
export const HeaderValueText = z.string().regex(new RegExp(HEADER_VALUE_PATTERN), HEADER_VALUE_MESSAGE);

export const Port = z.int().min(1).max(65535);

/** A DNS label style name (sectionName of a targetRef, listener names). */
export const SECTION_NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const SectionName = z.string().min(1).max(253).regex(new RegExp(SECTION_NAME_PATTERN));
export const ObjectName = z.string().min(1).max(253);
export const Group = z.string().max(253);
export const Kind = z.string().min(1).max(63);

export const Labels = z.record(z.string().max(317), z.string().max(63));

// ---------- references ----------
export const LocalSecretObjectRef = obj({
  group: Group.optional().meta({ description: 'Empty means the core group.' }),
  kind: Kind.optional().meta({ description: 'Empty means Secret.' }),
  name: ObjectName.meta({ description: "Name of the Secret, in the resource's own namespace." }),
});
export const LocalSecretKeyRef = obj({
  group: Group.optional().meta({ description: 'Empty means the core group.' }),
  kind: Kind.optional().meta({ description: 'Empty means Secret.' }),
  name: ObjectName.meta({ description: "Name of the Secret, in the resource's own namespace." }),
  key: z
    .string()
    .min(1)
    .max(253)
    .optional()
    .meta({ description: 'Key in the object; each use has a default.' }),
});

export const BACKEND_NAMESPACE_DESCRIPTION =
  "Namespace of the referent; default the resource's own. A Service in another namespace needs a ReferenceGrant there that lets this resource's kind (GwPolicy, GwBackend or GwModel) refer to it.";
export const LocalBackendObjectReference = rules(
  obj({
    group: Group.default('').meta({
      description: "API group of the referent; '' (the default) is the core group.",
    }),
    kind: Kind.default('Service').meta({ description: 'Kind of the referent. Default: Service.' }),
    name: ObjectName.meta({ description: 'Name of the referent.' }),
    namespace: z
      .string()
      .min(1)
      .max(63)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .optional()
      .meta({ description: BACKEND_NAMESPACE_DESCRIPTION }),
    port: Port.optional().meta({
      description: 'Port of the Service to call; required when the referent is a Service.',
    }),
  }),
  {
    rule: "!(self.group == '' && self.kind == 'Service') || has(self.port)",
    message: 'port is required when the backend is a Service',
  },
);

export const LocalCACertificateRef = obj({
  name: ObjectName.meta({ description: "Name of the ConfigMap or Secret, in the resource's own namespace." }),
  kind: z
    .enum(['ConfigMap', 'Secret'])
    .default('ConfigMap')
    .meta({ description: 'Where the PEM CA bundle is kept, under the key ca.crt. Default: ConfigMap.' }),
});

export const URL_PATTERN = '^https?://[^/@?# ]+(/[^ ]*)?$';
export const URL_MESSAGE = 'url must be http(s)://host[:port][/path] without userinfo';
export const Url = rules(LongString, { rule: `self.matches('${URL_PATTERN}')`, message: URL_MESSAGE });

/** An endpoint reached either through a backend reference or by a URL (opaque: no service policies). */
export function remoteEndpoint<S extends z.ZodRawShape>(extra: S, more: Rule[] = []) {
  return rules(
    obj({
      backendRef: LocalBackendObjectReference.optional().meta({
        description: 'The Service (or other backend) to call; set this or url.',
      }),
      url: Url.optional().meta({
        description:
          'The endpoint by URL instead of backendRef: http(s)://host[:port][/path]; https uses TLS with the system roots. A URL gets no service policies or load balancing.',
      }),
      ...extra,
    }),
    exactlyOne(['backendRef', 'url']),
    ...more,
  );
}
export const RemoteEndpoint = remoteEndpoint({});

/** Where a credential is read from; the default is the Authorization header with a scheme prefix. */
export const CredentialLocation = rules(
  obj({
    header: obj({
      name: HeaderName.meta({ description: 'Name of the request header that carries the credential.' }),
      prefix: ShortString.optional().meta({
        description: 'Text that comes before the credential in the header value, e.g. "Bearer ".',
      }),
    })
      .optional()
      .meta({ description: 'Read the credential from a request header.' }),
    queryParameter: obj({
      name: ShortString.meta({ description: 'Name of the query parameter.' }),
    })
      .optional()
      .meta({ description: 'Read the credential from a query parameter of the request URL.' }),
    cookie: obj({ name: ShortString.meta({ description: 'Name of the cookie.' }) })
      .optional()
      .meta({ description: 'Read the credential from a cookie.' }),
    expression: CELExpression.optional().meta({
      description: 'CEL over the request giving the credential, for places the other forms cannot name.',
    }),
  }),
  exactlyOne(['header', 'queryParameter', 'cookie', 'expression']),
);

export const Condition = obj({
  type: z.string().min(1).max(316),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.int().min(0).optional(),
  lastTransitionTime: z.string(),
  reason: z.string().min(1).max(1024),
  message: z.string().max(32768),
});
/** Conditions as Kubernetes lists them: keyed by type, at most 8. */
export const Conditions = z
  .array(Condition)
  .max(8)
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });

export const ParentReference = obj({
  group: Group.optional(),
  kind: Kind.optional(),
  namespace: z.string().min(1).max(63).optional(),
  name: ObjectName,
  sectionName: SectionName.optional(),
  port: Port.optional(),
});
