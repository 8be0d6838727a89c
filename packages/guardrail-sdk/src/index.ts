// @gw/guardrail-sdk: the guardrail webhook contract, a node:http handler for webhook authors and the
// body builders the gateway uses on its side of the call.
export * from './client-shapes.ts';
export * from './contract.ts';
export * from './errors.ts';
export * from './handler.ts';
export * from './mcp-contract.ts';
export * from './mcp-handler.ts';
