// The config checks the schema cannot make (CEL, regular expressions, JWKS, htpasswd, rules across
// fields): pure functions from a config section in the standalone shape and its field path to a list
// of problems. The standalone loader words them as config errors, the controller as status conditions.
export * from './aws.ts';
export * from './backend.ts';
export * from './backend-auth.ts';
export * from './cel.ts';
export * from './conditional.ts';
export * from './frontend.ts';
export * from './guardrails.ts';
export * from './htpasswd.ts';
export * from './jwks.ts';
export * from './llm.ts';
export * from './mcp.ts';
export * from './mcp-authentication.ts';
export * from './observability.ts';
export * from './oidc.ts';
export * from './problem.ts';
export * from './regex.ts';
export * from './route.ts';
export * from './tcp-route.ts';
export * from './traffic.ts';
export * from './transformations.ts';
