// Scenario 3b: scenario 3's chat completion with one regex prompt guard on the request (reject on a
// US SSN or a credit card number, which the bench prompt does not contain) and one on the answer
// (mask e-mail addresses): what the guards add per 1 KiB request. Baseline: scenario 3 in the same
// rounds (gw llm without guards), so the difference is the guards' cost alone.
import { runProxyComparison } from '../lib/proxy-comparison.ts';
import { configure as configureLlm, llm, MODEL } from './llm.ts';
import type { ConfigureInput, Scenario, ScenarioConfig } from './types.ts';

const GUARDS = `    guardrails:
      request: [{regex: {action: reject, rules: [{builtin: ssn}, {builtin: creditCard}]}}]
      response: [{regex: {action: mask, rules: [{builtin: email}]}}]
`;

export function configure(input: ConfigureInput): ScenarioConfig {
  const base = configureLlm(input);
  const model = `  - name: ${MODEL}\n`;
  if (!base.gwYaml.includes(model))
    throw new Error('llm-guard: the llm scenario has no model entry to guard');
  // the guards belong to the one model: inserted right after its name, at its indentation
  const at = base.gwYaml.indexOf(model) + model.length;
  // agentgateway is left out: scenario 3's config for it has no guards, so it would not do this job.
  const { agentgatewayYaml: _, ...rest } = base;
  return { ...rest, gwYaml: base.gwYaml.slice(0, at) + GUARDS + base.gwYaml.slice(at) };
}

export const llmGuard: Scenario = {
  name: 'llm-guard',
  // BENCH_QUICK=1: one round, so that every scenario fits the quick run's 3 minutes.
  quick: { pairs: 1 },
  title: '3b. LLM with prompt guards: scenario 3 plus a regex guard on the request and one on the answer',
  reference:
    'Target for gw (issue 18): one regex guard on request and response adds ≤ 30 µs CPU per 1 KiB ' +
    'request over scenario 3 ("gw llm, no guards"), measured in the same rounds.',
  configure,
  gwBaseline: llm,
  peerLabels: { gw: 'gw llm + guards', gwBaseline: 'gw llm, no guards', nginx: 'nginx proxy_pass' },
  run: (ctx) => runProxyComparison(ctx, llmGuard),
};
