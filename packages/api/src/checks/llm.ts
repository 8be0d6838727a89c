// Checks of the standalone `llm:` block beyond its schema: CEL of transformations and conditions,
// provider references, what each provider needs to know where it is, virtual model targets that name
// a model, and the conditional rule that only the last target may go without `when`.

import type { LlmConfig, LlmModel, LlmParams } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { matchModelName } from '../llm/model-names.ts';
import { checkCel, checkCelMap } from './cel.ts';
import { checkPromptGuard } from './guardrails.ts';
import type { Problem } from './problem.ts';
import { checkRouteMatch } from './route.ts';
import { checkAuthorization } from './traffic.ts';

/** The provider of a model, after following a `reference` to `llm.providers[]`. */
export function resolveLlmProvider(
  llm: LlmConfig,
  m: LlmModel,
):
  | { provider: LlmModel['provider']; params: LlmParams; named?: NonNullable<LlmConfig['providers']>[number] }
  | undefined {
  const p = m.provider;
  if (typeof p === 'object' && 'reference' in p) {
    const named = llm.providers?.find((n) => n.name === p.reference);
    if (!named) return undefined;
    return { provider: named.provider, params: { ...named.params, ...m.params }, named };
  }
  return { provider: p, params: m.params ?? {} };
}

/** Params only one provider reads: set on another, they would be ignored. */
const PROVIDER_PARAMS: [keyof LlmParams, string][] = [
  ['awsRegion', 'bedrock'],
  ['vertexRegion', 'vertex'],
  ['vertexProject', 'vertex'],
  ['azureResourceName', 'azure'],
  ['azureResourceType', 'azure'],
  ['azureApiVersion', 'azure'],
  ['azureProjectName', 'azure'],
];

