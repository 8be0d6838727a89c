// @gw/testkit: real servers and helpers for tests (private).

export * from './http-client.ts';
export * from './identity-provider.ts';
export * from './kube.ts';
export * from './ratelimit.ts';
export * from './tls.ts';
export * from './upstream.ts';
