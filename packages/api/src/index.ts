// @gw/api: the definitions shared by the proxy, the controller and gwctl.
export * from './admin/config-dump.ts';
export * from './admin/trace-event.ts';
export * from './admin/wire.ts';
export * from './cel/environment.ts';
export * from './checks/index.ts';
export * from './config/conditional.ts';
export * from './config/credentials.ts';
export * from './config/model-catalog.ts';
export * from './config/observability.ts';
export * from './config/oidc.ts';
export * from './config/schema.ts';
export * from './config/source.ts';
export { AZURE_DEFAULT_SCOPE, TOKEN_TYPE } from './config/token-auth.ts';
export * from './config/transformations.ts';
export * from './duration.ts';
export * from './llm/model-names.ts';
export * from './llm/presets.ts';
export * from './tls-names.ts';