export function checkLlm(llm: LlmConfig, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  if (llm.port !== undefined && llm.gateways !== undefined)
    out.push({ path: [...path, 'gateways'], message: 'set port or gateways, not both' });
  if (llm.tls && llm.port === undefined && llm.gateways !== undefined)
    out.push({
      path: [...path, 'tls'],
      message: "tls applies to the LLM API's own port: on gateways, their listeners' tls applies",
    });

  if (llm.policies?.guardrails)
    out.push(...checkPromptGuard(llm.policies.guardrails, [...path, 'policies', 'guardrails']));
  for (const [name, g] of Object.entries(llm.guardrails ?? {}))
    out.push(...checkPromptGuard(g, [...path, 'guardrails', name]));
  const names = new Set<string>();
  (llm.providers ?? []).forEach((n, i) => {
    const pp = [...path, 'providers', i];
    if (names.has(n.name))
      out.push({ path: [...pp, 'name'], message: `provider name ${n.name} is used twice` });
    names.add(n.name);
    if (typeof n.provider === 'object' && 'reference' in n.provider)
      out.push({ path: [...pp, 'provider'], message: 'a named provider cannot itself be a reference' });
    if (n.defaults) {
      out.push(...checkCelMap(n.defaults.transformation, [...pp, 'defaults', 'transformation']));
      if (n.defaults.tls && n.defaults.backendTLS)
        out.push({ path: [...pp, 'defaults', 'tls'], message: 'set tls or backendTLS, not both' });
    }
  });

  llm.models.forEach((m, i) => {
    const mp = [...path, 'models', i];
    out.push(...checkCelMap(m.transformation, [...mp, 'transformation']));
    out.push(...checkCelMap(m.finalTransformation, [...mp, 'finalTransformation']));
    if (typeof m.guardrails === 'string') {
      if (!llm.guardrails || !Object.hasOwn(llm.guardrails, m.guardrails))
        out.push({
          path: [...mp, 'guardrails'],
          message: `no guardrails named ${JSON.stringify(m.guardrails)} in llm.guardrails${llm.guardrails ? ` (there are ${Object.keys(llm.guardrails).join(', ')})` : ''}`,
        });
    } else if (m.guardrails) out.push(...checkPromptGuard(m.guardrails, [...mp, 'guardrails']));
    if (m.authorization) out.push(...checkAuthorization(m.authorization, [...mp, 'authorization']));
    if (m.passthrough) {
      // A passthrough request keeps the client's format: the model's own fields (params.model,
      // defaults, overrides, transformation) are set on it, as agentgateway does, but what works on
      // the provider's format (finalTransformation, promptCaching) or reads it as a guard does has
      // no place there.
      const named = resolveLlmProvider(llm, m)?.named?.defaults;
      for (const k of ['finalTransformation', 'guardrails', 'promptCaching'] as const) {
        const own = m[k] !== undefined;
        const inherited =
          !own && k !== 'finalTransformation' && k !== 'guardrails' && named?.[k] !== undefined;
        if (own || inherited)
          out.push({
            path: own ? [...mp, k] : [...mp, 'provider'],
            message: `${own ? k : `the provider's defaults.${k}`} has no place in a passthrough model: it sends the client's request in the client's format, unguarded`,
          });
      }
      if (!m.guardrails && llm.policies?.guardrails)
        out.push({
          path: [...mp, 'passthrough'],
          message:
            'llm.policies.guardrails guard every model, and a passthrough model is not guarded: set guardrails on the models that are',
        });
    }
    m.matches?.forEach((x, xi) => {
      out.push(...checkRouteMatch(x, [...mp, 'matches', xi]));
    });
    if (m.tls && m.backendTLS) out.push({ path: [...mp, 'tls'], message: 'set tls or backendTLS, not both' });
    const r = resolveLlmProvider(llm, m);
    if (!r) {
      const ref = (m.provider as { reference: string }).reference;
      const known = (llm.providers ?? []).map((n) => n.name);
      out.push({
        path: [...mp, 'provider', 'reference'],
        message: `no provider named ${JSON.stringify(ref)} in llm.providers${known.length ? ` (providers: ${known.join(', ')})` : ''}`,
      });
      return;
    }
    const params = r.params;
    const at = (k: string) => (m.params && k in m.params ? [...mp, 'params', k] : [...mp, 'provider']);
    for (const [k, provider] of PROVIDER_PARAMS) {
      if (params[k] !== undefined && r.provider !== provider)
        out.push({ path: at(k), message: `${k} is for the ${provider} provider` });
    }
    if (params.tokenize)
      out.push({ path: at('tokenize'), message: 'tokenize is not supported by this build of gw yet' });
    if (params.baseUrl !== undefined && params.hostOverride !== undefined)
      out.push({ path: at('baseUrl'), message: 'set baseUrl or hostOverride, not both' });
    const where = params.baseUrl !== undefined || params.hostOverride !== undefined;
    const kind = r.provider;
    if (kind === 'azure' && params.azureResourceName === undefined && !where) {
      out.push({
        path: [...mp, 'params'],
        message: 'the azure provider needs params.azureResourceName (or baseUrl / hostOverride)',
      });
    }
    if (kind === 'azure' && params.azureResourceType === 'foundry' && params.azureProjectName === undefined) {
      out.push({
        path: [...mp, 'params'],
        message: 'azureResourceType foundry needs params.azureProjectName',
      });
    }
    if (kind === 'vertex' && params.vertexProject === undefined) {
      out.push({ path: [...mp, 'params'], message: 'the vertex provider needs params.vertexProject' });
    }
    if (typeof kind === 'object' && 'custom' in kind && !where) {
      out.push({
        path: [...mp, 'params'],
        message: 'a custom provider needs params.baseUrl (or hostOverride): where its endpoint is',
      });
    }
  });

  const patterns = llm.models.map((m) => m.name);
  (llm.virtualModels ?? []).forEach((v, i) => {
    const vp = [...path, 'virtualModels', i, 'routing'];
    const r = v.routing;
    const kind = 'weighted' in r ? 'weighted' : 'failover' in r ? 'failover' : 'conditional';
    const targets: { model: string; when?: string | undefined }[] =
      'weighted' in r ? r.weighted.targets : 'failover' in r ? r.failover.targets : r.conditional.targets;
    targets.forEach((t, ti) => {
      const tp = [...vp, kind, 'targets', ti];
      if (matchModelName(patterns, t.model) === undefined)
        out.push({
          path: [...tp, 'model'],
          message: `no model in llm.models serves ${JSON.stringify(t.model)}`,
        });
      if (kind === 'conditional') {
        if (t.when !== undefined) out.push(...checkCel(t.when, [...tp, 'when']));
        else if (ti !== targets.length - 1)
          out.push({
            path: [...tp, 'when'],
            message: 'only the last target may omit when (it is the fallback)',
          });
      }
    });
  });
  return out;
}
