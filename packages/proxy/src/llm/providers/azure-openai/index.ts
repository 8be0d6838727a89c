// Azure OpenAI: the resource's host, an `api-key` header, and one of two path styles. With a dated
// apiVersion, the deployment path `/openai/deployments/<model>/chat/completions?api-version=…` (the
// deployment is the model sent, and the body needs no model); without one (or `v1`), the v1 API at
// `/openai/v1/…`, which takes the model in the body. Foundry projects live under
// `/api/projects/<project>/openai/v1`. Responses have no deployment path: with a dated apiVersion
// they are at `/openai/responses?api-version=…`, the deployment in the body's model.
import type { LlmProviderIR } from '../../../config/ir.ts';
import { openaiOperation } from '../openai-paths.ts';
import type { ProviderModule } from '../types.ts';

type Azure = LlmProviderIR<'azureOpenAI'>;

const deploymentStyle = (p: Azure) => {
  const v = p.settings.apiVersion;
  return v !== undefined && v !== 'v1' && p.settings.resourceType !== 'foundry';
};

export const azureOpenaiProvider: ProviderModule<'azureOpenAI'> = {
  kind: 'azureOpenAI',
  formats: () => ['openai-chat', 'openai-responses', 'openai-embeddings'],
  endpoint(p) {
    const s = p.settings;
    // The loader refuses an Azure model with neither a resource name nor an endpoint.
    const suffix =
      s.resourceType === undefined || s.resourceType === 'openAI'
        ? 'openai.azure.com'
        : 'services.ai.azure.com';
    return { host: `${s.resourceName ?? ''}.${suffix}`, port: 443, tls: true };
  },
  path(p, format, req) {
    const op = openaiOperation(format);
    // Azure serves Responses beside the deployments, the deployment named by the body's model.
    if (deploymentStyle(p) && format === 'openai-responses') {
      return {
        prefix: '/openai',
        path: op,
        query: `?api-version=${encodeURIComponent(p.settings.apiVersion ?? '')}`,
      };
    }
    if (deploymentStyle(p)) {
      return {
        prefix: `/openai/deployments/${encodeURIComponent(req.model)}`,
        path: op,
        query: `?api-version=${encodeURIComponent(p.settings.apiVersion ?? '')}`,
      };
    }
    const project = p.settings.projectName;
    const prefix =
      p.settings.resourceType === 'foundry' && project
        ? `/api/projects/${encodeURIComponent(project)}/openai/v1`
        : '/openai/v1';
    const v = p.settings.apiVersion;
    return { prefix, path: op, query: v && v !== 'v1' ? `?api-version=${encodeURIComponent(v)}` : '' };
  },
  bodyHasModel: (p, format) => !deploymentStyle(p) || format === 'openai-responses',
  authorize(_p, req, key) {
    if (key === undefined) return;
    delete req.headers.authorization;
    req.headers['api-key'] = key;
  },
};
