// What an xDS config is built from (build.ts), in this process or in the config loader's
// (config/loader.ts): the resources as the controller sent them, and where they came from.

/** Resource name → its bytes as the controller sent them (a gw.resource.v1.Resource), or why not. */
export type HeldResources = ReadonlyMap<string, { bytes: Uint8Array } | { error: string }>;

/** Where the resources come from, for the messages: the controller's address and the Gateway. */
export interface XdsOrigin {
  address: string;
  gateway: string;
  /** For file references in resources (there should be none). */
  baseDir: string;
}
