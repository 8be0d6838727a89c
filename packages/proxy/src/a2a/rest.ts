// A2A's HTTP+JSON (REST) binding as the gateway reads it: the operation and its task from the
// request's method and path (`POST …/message:send`, `GET …/tasks/{id}`, …), a message's task and
// context from the body, and the answer — plain JSON or server-sent events of the same objects, no
// JSON-RPC envelope — for the task and its state. The paths are matched at the end of the request's
// path (in any letter case, with or without a trailing slash, as the agent's router takes them), so
// the agent's endpoint may sit under any prefix. Operations are named as the JSON-RPC methods of the
// protocol version the path looks like: A2A 0.3's REST paths begin with /v1 (`/v1/message:send` is
// `message/send`), 1.0's do not (`/message:send` is `SendMessage`). The client chooses the path, as
// it chooses a JSON-RPC method's spelling: a rule on a2a.method names both versions' methods.
import type { A2aRequestInfo } from './info.ts';
import { type AnswerState, isObject, parseJson, str, taskOfPayload } from './jsonrpc.ts';

interface Operation {
  /** The HTTP methods it takes. */
  methods: readonly string[];
  /** Matched at the end of the path; the first group, when there is one, is the task id. */
  pattern: RegExp;
  /** Its name in A2A 1.0 and in 0.3 (undefined: 0.3 has no such operation). */
  v1: string;
  v03?: string;
}

const TASK = '([^/:]+)';
const OPERATIONS: readonly Operation[] = [
  { methods: ['POST'], pattern: /\/message:send$/i, v1: 'SendMessage', v03: 'message/send' },
  { methods: ['POST'], pattern: /\/message:stream$/i, v1: 'SendStreamingMessage', v03: 'message/stream' },
  {
    methods: ['POST'],
    pattern: new RegExp(`/tasks/${TASK}:cancel$`, 'i'),
    v1: 'CancelTask',
    v03: 'tasks/cancel',
  },
  {
    methods: ['GET', 'POST'],
    pattern: new RegExp(`/tasks/${TASK}:subscribe$`, 'i'),
    v1: 'SubscribeToTask',
    v03: 'tasks/resubscribe',
  },
  {
    methods: ['POST'],
    pattern: new RegExp(`/tasks/${TASK}/pushNotificationConfigs$`, 'i'),
    v1: 'CreateTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/set',
  },
  {
    methods: ['GET'],
    pattern: new RegExp(`/tasks/${TASK}/pushNotificationConfigs$`, 'i'),
    v1: 'ListTaskPushNotificationConfigs',
    v03: 'tasks/pushNotificationConfig/list',
  },
  {
    methods: ['GET'],
    pattern: new RegExp(`/tasks/${TASK}/pushNotificationConfigs/[^/]+$`, 'i'),
    v1: 'GetTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/get',
  },
  {
    methods: ['DELETE'],
    pattern: new RegExp(`/tasks/${TASK}/pushNotificationConfigs/[^/]+$`, 'i'),
    v1: 'DeleteTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/delete',
  },
  { methods: ['GET'], pattern: new RegExp(`/tasks/${TASK}$`, 'i'), v1: 'GetTask', v03: 'tasks/get' },
  { methods: ['GET'], pattern: /\/tasks$/i, v1: 'ListTasks' },
  { methods: ['GET'], pattern: /\/extendedAgentCard$/i, v1: 'GetExtendedAgentCard' },
  // 0.3's only: the authenticated extended card
  { methods: ['GET'], pattern: /\/v1\/card$/i, v1: 'agent/getAuthenticatedExtendedCard' },
];

/** A0.3's REST paths are under /v1 (…/v1/message:send, …/v1/tasks/{id}). */
const V03 = /\/v1\/(message:|tasks(\/|$)|card$)/i;

/** Whether a path is one of the binding's (any method): the gateway's own errors there are REST's. */
export function isRestPath(path: string): boolean {
  const p = normalize(path.split('?', 1)[0] ?? path);
  return OPERATIONS.some((op) => op.pattern.test(p));
}

/**
 * The path as the agent's router matches it: a trailing slash dropped, an encoded `:` decoded (the
 * SDK's Express router takes both, and any letter case, which the patterns ignore).
 */
function normalize(path: string): string {
  return path.replace(/%3a/gi, ':').replace(/\/+$/, '');
}

/** The REST operation a request is, with its task; undefined when it is none. */
export function restOperation(method: string, path: string): A2aRequestInfo | undefined {
  const verb = method === 'HEAD' ? 'GET' : method;
  path = normalize(path);
  for (const op of OPERATIONS) {
    if (!op.methods.includes(verb)) continue;
    const m = op.pattern.exec(path);
    if (!m) continue;
    const name = V03.test(path) && op.v03 !== undefined ? op.v03 : op.v1;
    const info: A2aRequestInfo = { method: name, binding: 'rest' };
    const task = m[1] === undefined ? undefined : decode(m[1]);
    if (task) info.taskId = task;
    return info;
  }
  return undefined;
}

function decode(s: string): string | undefined {
  try {
    return str(decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

/** A message:send or message:stream body: its message's task and context (both versions name it `message`). */
export function readRestBody(body: Buffer, info: A2aRequestInfo): void {
  // a body that is not JSON is the agent's to answer
  const msg = parseJson(body.toString('utf8'));
  if (!isObject(msg) || !isObject(msg.message)) return;
  info.taskId ??= str(msg.message.taskId);
  info.contextId ??= str(msg.message.contextId);
}

/**
 * One answer of a REST call (a whole JSON body, or the data of one server-sent event): the task it
 * is about and its state. Returns false when the text is not a JSON object.
 */
export function readRestAnswer(text: string, info: A2aRequestInfo, seen: AnswerState): boolean {
  const msg = parseJson(text);
  if (!isObject(msg)) return false;
  seen.result = true;
  taskOfPayload(msg, info);
  return true;
}
