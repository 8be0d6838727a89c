// The scenarios `node bench/run.ts` knows, in report order; add a scenario by adding its file here.
import { largeBody } from './large-body.ts';
import { llm } from './llm.ts';
import { llmGuard } from './llm-guard.ts';
import { llmStream } from './llm-stream.ts';
import { mcp } from './mcp.ts';
import { plainHttp } from './plain-http.ts';
import { policyChain } from './policy-chain.ts';
import type { Scenario } from './types.ts';

export const SCENARIOS: readonly Scenario[] = [
  plainHttp,
  largeBody,
  llm,
  llmGuard,
  llmStream,
  policyChain,
  mcp,
];
