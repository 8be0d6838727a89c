// The trace event shapes of the spec ("Events"): one JSON object per SSE message.

export interface TraceEvent {
  /** Milliseconds since the request started; null for instantaneous events. */
  eventStart: number | null;
  eventEnd: number;
  severity: 'info' | 'warn' | 'error';
  message: { type: string } & Record<string, unknown>;
}

export interface RequestSnapshotState {
  request: {
    method: string;
    uri: string;
    path: string;
    pathAndQuery: string;
    host: string;
    scheme: string;
    version: string;
    headers: Record<string, string>;
    startTime: string;
  };
  source: { address: string; port: number; rawAddress: string; rawPort: number };
  env: Record<string, string>;
  response?: { code: number; headers: Record<string, string> };
}

/** The spec's effective-policy slots, named as `gwctl trace` shows them. */
export const POLICY_SLOTS: Record<string, string> = {
  requestHeaderModifier: 'requestHeaderModifier',
  responseHeaderModifier: 'responseHeaderModifier',
  requestRedirect: 'requestRedirect',
  urlRewrite: 'urlRewrite',
  directResponse: 'directResponse',
  cors: 'cors',
  csrf: 'csrf',
  timeout: 'timeout',
  retry: 'retry',
  buffer: 'buffer',
  delay: 'delay',
  backendTLS: 'backendTLS',
  http: 'http',
  tcp: 'tcp',
};
