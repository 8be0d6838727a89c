// Envoy's delta ADS (`envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources`)
// as a grpc-js service definition over the protobuf-es messages, and the one type URL gw serves on it.
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { AggregatedDiscoveryService } from '@gw/xds-proto/envoy/service/discovery/v3/ads';
import {
  type DeltaDiscoveryRequest,
  DeltaDiscoveryRequestSchema,
  type DeltaDiscoveryResponse,
  DeltaDiscoveryResponseSchema,
} from '@gw/xds-proto/envoy/service/discovery/v3/discovery';

export const RESOURCE_TYPE_URL = 'type.googleapis.com/gw.resource.v1.Resource';

export const DELTA_ADS_PATH = `/${AggregatedDiscoveryService.typeName}/${AggregatedDiscoveryService.method.deltaAggregatedResources.name}`;

export const AdsService = {
  deltaAggregatedResources: {
    path: DELTA_ADS_PATH,
    originalName: 'DeltaAggregatedResources',
    requestStream: true,
    responseStream: true,
    requestSerialize: (m: DeltaDiscoveryRequest): Buffer =>
      Buffer.from(toBinary(DeltaDiscoveryRequestSchema, m)),
    requestDeserialize: (b: Buffer): DeltaDiscoveryRequest => fromBinary(DeltaDiscoveryRequestSchema, b),
    responseSerialize: (m: DeltaDiscoveryResponse): Buffer =>
      Buffer.from(toBinary(DeltaDiscoveryResponseSchema, m)),
    responseDeserialize: (b: Buffer): DeltaDiscoveryResponse => fromBinary(DeltaDiscoveryResponseSchema, b),
  },
} satisfies ServiceDefinition;
