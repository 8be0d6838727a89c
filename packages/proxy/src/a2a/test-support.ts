// A real A2A agent for tests: @a2a-js/sdk's server (JSON-RPC over Express, v1.0 with the v0.3
// compatibility layer) on 127.0.0.1, port 0. It answers by the text of the user's message:
//   anything  — a task that completes at once, its status message echoing the text;
//   "stream"  — working, then waits for release() before its artifact and completion, so a test can
//               see the first events arrive while the agent is still busy;
//   "wait"    — working until the task is canceled.
// Its cards (1.0 at /.well-known/agent-card.json, 0.3 at the older /.well-known/agent.json) name the
// agent's own address (http://127.0.0.1:<port>/a2a/jsonrpc): what a client gets through the gateway
// shows whether the gateway rewrote them.
import type { AddressInfo } from 'node:net';
import {
  type AgentCard,
  type Artifact,
  type Message,
  Role,
  type SendMessageRequest,
  type Task,
  TaskState,
  type TaskStatus,
} from '@a2a-js/sdk';
import { type Client, ClientFactory } from '@a2a-js/sdk/client';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';

export interface TestAgent {
  port: number;
  /** http://127.0.0.1:<port> */
  origin: string;
  /** JSON-RPC methods the agent received, in order. */
  calls: string[];
  /** Lets the waiting "stream" tasks finish. */
  release(): void;
  /** Resolves when a "stream" task has sent its first events and waits for release(). */
  streaming: Promise<void>;
  close(): Promise<void>;
}

export const AGENT_PATH = '/a2a/jsonrpc';

export interface AgentOptions {
  /** Default 0: any free port. */
  port?: number;
  /** A "stream" task goes on after this long instead of waiting for release() (a demo agent). */
  streamDelayMs?: number;
  /** Also serve A2A 1.0's HTTP+JSON binding at REST_PATH, named in the card after JSON-RPC. */
  rest?: boolean;
}

export const REST_PATH = '/a2a/rest';

export async function startAgent(opts: AgentOptions = {}): Promise<TestAgent> {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let streamingStarted!: () => void;
  const streaming = new Promise<void>((r) => {
    streamingStarted = r;
  });
  const canceled = new Map<string, () => void>();

  const executor: AgentExecutor = {
    async execute(rc, bus) {
      const text = textOf(rc.userMessage);
      const task = newTask(rc.taskId, rc.contextId, rc.userMessage);
      bus.publish(AgentEvent.task(task));
      if (text === 'stream') {
        status(bus, task, TaskState.TASK_STATE_WORKING, 'step 1');
        streamingStarted();
        if (opts.streamDelayMs === undefined) await released;
        else await new Promise((r) => setTimeout(r, opts.streamDelayMs));
        bus.publish(AgentEvent.artifactUpdate(artifact(task, 'result', 'streamed result')));
        status(bus, task, TaskState.TASK_STATE_COMPLETED, 'done');
      } else if (text === 'wait') {
        status(bus, task, TaskState.TASK_STATE_WORKING, 'waiting');
        await new Promise<void>((r) => canceled.set(task.id, r));
      } else {
        status(bus, task, TaskState.TASK_STATE_COMPLETED, `echo: ${text}`);
      }
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      const t = newTask(taskId, '', undefined);
      status(bus, t, TaskState.TASK_STATE_CANCELED, 'canceled');
      bus.finished();
      canceled.get(taskId)?.();
    },
  };

  const card: AgentCard = {
    name: 'gw test agent',
    description: 'echoes, streams and waits',
    supportedInterfaces: [],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [] } as never,
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const calls: string[] = [];
  const app = express();
  app.use(express.json());
  app.use((req, _res, next) => {
    const m = (req.body as { method?: unknown } | undefined)?.method;
    if (req.path.startsWith(REST_PATH)) calls.push(`${req.method} ${req.path}`);
    else if (req.method === 'POST' && typeof m === 'string') calls.push(m);
    next();
  });
  app.use(
    '/.well-known/agent-card.json',
    agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }),
  );
  // The older path serves a card in A2A 0.3's own shape (url, preferredTransport,
  // additionalInterfaces), which the SDK's client reads as a 0.3 agent.
  app.get('/.well-known/agent.json', (_req, res) => {
    res.json({
      protocolVersion: '0.3.0',
      name: card.name,
      description: card.description,
      version: card.version,
      url: `${origin}${AGENT_PATH}`,
      preferredTransport: 'JSONRPC',
      additionalInterfaces: [{ url: `${origin}${AGENT_PATH}`, transport: 'JSONRPC' }],
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [],
    });
  });
  app.use(
    AGENT_PATH,
    jsonRpcHandler({
      requestHandler: handler,
      userBuilder: UserBuilder.noAuthentication,
      legacyCompat: { enabled: true },
    }),
  );
  if (opts.rest)
    app.use(REST_PATH, restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const server = await new Promise<import('node:http').Server>((resolve) => {
    const s = app.listen(opts.port ?? 0, '127.0.0.1', () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  // Both protocol versions, at the agent's own address; the compat layer derives the v0.3 card
  // (url, additionalInterfaces) from these.
  card.supportedInterfaces = [
    { url: `${origin}${AGENT_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    { url: `${origin}${AGENT_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ...(opts.rest
      ? [{ url: `${origin}${REST_PATH}`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' }]
      : []),
  ];
  return {
    port,
    origin,
    calls,
    release,
    streaming,
    close: () =>
      new Promise<void>((resolve) => {
        release();
        for (const c of canceled.values()) c();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function textOf(m: Message | undefined): string {
  const p = m?.parts[0]?.content;
  return p?.$case === 'text' ? p.value : '';
}

function message(text: string, task: Task): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: task.contextId,
    taskId: task.id,
    role: Role.ROLE_AGENT,
    parts: [{ content: { $case: 'text', value: text } } as Message['parts'][number]],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function newTask(id: string, contextId: string, user: Message | undefined): Task {
  const status: TaskStatus = {
    state: TaskState.TASK_STATE_SUBMITTED,
    message: undefined,
    timestamp: undefined,
  };
  return { id, contextId, status, artifacts: [], history: user ? [user] : [], metadata: undefined };
}

function status(bus: ExecutionEventBus, task: Task, state: TaskState, text: string): void {
  bus.publish(
    AgentEvent.statusUpdate({
      taskId: task.id,
      contextId: task.contextId,
      status: { state, message: message(text, task), timestamp: new Date().toISOString() },
      metadata: undefined,
    }),
  );
}

function artifact(task: Task, name: string, text: string) {
  const a: Artifact = {
    artifactId: crypto.randomUUID(),
    name,
    description: '',
    parts: [{ content: { $case: 'text', value: text } } as Artifact['parts'][number]],
    metadata: undefined,
    extensions: [],
  };
  return {
    taskId: task.id,
    contextId: task.contextId,
    artifact: a,
    append: false,
    lastChunk: true,
    metadata: undefined,
  };
}

/** The SDK's client for the agent whose card is at `cardUrl` (it calls whatever the card names). */
export function a2aClient(cardUrl: string): Promise<Client> {
  return new ClientFactory().createFromUrl(cardUrl, '');
}

/** A SendMessage request with one text part from the user. */
export function userText(text: string, returnImmediately = false): SendMessageRequest {
  const m: Message = {
    messageId: crypto.randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text } } as Message['parts'][number]],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  return {
    tenant: '',
    message: m,
    configuration: {
      acceptedOutputModes: ['text/plain'],
      taskPushNotificationConfig: undefined,
      returnImmediately,
    },
    metadata: undefined,
  };
}
