// The `aws` backend (Amazon Bedrock AgentCore): what an agent runtime's ARN must look like, and what
// the gateway reads from it (the region it signs for and calls, the partition's DNS suffix). The
// standalone loader and the controller both ask this module, so a bad ARN reads the same in both.
import type { BackendAuth } from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import type { Problem } from './problem.ts';

export interface AgentRuntimeArn {
  /** aws, aws-cn, aws-us-gov, … */
  partition: string;
  region: string;
  account: string;
  runtimeId: string;
}

/**
 * arn:<partition>:bedrock-agentcore:<region>:<12-digit account>:runtime/<runtime id>. Written without
 * backslashes so the CRD's CEL rule (matches(), RE2) uses the same text.
 */
export const AGENT_RUNTIME_ARN_PATTERN =
  '^arn:(aws(-[a-z]+)*):bedrock-agentcore:([a-z]{2}(-[a-z]+)+-[0-9]+):([0-9]{12}):runtime/([A-Za-z0-9_-]+)$';
const ARN = new RegExp(AGENT_RUNTIME_ARN_PATTERN);

export const AGENT_RUNTIME_ARN_MESSAGE =
  'agentRuntimeArn must be an AgentCore runtime ARN (arn:aws:bedrock-agentcore:<region>:<12-digit account>:runtime/<id>)';

export function parseAgentRuntimeArn(arn: string): AgentRuntimeArn | undefined {
  const m = ARN.exec(arn);
  if (!m) return undefined;
  const [, partition, , region, , account, runtimeId] = m as unknown as string[];
  if (!partition || !region || !account || !runtimeId) return undefined;
  return { partition, region, account, runtimeId };
}

/** The DNS suffix of AWS endpoints in a partition (China's regions have their own). */
export function awsDnsSuffix(partition: string): string {
  return partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com';
}

/** An `agentCore` block in the standalone shape ({agentRuntimeArn, qualifier?}). */
export function checkAgentCore(
  a: { agentRuntimeArn: string; qualifier?: string | null | undefined },
  path: FieldPath,
): Problem[] {
  const out: Problem[] = [];
  if (!parseAgentRuntimeArn(a.agentRuntimeArn))
    out.push({ path: [...path, 'agentRuntimeArn'], message: AGENT_RUNTIME_ARN_MESSAGE });
  return out;
}

/**
 * backendAuth on an aws backend: its aws form only gives credentials, since the backend signs for
 * bedrock-agentcore in the ARN's region; other forms (a bearer for a JWT authorizer) replace SigV4.
 */
export function checkAgentCoreAuth(auth: BackendAuth, region: string, path: FieldPath): Problem[] {
  if (typeof auth !== 'object' || !('aws' in auth) || !auth.aws) return [];
  const aws = auth.aws as Record<string, unknown>;
  return (['region', 'serviceName', 'service'] as const)
    .filter((f) => aws[f] != null)
    .map((f) => ({
      path: [...path, 'aws', f],
      message: `backendAuth.aws.${f} does not apply to an aws backend: it signs for bedrock-agentcore in the region of its agentRuntimeArn (${region})`,
    }));
}
