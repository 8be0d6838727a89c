// Names on the ext_proc wire that the config describes and the proxy sends, in a schema-free module
// (the proxy's workers import it through @gw/api/runtime).

/** The attributes' key in a ProcessingRequest (Envoy's ext_proc filter name). */
export const EXTPROC_ATTRIBUTES_NAMESPACE = 'envoy.filters.http.ext_proc';
/** A metadataContext namespace whose keys go as the stream's gRPC metadata (agentgateway's name). */
export const EXTPROC_GRPC_METADATA_NAMESPACE = 'agentgateway.dev.grpc_initial_metadata';
