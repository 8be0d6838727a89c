// GwBackend: a destination of routes. Exactly one kind (static, ai, mcp, a2a, dynamicForwardProxy,
// aws), plus connection and AI/MCP policies that win over a GwPolicy setting the same field.
// Spec: "GwBackend specifics", "Backend connection settings".

import { z } from 'zod';
import { AGENT_RUNTIME_ARN_MESSAGE, AGENT_RUNTIME_ARN_PATTERN } from '../checks/aws.ts';
import { atLeastOne, exactlyOne, mapList, obj, rules } from './kube.ts';
import { BackendFull, BackendWithAI, FailureMode } from './policy-blocks.ts';
import {
  Conditions,
  LocalBackendObjectReference,
  LongString,
  ObjectName,
  Port,
  SectionName,
  ShortString,
  TinyString,
} from './types.ts';

const hostPortTogether = {
  rule: 'has(self.host) == has(self.port)',
  message: 'host and port must be set together',
};

export const StaticBackend = rules(
  obj({
    host: ShortString.optional().meta({ description: 'Hostname or IP address.' }),
    port: Port.optional().meta({ description: 'The port on host; required with host.' }),
    unixPath: LongString.optional().meta({ description: 'Path of a unix domain socket.' }),
  }),
  exactlyOne(['host', 'unixPath'], 'static: exactly one of host or unixPath must be set'),
  hostPortTogether,
);

export const A2ABackend = obj({
  host: ShortString.meta({ description: 'Hostname or IP address of the agent.' }),
  port: Port.meta({ description: 'Port of the agent.' }),
});

// ---------- AI ----------
/**
 * The API formats a custom provider's endpoint speaks, in agentgateway's names (completions is
 * OpenAI's chat completions, messages Anthropic's); GenerateContent (Gemini's) is gw's addition.
 */
export const LLM_FORMATS = [
  'Completions',
  'Messages',
  'Responses',
  'Embeddings',
  'Realtime',
  'Rerank',
  'AnthropicTokenCount',
  'GenerateContent',
] as const;
/** A custom provider's formats, each listed once, each at its default path unless `path` says. */
export const CustomFormats = mapList(
  z
    .array(
      rules(
        obj({
          type: z.enum(LLM_FORMATS).meta({
            description:
              "The API format: Completions (OpenAI chat completions), Messages (Anthropic's), Responses, Embeddings, Realtime, Rerank, AnthropicTokenCount or GenerateContent (Gemini's).",
          }),
          path: LongString.optional().meta({ description: "The endpoint's path; default the format's own." }),
        }),
        { rule: "!has(self.path) || self.path.startsWith('/')", message: 'path must start with /' },
      ),
    )
    .min(1)
    .max(6),
  ['type'],
);
export const BEDROCK_REGION_PATTERN = '^[a-z0-9-]+$';
const Model = ShortString.meta({ description: 'Model sent to the provider, overriding the request.' });

export const BedrockProvider = obj({
  region: rules(z.string().min(1).max(63), {
    rule: `self.matches('${BEDROCK_REGION_PATTERN}')`,
    message: 'region must be lowercase letters, digits and dashes, e.g. us-east-1',
  })
    .default('us-east-1')
    .meta({ description: 'The AWS region of Bedrock, e.g. us-west-2. Default: us-east-1.' }),
  guardrail: obj({
    identifier: ShortString.meta({ description: 'The Bedrock guardrail id.' }),
    version: ShortString.meta({ description: 'The guardrail version, e.g. 1 or DRAFT.' }),
  })
    .optional()
    .meta({ description: 'A Bedrock guardrail applied to every request by Bedrock itself.' }),
  model: Model.optional(),
});
export const CustomProvider = obj({
  backendRef: LocalBackendObjectReference.optional().meta({
    description:
      'A Service or InferencePool in the same namespace; when unset the provider host and port are used.',
  }),
  providerOverride: TinyString.default('custom').meta({
    description: 'The provider name reported in telemetry and traces. Default: custom.',
  }),
  formats: CustomFormats.meta({ description: 'The provider-native API formats the endpoint speaks.' }),
  model: Model.optional(),
});

