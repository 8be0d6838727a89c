// GwParameters: how the controller provisions a Gateway's data plane (workload, image, logging, mesh
// identity, resources), referenced by a GatewayClass or a Gateway, plus strategic-merge-patch
// overlays of the generated objects. Spec: "GwParameters (data-plane provisioning) fields".
import { z } from 'zod';
import { JsonObject, mapList, maxEntries, obj, rules, setList } from './kube.ts';
import {
  Conditions,
  Labels,
  LongString,
  notBuilt,
  ObjectName,
  ShortString,
  SNI,
  URL_PATTERN,
} from './types.ts';

// ---------- logging ----------
const LOG_LEVEL = '(off|error|warn|info|debug|trace)';
const LOG_TARGET = '[A-Za-z_][-A-Za-z0-9_]*(::[A-Za-z_][-A-Za-z0-9_]*)*';
const LOG_DIRECTIVE = `(${LOG_LEVEL}|${LOG_TARGET}(=${LOG_LEVEL})?)`;
/** RUST_LOG directives: a default level and/or target=level pairs, comma separated. */
export const LOG_LEVEL_PATTERN = `^${LOG_DIRECTIVE}(,${LOG_DIRECTIVE})*$`;
export const Logging = obj({
  level: rules(
    ShortString.default('info').meta({ description: 'RUST_LOG syntax, e.g. info or info,gw::proxy=debug.' }),
    {
      rule: `self.matches('${LOG_LEVEL_PATTERN}')`,
      message:
        'must be RUST_LOG directives separated by commas: a level (off, error, warn, info, debug, trace) or target=level, e.g. info,gw::proxy=debug',
    },
  ),
  format: z.enum(['json', 'text']).default('text'),
});

// ---------- image and container ----------
/** A container image tag as registries accept it. */
export const IMAGE_TAG_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$';
/** An OCI content digest: algorithm:hex (sha256:<64 hex digits>, …). */
export const IMAGE_DIGEST_PATTERN = '^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$';
export const Image = obj({
  registry: ShortString.optional().meta({ description: 'e.g. ghcr.io or registry.example.com:5000.' }),
  repository: ShortString.optional(),
  tag: z.string().min(1).max(128).regex(new RegExp(IMAGE_TAG_PATTERN)).optional(),
  digest: z
    .string()
    .max(256)
    .regex(new RegExp(IMAGE_DIGEST_PATTERN))
    .optional()
    .meta({ description: 'e.g. sha256:…; the image is then pulled by digest (registry/repository@digest).' }),
  pullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
});

export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
export const EnvVar = rules(
  obj({
    name: z.string().min(1).max(256).regex(new RegExp(ENV_NAME_PATTERN)),
    value: z.string().max(32768).optional(),
    valueFrom: JsonObject.optional().meta({
      description: 'A Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, fieldRef, resourceFieldRef).',
    }),
  }),
  {
    rule: '!has(self.value) || !has(self.valueFrom)',
    message: 'at most one of value or valueFrom may be set',
  },
);

/** Quantity strings (500m, 1Gi) or plain integers, as in a container's resources. */
const ResourceList = rules(
  maxEntries(
    z.record(
      z.string().min(1).max(253),
      z.union([z.int(), z.string().max(64)]).meta({ 'x-kubernetes-int-or-string': true, maxLength: 64 }),
    ),
    16,
  ),
  {
    rule: "self.all(k, type(self[k]) != string || (isQuantity(self[k]) && !quantity(self[k]).isLessThan(quantity('0'))))",
    message: 'values must be non-negative quantities such as 500m, 2 or 1Gi',
  },
);
export const Resources = obj({
  limits: ResourceList.optional(),
  requests: ResourceList.optional(),
  claims: mapList(
    z
      .array(
        obj({
          name: z
            .string()
            .min(1)
            .max(253)
            .meta({ description: "An entry of the pod's spec.resourceClaims." }),
          request: z.string().min(1).max(253).optional(),
        }),
      )
      .max(16),
    ['name'],
  )
    .optional()
    .meta({
      description:
        'Dynamic resource claims the proxy container uses (pod.spec.resourceClaims entries, which a deployment overlay adds).',
    }),
});

/** Seconds, as agentgateway's CRD counts them (at most a year). */
const ShutdownSeconds = z.int().min(0).max(31536000);
export const Shutdown = rules(
  obj({
    min: ShutdownSeconds.optional().meta({
      description: 'Seconds the proxy keeps draining at least after SIGTERM.',
    }),
    max: ShutdownSeconds.optional().meta({
      description: 'Seconds after which the proxy exits at the latest.',
    }),
  }),
  {
    rule: '!has(self.min) || !has(self.max) || self.min <= self.max',
    message: 'shutdown.min must not be above shutdown.max',
  },
);

// ---------- identity ----------
const absolutePath = (field: string) => ({
  rule: "self.startsWith('/')",
  message: `${field} must be an absolute path`,
});

