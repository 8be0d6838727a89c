// GwBackends → the backend each route may use (a host, a unix socket, the dynamic forward proxy, LLM
// providers (ai.ts), MCP servers (mcp.ts), an A2A agent or an AWS AgentCore runtime), its inline policies in the standalone shape, and its
// Accepted condition. A
// backend is usable only when it is valid, of a kind this build serves, and its connection settings
// can all be honoured.
import { checkAgentCore, checkAgentCoreAuth, parseAgentRuntimeArn } from '@gw/api/checks/aws';
import { isCidr } from '@gw/api/checks/cidr';
import type { BackendAuth } from '@gw/api/config/schema';
import { validateResource } from '@gw/api/crd/crds';
import type { GwBackendSpec } from '@gw/api/crd/gwbackend';
import { formatError } from '@gw/api/crd/validate';
import { translateAi } from './ai.ts';
import { bad, ok } from './conditions.ts';
import { key } from './gateways.ts';
import { translateMcp } from './mcp.ts';
import { backendPolicy } from './policy/backend.ts';
import type { ServicePolicyLookup } from './policy/context.ts';
import type { GwBackendPoliciesSpec } from './policy/spec.ts';
import { describeProblems } from './problems.ts';
import type { Condition, KubeObject, Lookup } from './types.ts';

export interface BackendInfo {
  key: string;
  object: KubeObject;
  target?: Record<string, unknown>;
  /** Inline spec.policies in the standalone shape. */
  policies: Record<string, unknown>;
  problems: string[];
  /** An mcp backend's CRD target names (what a GwPolicy sectionName names) → its targets' names. */
  mcpSections?: Map<string, string[]>;
  /** Whether routes may use it. */
  usable: boolean;
  accepted: Condition;
  /** The GwPolicy (namespace/name) whose backend section could not be honoured, making it unusable. */
  failedBy?: string;
}

export function collectBackends(
  objects: KubeObject[],
  lookup: Lookup,
  clusterDomain = 'cluster.local',
  /** What GwPolicies on a Service give an MCP target on it. */
  services?: ServicePolicyLookup,
): Map<string, BackendInfo> {
  const out = new Map<string, BackendInfo>();
  for (const o of objects.filter((x) => x.kind === 'GwBackend')) {
    const ns = o.metadata.namespace ?? 'default';
    const gen = o.metadata.generation;
    const info: BackendInfo = {
      key: key(o),
      object: o,
      policies: {},
      problems: [],
      usable: false,
      accepted: ok('Accepted', 'Accepted', 'accepted', gen),
    };
    out.set(info.key, info);
    const v = validateResource(o);
    if (!v.ok) {
      info.accepted = bad('Accepted', 'Invalid', v.errors.map(formatError).join('; '), gen);
      continue;
    }
    const spec = v.spec as {
      static?: { host?: string; port?: number; unixPath?: string };
      a2a?: { host: string; port: number };
      dynamicForwardProxy?: object;
      ai?: GwBackendSpec['ai'];
      mcp?: GwBackendSpec['mcp'];
      aws?: GwBackendSpec['aws'];
      policies?: GwBackendPoliciesSpec;
    };
    if (spec.static?.unixPath) info.target = { host: { host: `unix:${spec.static.unixPath}`, port: 0 } };
    else if (spec.static) info.target = { host: { host: spec.static.host, port: spec.static.port } };
    else if (spec.a2a) info.target = { a2a: { host: spec.a2a.host, port: spec.a2a.port } };
    else if (spec.dynamicForwardProxy) info.target = { dynamic: {} };
    else if (spec.ai) {
      // the connection settings and key of spec.policies go to each provider (ai.ts)
      const r = translateAi(spec.ai, o.metadata.name, ns, lookup, spec.policies);
      if (!r.ok) {
        info.accepted = bad('Accepted', r.reason, r.message, gen);
        continue;
      }
      info.target = { ai: r.ai };
      info.problems.push(...r.problems);
      info.usable = true;
      if (info.problems.length > 0) {
        info.accepted = ok(
          'Accepted',
          'PartiallyAccepted',
          `accepted without: ${info.problems.join('; ')}`,
          gen,
        );
      }
      continue;
    } else if (spec.mcp) {
      const r = translateMcp(spec.mcp, ns, lookup, clusterDomain, services);
      if (!r.ok) {
        info.accepted = bad('Accepted', r.reason, r.message, gen);
        continue;
      }
      info.target = { mcp: r.mcp };
      info.mcpSections = r.sections;
      info.problems.push(...r.problems);
    } else if (spec.aws?.agentCore) {
      // the ARN rule the standalone loader applies, in the same words
      const ac = spec.aws.agentCore;
      const problems = checkAgentCore(ac, ['spec', 'aws', 'agentCore']);
      if (problems.length > 0) {
        info.accepted = bad('Accepted', 'Invalid', describeProblems(problems), gen);
        continue;
      }
      info.target = {
        aws: {
          agentCore: {
            agentRuntimeArn: ac.agentRuntimeArn,
            ...(ac.qualifier ? { qualifier: ac.qualifier } : {}),
          },
        },
      };
    }
    if (spec.policies) {
      const p = backendPolicy(spec.policies, ns, lookup, 'spec.policies', ['spec', 'policies'], 'GwBackend');
      if (p.invalid.length > 0) {
        info.accepted = bad('Accepted', 'Invalid', describeProblems(p.invalid), gen);
        continue;
      }
      const { ai, ...policies } = p.policies as Record<string, unknown>;
      const arn = spec.aws?.agentCore && parseAgentRuntimeArn(spec.aws.agentCore.agentRuntimeArn);
      const awsAuth =
        arn && policies.backendAuth
          ? checkAgentCoreAuth(policies.backendAuth as BackendAuth, arn.region, ['spec', 'policies', 'auth'])
          : [];
      if (awsAuth.length > 0) {
        info.accepted = bad('Accepted', 'Invalid', describeProblems(awsAuth), gen);
        continue;
      }
      info.policies = policies;
      info.problems.push(...p.problems);
      if (ai) info.problems.push('spec.policies.ai applies to ai backends only');
      if (p.failClosed) {
        // a connection setting that cannot be honoured (e.g. a missing CA) must not be dropped silently
        info.accepted = bad('Accepted', 'InvalidReference', info.problems.join('; '), gen);
        continue;
      }
    }
    // A GwBackend named by hostname gets that name as Host (agentgateway's Auto for hostname-based
    // backends); its own policies may say otherwise. An IP address (isCidr takes one) keeps the
    // client's Host.
    if (spec.static?.host && !isCidr(spec.static.host) && info.policies.hostRewrite === undefined)
      info.policies = { hostRewrite: { mode: 'auto' }, ...info.policies };
    info.usable = true;
    if (info.problems.length > 0) {
      info.accepted = ok(
        'Accepted',
        'PartiallyAccepted',
        `accepted without: ${info.problems.join('; ')}`,
        gen,
      );
    }
  }
  return out;
}
