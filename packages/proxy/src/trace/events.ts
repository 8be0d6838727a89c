// The trace event shapes now live in @gw/api (admin wire types); this re-export keeps the proxy
// modules that still import them from here working until they import @gw/api themselves.
export type { RequestSnapshotState, TraceEvent } from '@gw/api';
