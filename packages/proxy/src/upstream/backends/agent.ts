// The backend kinds of agent traffic (ai, mcp, a2a) and everything they bring (LLM formats, providers
// and guardrails, MCP federation, A2A): close to half of a data plane's own code. registry.ts loads
// this module when a config first has such a backend, so a config without one never loads it. From
// the bundle (hack/bundle.ts) it is the entry gw-agent.js.
export { a2aBackend } from './a2a/index.ts';
export { aiBackend } from './ai/index.ts';
export { mcpBackend } from './mcp/index.ts';
