// GwModel (experimental): routes the requests for a model name, attached to Gateways, ListenerSets or
// an HTTPRoute rule, either to one provider or to a virtual model that picks among other GwModels.
// Spec: "GwModel spec", "Limits".

import { z } from 'zod';
import { AZURE_RESOURCE_TYPES, BEDROCK_REGION_PATTERN, CustomFormats } from './gwbackend.ts';
import { atLeastOne, exactlyOne, obj, rules } from './kube.ts';
import {
  Authorization,
  BackendWithAI,
  FieldExpressions,
  HeaderModifier,
  PromptGuard,
} from './policy-blocks.ts';
import {
  CELExpression,
  Conditions,
  Group,
  LocalBackendObjectReference,
  LongString,
  ObjectName,
  ParentReference,
  Port,
  SectionName,
  ShortString,
  TinyString,
} from './types.ts';

// ---------- where the model is served ----------
const ParentKind = z.enum(['Gateway', 'ListenerSet', 'HTTPRoute']);

export const ModelParentReference = rules(
  obj({
    group: Group.default('gateway.networking.k8s.io').meta({
      description: 'API group of the parent. Default: gateway.networking.k8s.io.',
    }),
    kind: ParentKind.default('Gateway').meta({
      description: 'Kind of the parent: Gateway (default), ListenerSet or HTTPRoute.',
    }),
    name: ObjectName.meta({ description: 'Name of the parent.' }),
    namespace: z
      .string()
      .min(1)
      .max(63)
      .optional()
      .meta({ description: "Default: the GwModel's namespace." }),
    sectionName: SectionName.optional().meta({
      description: 'A listener of a Gateway or ListenerSet, or a rule name of an HTTPRoute.',
    }),
    port: Port.optional().meta({ description: 'A listener port of a Gateway or ListenerSet.' }),
  }),
  {
    rule: "!has(self.port) || self.kind != 'HTTPRoute'",
    message: 'port may only be set on a Gateway or ListenerSet parent',
  },
).meta({
  description:
    'An HTTPRoute parent needs a sectionName or exactly one rule, and that rule must use exactly one GwModel backend named * with PathPrefix path matches (checked by the controller).',
});

// ---------- which requests ----------
/** A model name, or a pattern in which `*` stands for any run of characters (`gpt-*`, `*-mini`, `*`). */
export const MODEL_PATTERN = '^[-A-Za-z0-9._:/@+*]+$';
export const ModelMatch = obj({
  model: rules(
    LongString.meta({
      description:
        'The model name clients request, exact (gpt-4o) or with * wildcards (gpt-*, *). An exact name is also the model sent to the provider unless a provider setting overrides it.',
    }),
    {
      rule: `self.matches('${MODEL_PATTERN}')`,
      message:
        'must be a model name or a pattern with * wildcards (e.g. gpt-4o, gpt-*, *) made of letters, digits and - . _ : / @ + *',
    },
  ),
});

// ---------- one provider ----------
/**
 * The managed hosted providers plus Custom (any endpoint speaking provider-native formats), then the
 * named OpenAI-compatible ones, each at its documented address unless baseURL moves it. Azure is
 * agentgateway's resource-based Azure (OpenAI or Foundry resources), AzureOpenAI gw's endpoint-based one.
 */
export const ModelProvider = z.enum([
  'OpenAI',
  'Azure',
  'AzureOpenAI',
  'Anthropic',
  'Gemini',
  'VertexAI',
  'Bedrock',
  'Mistral',
  'Custom',
  // named OpenAI-compatible providers (agentgateway's presets; see llm/presets.ts)
  'Baseten',
  'Cerebras',
  'Cohere',
  'Deepinfra',
  'Deepseek',
  'Fireworks',
  'Groq',
  'Huggingface',
  'Ollama',
  'Openrouter',
  'TogetherAI',
  'XAI',
]);

