// A fake AWS STS for AssumeRole, speaking STS's query protocol as AWS documents it: a form-encoded
// POST signed with SigV4 (service `sts`, checked like the real service does, aws-sigv4.ts), answered
// with the AssumeRoleResponse XML, or STS's ErrorResponse XML when the role is refused. Each call gets
// credentials of its own (ASIA…N, session token `sts-token-N`), which tests then expect upstream.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AwsCredentialsForTest, verifySigV4 } from './aws-sigv4.ts';

export interface StsCall {
  roleArn: string;
  sessionName: string;
  tags: Record<string, string>;
  /** ExternalId, when the call sent one. */
  externalId?: string;
  /** What the fake issued. */
  issued: AwsCredentialsForTest;
}

export interface FakeSts {
  port: number;
  origin: string;
  calls: StsCall[];
  /** Roles the fake refuses to let anyone assume (AccessDenied). */
  refused: Set<string>;
  close(): Promise<void>;
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** STS with `keys` as the callers it knows (their requests must be signed by one), in `region`. */
export async function startFakeSts(keys: AwsCredentialsForTest[], region: string): Promise<FakeSts> {
  const calls: StsCall[] = [];
  const refused = new Set<string>();
  const error = (res: http.ServerResponse, status: number, code: string, message: string) => {
    res.writeHead(status, { 'content-type': 'text/xml' });
    res.end(
      `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${xml(message)}</Message></Error><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ErrorResponse>`,
    );
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const check = await verifySigV4(req, body, keys, 'sts', region);
    if (!check.ok) return error(res, 403, 'SignatureDoesNotMatch', check.reason);
    const form = new URLSearchParams(body.toString('utf8'));
    if (form.get('Action') !== 'AssumeRole' || form.get('Version') !== '2011-06-15')
      return error(res, 400, 'InvalidAction', `unsupported action ${form.get('Action')}`);
    const roleArn = form.get('RoleArn') ?? '';
    const sessionName = form.get('RoleSessionName') ?? '';
    if (refused.has(roleArn))
      return error(
        res,
        403,
        'AccessDenied',
        `User: arn:aws:iam::123456789012:user/gw is not authorized to perform: sts:AssumeRole on resource: ${roleArn}`,
      );
    const tags: Record<string, string> = {};
    for (let i = 1; form.has(`Tags.member.${i}.Key`); i++)
      tags[form.get(`Tags.member.${i}.Key`) as string] = form.get(`Tags.member.${i}.Value`) ?? '';
    const n = calls.length + 1;
    const issued = {
      accessKeyId: `ASIAFAKESTS${String(n).padStart(9, '0')}`,
      secretAccessKey: `sts-secret-${n}`,
      sessionToken: `sts-token-${n}`,
    };
    const externalId = form.get('ExternalId');
    calls.push({ roleArn, sessionName, tags, ...(externalId !== null ? { externalId } : {}), issued });
    const expiration = new Date(Date.now() + 3600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(
      `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><AssumedRoleUser><Arn>${xml(roleArn.replace(':iam::', ':sts::').replace(':role/', ':assumed-role/'))}/${xml(sessionName)}</Arn><AssumedRoleId>AROA3XFRBF535PLBIFPI4:${xml(sessionName)}</AssumedRoleId></AssumedRoleUser><Credentials><AccessKeyId>${issued.accessKeyId}</AccessKeyId><SecretAccessKey>${issued.secretAccessKey}</SecretAccessKey><SessionToken>${issued.sessionToken}</SessionToken><Expiration>${expiration}</Expiration></Credentials><PackedPolicySize>${Object.keys(tags).length}</PackedPolicySize></AssumeRoleResult><ResponseMetadata><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ResponseMetadata></AssumeRoleResponse>`,
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    calls,
    refused,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