export const Istio = obj({
  enabled: z.boolean().default(false),
  caAddress: rules(LongString, {
    rule: `self.matches('${URL_PATTERN}')`,
    message: 'caAddress must be http(s)://host[:port][/path] without userinfo',
  }).default('https://istiod.istio-system.svc:15012'),
  trustDomain: SNI.default('cluster.local'),
  additionalTrustDomains: setList(z.array(SNI).max(16)).optional(),
  clusterId: ShortString.default('Kubernetes'),
  network: ShortString.optional(),
});

export const Spiffe = obj({
  enabled: z.boolean().default(false),
  trustDomain: SNI.optional().meta({ description: 'Default: the trust domain of the workload API.' }),
  socketPath: rules(LongString, absolutePath('socketPath'))
    .optional()
    .meta({ description: 'Unix socket of the SPIFFE workload API, e.g. /run/spire/sockets/agent.sock.' }),
  source: notBuilt(
    rules(
      obj({
        csi: obj({ driver: ShortString.optional() }).optional(),
        hostPath: obj({ path: rules(LongString, absolutePath('hostPath.path')) }).optional(),
        mountPath: rules(LongString, absolutePath('mountPath')).optional(),
        socketName: ShortString.optional(),
      }),
      { rule: '!has(self.csi) || !has(self.hostPath)', message: 'at most one of csi or hostPath may be set' },
    ).optional(),
    'spiffe.source (the volume of the workload API socket)',
  ),
});

export const ModelCatalog = obj({
  enabled: z.boolean().default(true),
  configMapRef: obj({
    name: ObjectName,
    key: z.string().min(1).max(253).default('catalog.yaml'),
  })
    .optional()
    .meta({
      description: 'A ConfigMap in the namespace of the Gateway whose key holds extra catalog entries.',
    }),
  sources: notBuilt(
    z
      .array(
        obj({
          configMap: obj({
            name: ObjectName,
            key: z.string().min(1).max(253).default('catalog.json'),
          }).optional(),
        }),
      )
      .max(16)
      .optional(),
    "modelCatalog.sources (agentgateway's model cost catalogs)",
  ),
}).meta({ description: 'Only effective on Gateway-level parameters; ignored on GatewayClass parameters.' });

// ---------- overlays ----------
export const Overlay = obj({
  metadata: obj({
    labels: maxEntries(Labels, 64).optional(),
    annotations: maxEntries(z.record(z.string().min(1).max(317), z.string().max(65536)), 64).optional(),
  }).optional(),
  spec: JsonObject.optional().meta({
    description:
      'Merged into the generated object with strategic-merge-patch semantics; $patch: delete and $patch: replace directives are honored.',
  }),
}).meta({
  description: 'Merge order: class typed fields, gateway typed fields, class overlays, gateway overlays.',
});

// ---------- spec ----------
export const GwParametersSpec = rules(
  obj({
    workload: obj({
      kind: z.enum(['Deployment', 'DaemonSet']).optional().meta({ description: 'Deployment when unset.' }),
    })
      .optional()
      .meta({ description: "The kind of the data plane's workload." }),
    logging: Logging.optional(),
    rawConfig: JsonObject.optional().meta({
      description: 'Merged into the generated proxy configuration; typed fields win.',
    }),
    image: Image.optional(),
    env: z.array(EnvVar).max(64).optional().meta({
      description:
        'Setting SESSION_KEY takes precedence over the per-Gateway session key the controller manages.',
    }),
    resources: Resources.optional(),
    shutdown: Shutdown.optional(),
    istio: Istio.optional(),
    spiffe: Spiffe.optional(),
    modelCatalog: ModelCatalog.optional(),
    deployment: Overlay.optional(),
    daemonSet: Overlay.optional(),
    service: Overlay.optional(),
    serviceAccount: Overlay.optional(),
    podDisruptionBudget: Overlay.optional(),
    horizontalPodAutoscaler: Overlay.optional().meta({
      description:
        "Creates a HorizontalPodAutoscaler (autoscaling/v2) for the proxy's Deployment, its scaleTargetRef set to it (min 1, max 1 replica unless spec says); metadata and spec are merged into it as an overlay. The Deployment then leaves replicas to it.",
    }),
  }),
  {
    rule: "!has(self.horizontalPodAutoscaler) || !has(self.workload) || !has(self.workload.kind) || self.workload.kind != 'DaemonSet'",
    message: 'horizontalPodAutoscaler is not valid when workload.kind is DaemonSet',
  },
  {
    rule: '!has(self.env) || self.env.all(a, self.env.filter(b, b.name == a.name).size() == 1)',
    message: 'env names must be unique',
  },
);

export const GwParametersStatus = obj({
  conditions: Conditions.optional(),
  observedGeneration: z.int().min(0).optional(),
});

export type GwParametersSpec = z.output<typeof GwParametersSpec>;
export type GwParametersStatus = z.output<typeof GwParametersStatus>;