export const AzureSettings = rules(
  obj({
    endpoint: ShortString.optional().meta({
      description:
        'AzureOpenAI: host of the Azure OpenAI resource, e.g. my-resource.openai.azure.com; baseURL may be used instead.',
    }),
    deploymentName: ShortString.optional().meta({ description: 'AzureOpenAI: default the model name.' }),
    resourceName: ShortString.optional().meta({
      description:
        'Azure: the resource, reached at <resourceName>.openai.azure.com (OpenAI) or <resourceName>.services.ai.azure.com (Foundry).',
    }),
    resourceType: z.enum(AZURE_RESOURCE_TYPES).optional().meta({ description: 'Azure: OpenAI or Foundry.' }),
    projectName: ShortString.optional().meta({
      description: 'Azure: the Foundry project, required when resourceType is Foundry.',
    }),
    apiVersion: TinyString.optional().meta({ description: 'The api-version query parameter sent to Azure.' }),
  }),
  {
    rule: 'has(self.resourceName) == has(self.resourceType)',
    message: 'resourceName and resourceType must be set together',
  },
  {
    rule: "!has(self.resourceType) || self.resourceType != 'Foundry' || has(self.projectName)",
    message: 'projectName is required when resourceType is Foundry',
  },
  {
    rule: '!has(self.projectName) || has(self.resourceType)',
    message: 'projectName is only valid with resourceName and resourceType',
  },
);

const Region = z.string().min(1).max(63).regex(new RegExp(BEDROCK_REGION_PATTERN));

export const VertexAISettings = obj({
  projectId: ShortString.meta({ description: 'The Google Cloud project.' }),
  region: Region.default('us-central1').meta({
    description: 'A Vertex AI location such as us-central1 or global.',
  }),
  publisher: TinyString.optional().meta({
    description: 'Model publisher (google, anthropic, meta, ...); inferred from the model name when unset.',
  }),
});

export const BedrockSettings = obj({
  region: Region.default('us-east-1').meta({
    description: 'The AWS region of Bedrock, e.g. us-west-2. Default: us-east-1.',
  }),
  guardrail: obj({
    identifier: ShortString.meta({ description: 'The Bedrock guardrail id.' }),
    version: ShortString.meta({ description: 'The guardrail version, e.g. 1 or DRAFT.' }),
  })
    .optional()
    .meta({ description: 'A Bedrock guardrail applied to every request by Bedrock itself.' }),
  model: ShortString.optional().meta({
    description: 'The Bedrock model id sent instead of the requested model.',
  }),
});

export const CustomProviderSettings = obj({
  backendRef: rules(LocalBackendObjectReference, {
    rule: "(self.group == '' && self.kind == 'Service') || (self.group == 'inference.networking.k8s.io' && self.kind == 'InferencePool')",
    message: 'backendRef must be a Service or an InferencePool (group inference.networking.k8s.io)',
  })
    .optional()
    .meta({
      description: 'A Service or InferencePool in the same namespace; when unset, baseURL must be set.',
    }),
  providerOverride: TinyString.default('custom').meta({
    description: 'The provider name reported in telemetry and traces.',
  }),
  formats: CustomFormats.meta({ description: 'The provider-native API formats the endpoint speaks.' }),
  model: ShortString.optional().meta({ description: 'The model sent instead of the requested model.' }),
});

/** http(s)://host[:port][/path]: no userinfo, query or fragment. */
export const BASE_URL_PATTERN = '^https?://[^/@?# ]+(/[^?# ]*)?$';
export const BaseURL = rules(
  LongString.meta({
    description: "Overrides the provider's default endpoint, e.g. https://llm.example.com/v1.",
  }),
  {
    rule: `self.matches('${BASE_URL_PATTERN}')`,
    message:
      'baseURL must be an http or https URL (http(s)://host[:port][/path]) without userinfo, query or fragment',
  },
);

// ---------- virtual model ----------
export const ModelRef = obj({ name: ObjectName }).meta({ description: 'A GwModel in the same namespace.' });
const targetModel = LongString.optional().meta({
  description:
    'The model to request from the referenced GwModel; required when its match is a wildcard (checked by the controller, which cannot be said in CEL).',
});
const Targets = <T extends z.ZodType>(target: T) => z.array(target).min(1).max(64);