export const AzureOpenAIProvider = obj({
  endpoint: ShortString.meta({ description: 'The resource host, e.g. my-resource.openai.azure.com.' }),
  deploymentName: ShortString.optional().meta({
    description: 'The Azure deployment; default the model name.',
  }),
  apiVersion: TinyString.optional().meta({ description: 'The api-version query parameter sent to Azure.' }),
});
export const AZURE_RESOURCE_TYPES = ['OpenAI', 'Foundry'] as const;
/** agentgateway's resource-based Azure provider: the host follows from the resource's name and type. */
export const AzureProvider = rules(
  obj({
    resourceName: ShortString.meta({
      description:
        'The Azure resource: the host is <resourceName>.openai.azure.com (OpenAI) or <resourceName>.services.ai.azure.com (Foundry).',
    }),
    resourceType: z
      .enum(AZURE_RESOURCE_TYPES)
      .meta({ description: 'The kind of Azure resource: OpenAI or Foundry.' }),
    projectName: ShortString.optional().meta({
      description:
        'The Foundry project (paths /api/projects/<projectName>/openai/v1/…); required for Foundry.',
    }),
    apiVersion: TinyString.optional().meta({ description: 'Default v1.' }),
    model: Model.optional(),
  }),
  {
    rule: "self.resourceType != 'Foundry' || has(self.projectName)",
    message: 'projectName is required when resourceType is Foundry',
  },
);
export const VertexAIProvider = obj({
  projectId: ShortString.meta({ description: 'The Google Cloud project.' }),
  region: TinyString.default('global').meta({
    description: 'A Vertex AI location such as us-central1; global (the default) uses the global endpoint.',
  }),
  model: Model.optional(),
});
const ModerationMode = obj({
  mode: z.enum(['Block', 'Score']).meta({
    description:
      'Score: OpenAI reports what it finds in the response; Block: it also refuses flagged content.',
  }),
});
export const OpenAIProvider = obj({
  model: Model.optional(),
  moderation: obj({
    model: ShortString.default('omni-moderation-latest').meta({
      description: 'The moderation model. Default: omni-moderation-latest.',
    }),
    policy: obj({
      input: ModerationMode.optional().meta({ description: "For the request's input." }),
      output: ModerationMode.optional().meta({ description: 'For the generated output.' }),
    })
      .optional()
      .meta({ description: "Unset: OpenAI's default policy." }),
  })
    .optional()
    .meta({
      description:
        "OpenAI's inline moderation: the moderation parameter written into each chat completions and responses request sent to this provider, replacing one the client sent.",
    }),
});

/**
 * The provider variants: agentgateway's eight (seven managed hosted providers, then custom), gw's
 * mistral, and gw's earlier spellings azureOpenAI and vertexAI (the same settings as azureopenai and
 * vertexai; the spec names no spelling, so both are accepted).
 */
export const PROVIDER_VARIANTS = [
  'openai',
  'azureopenai',
  'azureOpenAI',
  'azure',
  'anthropic',
  'gemini',
  'vertexai',
  'vertexAI',
  'bedrock',
  'mistral',
  'custom',
] as const;
const PATH_PREFIX_PROVIDERS = ['openai', 'anthropic'] as const;

export const LLMProvider = rules(
  obj({
    name: SectionName.optional().meta({
      description: 'Names the provider for targetRefs[].sectionName; required inside groups.',
    }),
    openai: OpenAIProvider.optional().meta({ description: 'OpenAI (api.openai.com).' }),
    azureopenai: AzureOpenAIProvider.optional().meta({ description: 'Azure OpenAI by its endpoint host.' }),
    azureOpenAI: AzureOpenAIProvider.optional().meta({
      description: "gw's earlier name of azureopenai (the same settings); set one of them.",
    }),
    azure: AzureProvider.optional().meta({
      description: 'Azure OpenAI or Azure AI Foundry by resource name and type.',
    }),
    anthropic: obj({ model: Model.optional() })
      .optional()
      .meta({ description: 'Anthropic (api.anthropic.com).' }),
    gemini: obj({ model: Model.optional() }).optional().meta({ description: "Google's Gemini API." }),
    vertexai: VertexAIProvider.optional().meta({ description: 'Google Vertex AI.' }),
    vertexAI: VertexAIProvider.optional().meta({
      description: "gw's earlier name of vertexai (the same settings); set one of them.",
    }),
    bedrock: BedrockProvider.optional().meta({
      description: 'Amazon Bedrock (requests signed with AWS SigV4).',
    }),
    mistral: obj({ model: Model.optional() }).optional().meta({ description: 'Mistral AI.' }),
    custom: CustomProvider.optional().meta({
      description:
        'Any endpoint speaking provider-native formats: a Service or InferencePool, or host and port.',
    }),
    host: ShortString.optional().meta({
      description: "Send to this host instead of the provider's own; set with port.",
    }),
    port: Port.optional().meta({ description: 'The port of host; set with host.' }),
    path: LongString.optional().meta({
      description: 'Replaces the whole request path sent to the provider.',
    }),
    pathPrefix: LongString.optional().meta({
      description: "Replaces the provider's base path (such as /v1); openai and anthropic only.",
    }),
    policies: BackendWithAI.optional().meta({
      description: "This provider's own connection and AI settings, over the backend's policies.",
    }),
  }),
  exactlyOne(PROVIDER_VARIANTS, `exactly one provider must be set: ${PROVIDER_VARIANTS.join(', ')}`),
  hostPortTogether,
  {
    rule: `!has(self.pathPrefix) || ${PATH_PREFIX_PROVIDERS.map((p) => `has(self.${p})`).join(' || ')}`,
    message: `pathPrefix is only supported for the ${PATH_PREFIX_PROVIDERS.join(' and ')} providers`,
  },
  {
    rule: '!has(self.custom) || has(self.custom.backendRef) || has(self.host)',
    message: 'a custom provider needs custom.backendRef, or host and port',
  },
);

