// @gw/testkit: real servers and helpers for tests (private).
// Two modules load heavier things and are imported by subpath only: `@gw/testkit/proxy` (an in-thread
// proxy; imports @gw/proxy) and `@gw/testkit/ext-authz-server` (a gRPC ext_authz server; grpc-js).

export * from './browser.ts';
export * from './eventually.ts';
export * from './http-client.ts';
export * from './identity-provider.ts';
export * from './kube.ts';
export * from './llm/anthropic.ts';
export * from './llm/openai.ts';
export * from './ratelimit.ts';
export * from './route.ts';
export * from './temp-dir.ts';
export * from './tls.ts';
export * from './upstream.ts';
