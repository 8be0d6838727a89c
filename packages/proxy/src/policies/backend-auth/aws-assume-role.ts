// backendAuth aws.assumeRole (agentgateway's): the role's temporary credentials, from STS AssumeRole
// called with the ambient ones (environment, then the AWS SDK's default chain) by the SDK's own STS
// client, loaded on first use. The session name and tag values may be CEL over the request, so the
// credentials are kept per (session name, tags) until five minutes before they expire; concurrent
// requests for one session share one call.
import { AWS_SESSION_NAME } from '@gw/api/runtime';
import type { CelContext } from '../../cel/cel.ts';
import { type CelProgram, celToJson, compileCel } from '../../cel/cel.ts';
import type { AwsAssumeRoleIR } from '../../config/ir.ts';
import { GwError } from '../../errors.ts';
import { Lazy } from '../../lazy.ts';
import type { AwsCredentials } from '../../llm/providers/bedrock/sigv4.ts';

const sts = new Lazy(() => import('@aws-sdk/client-sts'));
/** Credentials are renewed this long before they expire. */
const REFRESH_MS = 5 * 60_000;
/** Sessions kept per role at most; the oldest goes first. */
const MAX_SESSIONS = 1024;

type Value = string | { program: CelProgram; what: string };
/** One session's credentials, good until `until`, or the call that is fetching them. */
interface Session {
  creds?: AwsCredentials;
  until: number;
  pending: Promise<AwsCredentials> | undefined;
}

function compiled(v: string | { expression: string }, what: string): Value {
  return typeof v === 'string' ? v : { program: compileCel(v.expression), what };
}

/** What the session name and tags are evaluated over: a request, or a guard's view of one. */
export interface CelSource {
  celContext(): CelContext;
}

/** Credentials for the role, for this request's session; rejects the request when a name does not evaluate. */
export function assumeRole(r: AwsAssumeRoleIR, region: string): (ctx: CelSource) => Promise<AwsCredentials> {
  const sessionName = r.sessionName === undefined ? undefined : compiled(r.sessionName, 'the session name');
  const tags = r.tags.map((t) => ({
    key: t.key,
    value: compiled(
      t.expression !== undefined ? { expression: t.expression } : (t.value ?? ''),
      `tag ${t.key}`,
    ),
  }));
  const defaultName = `gw-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const sessions = new Map<string, Session>();
  let client: InstanceType<Awaited<typeof sts.ready>['STSClient']> | undefined;

  const evaluate = (ctx: CelSource, v: Value): string => {
    if (typeof v === 'string') return v;
    const out = v.program.eval(ctx.celContext());
    const j = out === undefined || out === null ? undefined : celToJson(out);
    if (typeof j !== 'string' && typeof j !== 'number' && typeof j !== 'boolean')
      throw new GwError(
        'GW_ERR_FORBIDDEN',
        `backendAuth aws.assumeRole: ${v.what} has no value for this request`,
      );
    return String(j);
  };

  const call = async (
    name: string,
    tagValues: { Key: string; Value: string }[],
  ): Promise<{ creds: AwsCredentials; expires: number }> => {
    const { STSClient, AssumeRoleCommand } = sts.value ?? (await sts.ready);
    client ??= new STSClient({ region });
    const command = new AssumeRoleCommand({
      RoleArn: r.roleArn,
      RoleSessionName: name,
      ...(tagValues.length > 0 ? { Tags: tagValues } : {}),
      ...(r.externalId ? { ExternalId: r.externalId } : {}),
    });
    const out = await client.send(command).catch((err: Error) => {
      throw new GwError(
        'GW_ERR_INTERNAL',
        `backendAuth aws.assumeRole: STS refused to assume ${r.roleArn}: ${err.message}`,
      );
    });
    const c = out.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey)
      throw new GwError(
        'GW_ERR_INTERNAL',
        `backendAuth aws.assumeRole: STS returned no credentials for ${r.roleArn}`,
      );
    return {
      creds: {
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        ...(c.SessionToken ? { sessionToken: c.SessionToken } : {}),
      },
      expires: c.Expiration?.getTime() ?? Date.now() + 15 * 60_000,
    };
  };

  return async (ctx) => {
    const name = sessionName === undefined ? defaultName : evaluate(ctx, sessionName);
    if (!AWS_SESSION_NAME.test(name))
      throw new GwError(
        'GW_ERR_FORBIDDEN',
        `backendAuth aws.assumeRole: ${JSON.stringify(name)} is not a session name (2 to 64 letters, digits or +=,.@_-)`,
      );
    const tagValues = tags.map((t) => ({ Key: t.key, Value: evaluate(ctx, t.value) }));
    const key = JSON.stringify([name, tagValues]);
    const now = Date.now();
    const s = sessions.get(key);
    if (s?.creds && now < s.until) return s.creds;
    if (s?.pending) return s.pending;
    const entry: Session = s ?? { until: 0, pending: undefined };
    entry.pending = call(name, tagValues).then(
      ({ creds, expires }) => {
        entry.creds = creds;
        entry.until = expires - REFRESH_MS;
        entry.pending = undefined;
        return creds;
      },
      (err: unknown) => {
        entry.pending = undefined;
        throw err;
      },
    );
    if (!s) {
      if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value as string);
      sessions.set(key, entry);
    }
    return entry.pending;
  };
}