export const AIBackend = rules(
  obj({
    provider: LLMProvider.optional().meta({ description: 'A single LLM provider; set this or groups.' }),
    groups: z
      .array(
        obj({
          providers: z
            .array(
              rules(LLMProvider, {
                rule: 'has(self.name)',
                message: 'providers inside groups must have a name',
              }),
            )
            .min(1)
            .max(16)
            .meta({ description: 'The providers of this group; each needs a name.' }),
        }),
      )
      .min(1)
      .max(8)
      .optional()
      .meta({ description: 'Priority groups: the first group with a healthy provider serves.' }),
  }),
  exactlyOne(['provider', 'groups'], 'ai: exactly one of provider or groups must be set'),
  {
    rule:
      '!has(self.groups) || self.groups.all(g, g.providers.all(p, !has(p.name) || ' +
      'self.groups.filter(h, h.providers.exists(q, has(q.name) && q.name == p.name)).size() == 1 && ' +
      'g.providers.filter(q, has(q.name) && q.name == p.name).size() == 1))',
    message: 'provider names must be unique across all groups',
  },
);

// ---------- MCP ----------
// agentgateway's shapes: a selector picks Services by label (in the backend's namespace unless
// `namespaces` selects namespaces), and each of their ports whose appProtocol says MCP is a target.
const LabelSelector = obj({
  matchLabels: z
    .record(z.string().min(1).max(317), z.string().max(63))
    .meta({ maxProperties: 64 })
    .optional()
    .meta({ description: 'Labels an object must carry, each with this value.' }),
  matchExpressions: z
    .array(
      obj({
        key: z.string().min(1).max(317).meta({ description: 'The label key.' }),
        operator: z
          .enum(['In', 'NotIn', 'Exists', 'DoesNotExist'])
          .meta({ description: 'How the label is compared with values.' }),
        values: z
          .array(z.string().max(63))
          .max(64)
          .optional()
          .meta({ description: 'The values for In and NotIn; empty for Exists and DoesNotExist.' }),
      }),
    )
    .max(16)
    .optional()
    .meta({ description: 'Label requirements, all of which must hold.' }),
});
export const McpSelector = rules(
  obj({
    services: LabelSelector.optional().meta({ description: 'Labels of the Services to use.' }),
    namespaces: LabelSelector.optional().meta({
      description: "Labels of the namespaces to look in; unset: the backend's own namespace.",
    }),
  }),
  atLeastOne(['namespaces', 'services']),
);
export const McpStatic = rules(
  obj({
    host: ShortString.optional().meta({ description: 'Hostname or IP address of the MCP server.' }),
    backendRef: obj({ name: ObjectName }).optional().meta({
      description:
        "A Service of the backend's namespace, instead of host; port, path and protocol stay here.",
    }),
    port: Port.meta({ description: 'Port of the MCP server.' }),
    path: LongString.optional().meta({ description: 'Default: /mcp for StreamableHTTP, /sse for SSE.' }),
    protocol: z
      .enum(['StreamableHTTP', 'SSE'])
      .default('StreamableHTTP')
      .meta({ description: 'The MCP transport: StreamableHTTP (default) or the older SSE.' }),
    policies: BackendWithAI.omit({ ai: true })
      .optional()
      .meta({ description: "Connection settings of this target; they win over the backend's policies." }),
  }),
  exactlyOne(['host', 'backendRef'], 'static: exactly one of host or backendRef must be set'),
);
export const McpTarget = rules(
  obj({
    name: SectionName.meta({
      description:
        'Names the target: the prefix of its tool and prompt names (see prefixMode), and a policy’s targetRefs[].sectionName.',
    }),
    selector: McpSelector.optional().meta({
      description:
        'Services whose ports have appProtocol gw.dev/mcp or gw.dev/mcp-sse (or agentgateway.dev/…, kgateway.dev/…); the path comes from the gw.dev/mcp-path annotation.',
    }),
    static: McpStatic.optional().meta({ description: 'One MCP server by host (or Service), port and path.' }),
  }),
  exactlyOne(['selector', 'static']),
);
export const McpBackend = rules(
  obj({
    targets: z.array(McpTarget).min(1).max(128).meta({
      description:
        'The MCP servers federated behind this backend, each named; set selector or static on each.',
    }),
    sessionRouting: z.enum(['Stateful', 'Stateless']).default('Stateful').meta({
      description:
        'Stateful (default): the gateway keeps an MCP session per client across the targets. Stateless: each request stands alone.',
    }),
    failureMode: FailureMode.default('FailClosed').meta({
      description:
        'When a target fails: FailClosed (default) fails the request, FailOpen leaves that target out.',
    }),
    prefixMode: z.enum(['Conditional', 'Always', 'Never']).default('Conditional').meta({
      description:
        'Conditional prefixes tool and prompt names with the target name only when there are several targets; Never requires names unique across targets.',
    }),
  }),
  {
    rule: 'self.targets.all(t, self.targets.filter(u, u.name == t.name).size() == 1)',
    message: 'target names must be unique',
  },
);

