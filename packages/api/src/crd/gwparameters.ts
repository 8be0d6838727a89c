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
  format: z
    .enum(['json', 'text'])
    .default('text')
    .meta({ description: 'The log line format: json or text. Default: text.' }),
});

// ---------- image and container ----------
/** A container image tag as registries accept it. */
export const IMAGE_TAG_PATTERN = '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$';
/** An OCI content digest: algorithm:hex (sha256:<64 hex digits>, …). */
export const IMAGE_DIGEST_PATTERN = '^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$';
export const Image = obj({
  registry: ShortString.optional().meta({ description: 'e.g. ghcr.io or registry.example.com:5000.' }),
  repository: ShortString.optional().meta({
    description: 'The image name within the registry, e.g. gw/proxy.',
  }),
  tag: z
    .string()
    .min(1)
    .max(128)
    .regex(new RegExp(IMAGE_TAG_PATTERN))
    .optional()
    .meta({ description: 'The image tag, e.g. v0.1.0.' }),
  digest: z
    .string()
    .max(256)
    .regex(new RegExp(IMAGE_DIGEST_PATTERN))
    .optional()
    .meta({ description: 'e.g. sha256:…; the image is then pulled by digest (registry/repository@digest).' }),
  pullPolicy: z
    .enum(['Always', 'IfNotPresent', 'Never'])
    .optional()
    .meta({ description: "The container's imagePullPolicy: Always, IfNotPresent or Never." }),
});

export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
export const EnvVar = rules(
  obj({
    name: z
      .string()
      .min(1)
      .max(256)
      .regex(new RegExp(ENV_NAME_PATTERN))
      .meta({ description: 'The environment variable name.' }),
    value: z.string().max(32768).optional().meta({ description: 'A literal value; set this or valueFrom.' }),
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
  limits: ResourceList.optional().meta({
    description:
      'Most the proxy container may use, by resource name (cpu, memory, ...): a quantity such as 500m or 1Gi.',
  }),
  requests: ResourceList.optional().meta({
    description:
      'What the proxy container is scheduled with, by resource name: a quantity such as 100m or 256Mi.',
  }),
  claims: mapList(
    z
      .array(
        obj({
          name: z
            .string()
            .min(1)
            .max(253)
            .meta({ description: "An entry of the pod's spec.resourceClaims." }),
          request: z
            .string()
            .min(1)
            .max(253)
            .optional()
            .meta({ description: 'One request of that claim; unset: all of them.' }),
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
  enabled: z.boolean().default(false).meta({
    description:
      "Give the proxies an Istio mesh identity (certificates from Istio's CA). This build of gw cannot do so yet: when true, the Gateway's Accepted message says so. Default: false.",
  }),
  caAddress: rules(LongString, {
    rule: `self.matches('${URL_PATTERN}')`,
    message: 'caAddress must be http(s)://host[:port][/path] without userinfo',
  })
    .default('https://istiod.istio-system.svc:15012')
    .meta({
      description:
        "The address of Istio's certificate authority. Default: https://istiod.istio-system.svc:15012.",
    }),
  trustDomain: SNI.default('cluster.local').meta({
    description: 'The trust domain of the mesh. Default: cluster.local.',
  }),
  additionalTrustDomains: setList(z.array(SNI).max(16))
    .optional()
    .meta({ description: 'Other trust domains whose identities are trusted too.' }),
  clusterId: ShortString.default('Kubernetes').meta({
    description: 'The cluster id the proxies report to Istio. Default: Kubernetes.',
  }),
  network: ShortString.optional().meta({ description: 'The Istio network the proxies are in.' }),
});

export const Spiffe = obj({
  enabled: z.boolean().default(false).meta({
    description:
      "Give the proxies a SPIFFE identity from the workload API. This build of gw cannot do so yet: when true, the Gateway's Accepted message says so. Default: false.",
  }),
  trustDomain: SNI.optional().meta({ description: 'Default: the trust domain of the workload API.' }),
  socketPath: rules(LongString, absolutePath('socketPath'))
    .optional()
    .meta({ description: 'Unix socket of the SPIFFE workload API, e.g. /run/spire/sockets/agent.sock.' }),
  source: notBuilt(
    rules(
      obj({
        csi: obj({ driver: ShortString.optional().meta({ description: 'The CSI driver name.' }) })
          .optional()
          .meta({ description: 'Mount the socket from a CSI driver volume (e.g. the SPIFFE CSI driver).' }),
        hostPath: obj({
          path: rules(LongString, absolutePath('hostPath.path')).meta({
            description: "The socket's directory on the node.",
          }),
        })
          .optional()
          .meta({ description: "Mount the socket's directory from the node." }),
        mountPath: rules(LongString, absolutePath('mountPath'))
          .optional()
          .meta({ description: 'Where the volume is mounted in the proxy container.' }),
        socketName: ShortString.optional().meta({
          description: 'The file name of the socket in the volume.',
        }),
      }),
      { rule: '!has(self.csi) || !has(self.hostPath)', message: 'at most one of csi or hostPath may be set' },
    ).optional(),
    'spiffe.source (the volume of the workload API socket)',
  ),
});

export const ModelCatalog = obj({
  enabled: z.boolean().default(true).meta({
    description:
      "Whether the model catalog (model names and their costs) is used. Default: true. This build of gw has no model catalog yet: the Gateway's Accepted message says so.",
  }),
  configMapRef: obj({
    name: ObjectName.meta({ description: 'Name of the ConfigMap.' }),
    key: z
      .string()
      .min(1)
      .max(253)
      .default('catalog.yaml')
      .meta({ description: 'The key holding the entries. Default: catalog.yaml.' }),
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
            name: ObjectName.meta({ description: 'Name of the ConfigMap.' }),
            key: z
              .string()
              .min(1)
              .max(253)
              .default('catalog.json')
              .meta({ description: 'The key holding the catalog. Default: catalog.json.' }),
          })
            .optional()
            .meta({ description: 'A catalog kept in a ConfigMap of the Gateway’s namespace.' }),
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
    labels: maxEntries(Labels, 64).optional().meta({ description: 'Labels added to the object.' }),
    annotations: maxEntries(z.record(z.string().min(1).max(317), z.string().max(65536)), 64)
      .optional()
      .meta({ description: 'Annotations added to the object.' }),
  })
    .optional()
    .meta({ description: 'Labels and annotations added to the generated object.' }),
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
    logging: Logging.optional().meta({
      description: "The proxies' log: level and format (the GW_LOG and GW_LOG_FORMAT variables).",
    }),
    rawConfig: JsonObject.optional().meta({
      description: 'Merged into the generated proxy configuration; typed fields win.',
    }),
    image: Image.optional().meta({
      description:
        "The proxy container image; each part set replaces that part of the controller's --proxy-image.",
    }),
    env: z.array(EnvVar).max(64).optional().meta({
      description:
        'Setting SESSION_KEY takes precedence over the per-Gateway session key the controller manages.',
    }),
    resources: Resources.optional().meta({
      description: "The proxy container's compute resources: limits, requests and resource claims.",
    }),
    shutdown: Shutdown.optional().meta({
      description:
        "How long a stopping proxy drains, in seconds: max is the pod's termination grace period, min how long it keeps serving while not ready.",
    }),
    istio: Istio.optional().meta({
      description:
        "Istio mesh identity for the proxies; this build of gw cannot provide it yet (the Gateway's Accepted message says so).",
    }),
    spiffe: Spiffe.optional().meta({
      description:
        "SPIFFE identity for the proxies; this build of gw cannot provide it yet (the Gateway's Accepted message says so).",
    }),
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
