// The translator's input and output. The input is a snapshot of the Kubernetes objects the controller
// watches (plain JSON as the API server returns them); the output is, per Gateway, the xDS resources
// in the proto3 JSON form of gw.resource.v1.Resource (proto/gw/resource/v1/resource.proto) plus the
// status every object should have. No clock, no IO: equal snapshots give equal outputs.

/** The API group of gw's own kinds (GwPolicy, GwBackend, GwModel, GwParameters). */
export const GW_GROUP = 'gw.dev';

/** The parts of a Kubernetes object the translator reads. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
    uid?: string;
  };
  spec?: unknown;
  status?: unknown;
  data?: Record<string, string>;
}

/**
 * Oldest first: creationTimestamp, then namespace/name. Gateway API's tie-break among routes, and
 * which of two policies on one target wins.
 */
export function olderFirst(a: KubeObject, b: KubeObject): number {
  return (
    (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`)
  );
}

export interface Snapshot {
  /** Every watched object, any kind. */
  objects: KubeObject[];
  /** controllerName of the GatewayClasses this controller owns. */
  controllerName: string;
  /** Whether GwModel support is on (the chart's model flag). */
  modelsEnabled?: boolean;
  /** Whether InferencePools are read (the chart's inferenceExtension flag). */
  inferenceEnabled?: boolean;
}

/** proto3 JSON of gw.resource.v1.Resource: exactly one of the keys. */
export type ResourceJson =
  | { bind: Record<string, unknown> }
  | { route: Record<string, unknown> }
  | { tcpRoute: Record<string, unknown> }
  | { backend: Record<string, unknown> }
  | { policy: Record<string, unknown> }
  | { frontend: Record<string, unknown> }
  | { global: Record<string, unknown> }
  | { inferencePool: Record<string, unknown> };

export interface NamedResource {
  name: string;
  resource: ResourceJson;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
}

/** The status the translator wants an object to have (the writer merges it, keeping other controllers' entries). */
export interface StatusUpdate {
  kind: string;
  namespace?: string;
  name: string;
  /** The status subresource body, only the parts this controller owns. */
  status: Record<string, unknown>;
}

export interface Output {
  /** `<namespace>/<name>` of a Gateway → its resources, sorted by name. */
  gateways: Record<string, NamedResource[]>;
  statuses: StatusUpdate[];
}

/** Resolves a Secret/ConfigMap/Service in the snapshot (policy translation reads credentials through it). */
export interface Lookup {
  get(kind: string, namespace: string, name: string): KubeObject | undefined;
  list(kind: string, namespace?: string): KubeObject[];
}