export const WeightedTarget = obj({
  modelRef: ModelRef,
  model: targetModel,
  weight: z.int().min(0).max(1000000).default(1).meta({
    description: 'The share of requests this target gets, relative to the others; 0: none. Default: 1.',
  }),
});
export const FailoverTarget = obj({
  modelRef: ModelRef,
  model: targetModel,
  priority: z.int().min(0).max(1000000).optional().meta({
    description:
      'Lower values are tried first; targets of the same priority (or without one, after those with one) are tried in their listed order. agentgateway picks among equal priorities by health and latency; gw does not yet.',
  }),
});
export const ConditionalTarget = obj({
  modelRef: ModelRef,
  model: targetModel,
  when: CELExpression.optional().meta({
    description:
      'Routes here when true (request variables as in authorization rules); unset only on the last target, the fallback.',
  }),
});

export const VirtualModel = rules(
  obj({
    weighted: obj({
      targets: rules(Targets(WeightedTarget), {
        rule: 'self.size() == 0 || self.exists(t, t.weight > 0)',
        message: 'at least one target needs a weight above 0',
      }).meta({ description: 'The models requests are spread over, each with a weight.' }),
    })
      .optional()
      .meta({ description: 'Spreads requests over the targets in proportion to their weights.' }),
    failover: obj({
      targets: Targets(FailoverTarget).meta({ description: 'The models to try, by priority then in order.' }),
    })
      .optional()
      .meta({ description: 'Tries the targets in order; the next one serves when the previous one fails.' }),
    conditional: obj({
      targets: rules(Targets(ConditionalTarget), {
        // has() on an indexed element is not portable between CEL implementations; map() then index is.
        rule: 'self.filter(t, !has(t.when)).size() == (self.map(t, has(t.when))[self.size() - 1] ? 0 : 1)',
        message:
          'every target but the last needs when; only the last target may omit it to act as the fallback',
      }).meta({ description: 'The models to choose from, in order, each with its when condition.' }),
    })
      .optional()
      .meta({ description: 'Evaluates the targets in order and routes to the first whose when is true.' }),
  }),
  exactlyOne(['weighted', 'failover', 'conditional']),
);

// ---------- policies ----------
/**
 * A model's policies: gw's BackendWithAI (connection settings, auth, ai) plus agentgateway's
 * AgentgatewayModel fields beside them. promptGuard is ai.promptGuard's place there (set one of them).
 */
export const ModelPolicies = rules(
  BackendWithAI.extend({
    promptGuard: PromptGuard.optional().meta({
      description:
        "Guards on this model's requests and responses (the same as ai.promptGuard; set one of them).",
    }),
    authorization: Authorization.optional().meta({
      description:
        'Rules a request must pass to be sent to this model (CEL; llmRequest is the request); otherwise 403 in the client’s format.',
    }),
    headers: rules(
      obj({
        request: HeaderModifier.optional().meta({
          description: 'Header changes to requests sent to the provider.',
        }),
        response: HeaderModifier.optional().meta({
          description: "Header changes to the provider's answers returned to the client.",
        }),
      }),
      atLeastOne(['request', 'response']),
    )
      .optional()
      .meta({
        description:
          "Headers set, added or removed on this model's requests to the provider and its answers.",
      }),
    transformations: FieldExpressions.optional().meta({
      description:
        'Request fields set from CEL over llmRequest before it is converted (the same as ai.transformations).',
    }),
    finalTransformations: FieldExpressions.optional().meta({
      description:
        "Fields of the request in the provider's format, set from CEL once converted (the same as ai.finalTransformations).",
    }),
  }),
  {
    rule: '!has(self.promptGuard) || !has(self.ai) || !has(self.ai.promptGuard)',
    message: 'set one of promptGuard and ai.promptGuard',
  },
);

// ---------- spec ----------
/** A provider setting block only the named provider reads. */
const onlyFor = (field: string, provider: string) => ({
  rule: `!has(self.${field}) || (has(self.provider) && self.provider == '${provider}')`,
  message: `${field} may only be set when provider is ${provider}`,
});

