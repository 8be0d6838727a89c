// A local Amazon Bedrock AgentCore data plane that speaks InvokeAgentRuntime as AWS serves it:
// POST /runtimes/{URL-encoded runtime ARN}/invocations?qualifier=…, a SigV4 signature for
// bedrock-agentcore in the ARN's region, a runtime session id of at least 33 characters, the payload
// as the body, and the agent's answer streamed back as the agent writes it. Errors are AWS's JSON
// shape ({"message"} with x-amzn-errortype), so AWS SDK clients raise the named exception.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AwsCredentialsForTest, type SigV4Check, verifySigV4 } from './aws-sigv4.ts';

export const AGENT_CORE_SESSION_HEADER = 'x-amzn-bedrock-agentcore-runtime-session-id';

export interface AgentCoreInvocation {
  method: string;
  url: string;
  /** The runtime ARN, decoded from the path. */
  arn: string;
  qualifier: string | null;
  headers: IncomingMessage['headers'];
  body: Buffer;
  sigv4: SigV4Check;
  /** Resolves when the caller went away before the answer was complete. */
  aborted: Promise<void>;
  /** Whether the answer was complete when the connection closed. */
  completed: boolean;
}

export interface FakeAgentCoreOptions {
  /** The credentials AWS would know; a request must be signed by one of them. */
  keys: AwsCredentialsForTest[];
  /** The runtimes it hosts (ARNs) and, for each, its endpoint names (DEFAULT is always there). */
  runtimes: Record<string, string[]>;
  /** Writes the agent's answer (status 200 and the session header are set). Default: a JSON echo. */
  agent?: (inv: AgentCoreInvocation, res: ServerResponse) => Promise<void> | void;
}

export interface FakeAgentCore {
  port: number;
  url: string;
  seen: AgentCoreInvocation[];
  close(): Promise<void>;
}

const ROUTE = /^\/runtimes\/([^/]+)\/invocations$/;

function awsError(res: ServerResponse, status: number, type: string, message: string): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock.agentcore/`,
    'x-amzn-requestid': randomUUID(),
  });
  res.end(body);
}

export async function startFakeAgentCore(opts: FakeAgentCoreOptions): Promise<FakeAgentCore> {
  const seen: AgentCoreInvocation[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://x');
    const route = ROUTE.exec(url.pathname);
    if (req.method !== 'POST' || !route) {
      awsError(res, 404, 'UnknownOperationException', `no operation at ${req.method} ${url.pathname}`);
      return;
    }
    const arn = decodeURIComponent(route[1] as string);
    const region = arn.split(':')[3] ?? '';
    let abort!: () => void;
    const inv: AgentCoreInvocation = {
      method: req.method,
      url: req.url ?? '/',
      arn,
      qualifier: url.searchParams.get('qualifier'),
      headers: req.headers,
      body,
      sigv4: await verifySigV4(req, body, opts.keys, 'bedrock-agentcore', region),
      aborted: new Promise<void>((r) => {
        abort = r;
      }),
      completed: false,
    };
    seen.push(inv);
    res.on('close', () => {
      inv.completed = res.writableFinished;
      if (!res.writableFinished) abort();
    });
    if (!inv.sigv4.ok) {
      const unknown = inv.sigv4.reason.startsWith('unknown access key');
      awsError(
        res,
        403,
        unknown ? 'UnrecognizedClientException' : 'InvalidSignatureException',
        `The request signature we calculated does not match the signature you provided (${inv.sigv4.reason})`,
      );
      return;
    }
    const endpoints = opts.runtimes[arn];
    const qualifier = inv.qualifier ?? 'DEFAULT';
    if (!endpoints || (qualifier !== 'DEFAULT' && !endpoints.includes(qualifier))) {
      awsError(
        res,
        404,
        'ResourceNotFoundException',
        `No endpoint or agent found with qualifier '${qualifier}' for agent '${arn}'`,
      );
      return;
    }
    const session = req.headers[AGENT_CORE_SESSION_HEADER];
    if (typeof session !== 'string' || session.length < 33) {
      awsError(
        res,
        400,
        'ValidationException',
        `1 validation error detected: Value at 'runtimeSessionId' failed to satisfy constraint: Member must have length greater than or equal to 33`,
      );
      return;
    }
    res.setHeader(AGENT_CORE_SESSION_HEADER, session);
    res.setHeader('x-amzn-requestid', randomUUID());
    if (opts.agent) {
      res.statusCode = 200;
      await opts.agent(inv, res);
      return;
    }
    const echo = JSON.stringify({ echo: body.toString('utf8') });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(echo) });
    res.end(echo);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
