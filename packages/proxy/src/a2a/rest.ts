// A2A's HTTP+JSON (REST) binding as the gateway reads it: the operation and its task from the
// request's method and path (`POST …/message:send`, `GET …/tasks/{id}`, …), a message's task and
// context from the body, and the answer — plain JSON or server-sent events of the same objects, no
// JSON-RPC envelope — for the task and its state. The paths are matched at the end of the request's
// path, so the agent's endpoint may sit under any prefix. Operations are named as the JSON-RPC
// methods of the same protocol version: A2A 0.3's REST paths begin with /v1 (`/v1/message:send` is
// `message/send`), 1.0's do not (`/message:send` is `SendMessage`).
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
  { methods: ['POST'], pattern: /\/message:send$/, v1: 'SendMessage', v03: 'message/send' },
  { methods: ['POST'], pattern: /\/message:stream$/, v1: 'SendStreamingMessage', v03: 'message/stream' },
  { methods: ['POST'], pattern: new RegExp(`/tasks/${TASK}:cancel$`), v1: 'CancelTask', v03: 'tasks/cancel' },
  {
    methods: ['GET', 'POST'],
    pattern: new RegExp(`/tasks/${TASK}:subscribe$`),
    v1: 'SubscribeToTask',
    v03: 'tasks/resubscribe',
  },
  {
    methods: ['POST'],
    pattern: new RegExp(`/tasks/${TASK}/pushNotificationConfigs$`),
    v1: 'CreateTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/set',
  },
  {
    methods: ['GET'],
    pattern: new RegExp(`/tasks/${TASK}/pushNotificationConfigs$`),
    v1: 'ListTaskPushNotificationConfigs',
    v03: 'tasks/pushNotificationConfig/list',
  },
  {
    methods: ['GET'],
    pattern: new RegExp(`/tasks/${TASK}/pushNotificationConfigs/[^/]+$`),
    v1: 'GetTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/get',
  },
  {
    methods: ['DELETE'],
    pattern: new RegExp(`/tasks/${TASK}/pushNotificationConfigs/[^/]+$`),
    v1: 'DeleteTaskPushNotificationConfig',
    v03: 'tasks/pushNotificationConfig/delete',
  },
  { methods: ['GET'], pattern: new RegExp(`/tasks/${TASK}$`), v1: 'GetTask', v03: 'tasks/get' },
  { methods: ['GET'], pattern: /\/tasks$/, v1: 'ListTasks' },
  { methods: ['GET'], pattern: /\/extendedAgentCard$/, v1: 'GetExtendedAgentCard' },
  // 0.3's only: the authenticated extended card
  { methods: ['GET'], pattern: /\/v1\/card$/, v1: 'agent/getAuthenticatedExtendedCard' },
];

/** A0.3's REST paths are under /v1 (…/v1/message:send, …/v1/tasks/{id}). */
const V03 = /\/v1\/(message:|tasks(\/|$)|card$)/;

/** Whether a path is one of the binding's (any method): the gateway's own errors there are REST's. */
export function isRestPath(path: string): boolean {
  const p = path.split('?', 1)[0] ?? path;
  return OPERATIONS.some((op) => op.pattern.test(p));
}

/** The REST operation a request is, with its task; undefined when it is none. */
export function restOperation(method: string, path: string): A2aRequestInfo | undefined {
  const verb = method === 'HEAD' ? 'GET' : method;
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