export const GwModelSpec = rules(
  obj({
    parentRefs: rules(z.array(ModelParentReference).min(1).max(16), {
      // whole-object equality (after defaulting): field-wise needs `namespace`, a CEL reserved word that
      // the API server wants escaped as __namespace__ and cel-js does not know
      rule: 'self.all(a, self.exists_one(b, a == b))',
      message: 'parentRefs must be unique',
    }).meta({
      description:
        'Where the model is served: Gateways, ListenerSets or an HTTPRoute rule, each listed once.',
    }),
    match: ModelMatch.meta({ description: 'Which requests this GwModel serves, by the model they ask for.' }),
    visibility: z.enum(['Public', 'Internal']).default('Public').meta({
      description: 'Internal models are not served to clients directly; only virtual models route to them.',
    }),
    provider: ModelProvider.optional().meta({
      description:
        'The provider that serves the model (OpenAI, Anthropic, Bedrock, Custom, ...); set this or virtualModel. Its settings go in the field of the same name.',
    }),
    azure: AzureSettings.optional().meta({ description: 'Settings of provider Azure or AzureOpenAI.' }),
    vertexai: VertexAISettings.optional().meta({ description: 'Settings of provider VertexAI.' }),
    bedrock: BedrockSettings.optional().meta({ description: 'Settings of provider Bedrock.' }),
    custom: CustomProviderSettings.optional().meta({ description: 'Settings of provider Custom.' }),
    baseURL: BaseURL.optional(),
    policies: ModelPolicies.optional().meta({ description: 'Connection and AI settings for this model.' }),
    virtualModel: VirtualModel.optional().meta({
      description:
        'Route to other GwModels instead of a provider: weighted, failover or conditional; set this or provider.',
    }),
  }),
  exactlyOne(['provider', 'virtualModel']),
  {
    rule: "!has(self.azure) || (has(self.provider) && (self.provider == 'AzureOpenAI' || self.provider == 'Azure'))",
    message: 'azure may only be set when provider is Azure or AzureOpenAI',
  },
  {
    rule: "!has(self.provider) || self.provider != 'Azure' || (has(self.azure) && has(self.azure.resourceName))",
    message: 'provider Azure needs azure.resourceName and azure.resourceType',
  },
  {
    rule: "!has(self.azure) || !has(self.provider) || self.provider != 'Azure' || (!has(self.azure.endpoint) && !has(self.azure.deploymentName))",
    message: 'azure.endpoint and azure.deploymentName are for provider AzureOpenAI (Azure uses resourceName)',
  },
  {
    rule: "!has(self.azure) || !has(self.provider) || self.provider != 'AzureOpenAI' || !has(self.azure.resourceName)",
    message: 'azure.resourceName, resourceType and projectName are for provider Azure',
  },
  onlyFor('vertexai', 'VertexAI'),
  onlyFor('bedrock', 'Bedrock'),
  onlyFor('custom', 'Custom'),
  {
    rule: "!has(self.provider) || self.provider != 'Custom' || has(self.custom)",
    message: 'provider Custom needs custom (at least its formats)',
  },
  {
    rule: "!has(self.provider) || self.provider != 'Custom' || !has(self.custom) || has(self.custom.backendRef) != has(self.baseURL)",
    message: 'a Custom provider needs exactly one of custom.backendRef or baseURL',
  },
  {
    rule: "!has(self.provider) || self.provider != 'VertexAI' || has(self.vertexai)",
    message: 'provider VertexAI needs vertexai (at least its projectId)',
  },
  {
    rule: "!has(self.provider) || self.provider != 'AzureOpenAI' || has(self.baseURL) || (has(self.azure) && has(self.azure.endpoint))",
    message: 'provider AzureOpenAI needs azure.endpoint or baseURL',
  },
  { rule: '!has(self.baseURL) || has(self.provider)', message: 'baseURL may only be set with provider' },
);

export const ModelParentStatus = obj({
  parentRef: ParentReference,
  controllerName: z.string().min(1).max(253),
  conditions: Conditions,
});
export const GwModelStatus = obj({
  parents: z.array(ModelParentStatus).max(16).optional(),
});

export type GwModelSpec = z.output<typeof GwModelSpec>;
export type GwModelStatus = z.output<typeof GwModelStatus>;