export const AwsBackend = rules(
  obj({
    agentCore: obj({
      agentRuntimeArn: rules(LongString, {
        rule: `self.matches('${AGENT_RUNTIME_ARN_PATTERN}')`,
        message: AGENT_RUNTIME_ARN_MESSAGE,
      }).meta({ description: 'The ARN of the AgentCore runtime; its region is read from it.' }),
      qualifier: ShortString.optional().meta({
        description: "The runtime endpoint name or version; unset: AgentCore's DEFAULT endpoint.",
      }),
    })
      .optional()
      .meta({ description: 'An Amazon Bedrock AgentCore runtime: every request is its InvokeAgentRuntime.' }),
  }),
  exactlyOne(['agentCore'], 'aws: agentCore must be set'),
);

export const BACKEND_KINDS = ['static', 'ai', 'mcp', 'a2a', 'dynamicForwardProxy', 'aws'] as const;
export const GwBackendSpec = rules(
  obj({
    static: StaticBackend.optional().meta({
      description: 'A fixed destination: a host and port, or a unix socket.',
    }),
    ai: AIBackend.optional().meta({
      description:
        'An LLM provider, or priority groups of providers; requests are read and translated as LLM calls.',
    }),
    mcp: McpBackend.optional().meta({ description: 'MCP servers federated into one MCP endpoint.' }),
    a2a: A2ABackend.optional().meta({ description: 'An agent speaking the A2A (agent-to-agent) protocol.' }),
    dynamicForwardProxy: obj({}).optional().meta({
      description:
        'Forwards to the host named by the Host header or TLS SNI; it can reach any destination, so put access controls in front of it.',
    }),
    aws: AwsBackend.optional().meta({ description: 'An AWS agent service: agentCore.' }),
    policies: BackendFull.optional().meta({
      description:
        "This backend's connection, credential, AI and MCP settings; they win over a GwPolicy's backend section setting the same field.",
    }),
  }),
  exactlyOne(BACKEND_KINDS),
  {
    rule: '!has(self.policies) || !has(self.policies.ai) || has(self.ai)',
    message: 'policies.ai applies only to ai backends',
  },
  {
    rule: '!has(self.policies) || !has(self.policies.mcp) || has(self.mcp)',
    message: 'policies.mcp applies only to mcp backends',
  },
);

export const GwBackendStatus = obj({ conditions: Conditions.optional() });

export type GwBackendSpec = z.output<typeof GwBackendSpec>;
export type GwBackendStatus = z.output<typeof GwBackendStatus>;
