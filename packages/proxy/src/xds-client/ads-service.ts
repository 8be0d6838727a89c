// Envoy's delta ADS (`envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources`)
// as a grpc-js service definition, and the one resource type gw sends over it; both are derived from
// the generated code in @gw/xds-proto.
import type { ServiceDefinition } from '@grpc/grpc-js';
import { AggregatedDiscoveryService } from '@gw/xds-proto/envoy/service/discovery/v3/ads';
import { grpcMethod, typeUrlOf } from '@gw/xds-proto/grpc';
import { ResourceSchema } from '@gw/xds-proto/gw/resource/v1/resource';

export const RESOURCE_TYPE_URL = typeUrlOf(ResourceSchema);

export const AdsService = {
  deltaAggregatedResources: grpcMethod(AggregatedDiscoveryService.method.deltaAggregatedResources),
} satisfies ServiceDefinition;
