// A2A's JSON-RPC as the gateway reads it: the client's request (method, id, the task it names) and
// each answer the agent sends (a result or an error, the task it is about and that task's state), in
// both the v0.3 shapes (`kind: task`, `status-update`) and the v1.0 ones (`{task: …}`, `statusUpdate`).
import { GwError } from '../errors.ts';
import type { A2aRequestInfo } from './info.ts';
import { taskStateName } from './info.ts';

type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The JSON in `text`, or undefined when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The longest method name kept: a client chooses it, and it goes to logs and traces. */
const MAX_METHOD = 128;

/**
 * Reads a JSON-RPC request body. Throws GW_ERR_JSONRPC_PARSE for a body that is not JSON and
 * GW_ERR_JSONRPC_INVALID for JSON that is not one JSON-RPC 2.0 request (A2A sends no batches); the
 * info of a refused request says what could be read of it, with outcome `invalid`. Returns false for
 * an object that does not try to be JSON-RPC (no `jsonrpc`, no `method`): a call of A2A's HTTP+JSON
 * binding, which passes unread.
 */
export function readRequest(body: Buffer, info: A2aRequestInfo): boolean {
  let msg: unknown;
  try {
    msg = JSON.parse(body.toString('utf8'));
  } catch {
    info.outcome = 'invalid';
    throw new GwError('GW_ERR_JSONRPC_PARSE');
  }
  const refuse = (why: string): never => {
    info.outcome = 'invalid';
    throw new GwError('GW_ERR_JSONRPC_INVALID', `the request is not a JSON-RPC 2.0 request: ${why}`);
  };
  if (!isObject(msg)) refuse(Array.isArray(msg) ? 'a batch (A2A sends one call at a time)' : 'not an object');
  const m = msg as Json;
  if (!('jsonrpc' in m) && !('method' in m)) return false;
  if (typeof m.method === 'string' && m.method !== '') info.method = m.method.slice(0, MAX_METHOD);
  const id = m.id;
  if (typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) || id === null) info.id = id;
  if (m.jsonrpc !== '2.0') refuse('jsonrpc must be "2.0"');
  if (typeof m.method !== 'string' || m.method === '') refuse('method must be a non-empty string');
  if ('id' in m && info.id === undefined) refuse('id must be a string, a number or null');
  if ('params' in m && !isObject(m.params) && !Array.isArray(m.params))
    refuse('params must be an object or an array');
  if (isObject(m.params)) taskOfParams(m.params, info);
  return true;
}

/** The task a call names: a message's task and context, or the task of a tasks/* call. */
function taskOfParams(p: Json, info: A2aRequestInfo): void {
  if (isObject(p.message)) {
    info.taskId = str(p.message.taskId);
    info.contextId = str(p.message.contextId);
    return;
  }
  // v1.0's push-notification calls name the task `taskId` and the config `id`.
  info.taskId = str(p.taskId) ?? str(p.id);
}

/**
 * Reads one JSON-RPC answer (a whole body, or the data of one server-sent event) into `info`: an
 * error sets the error code, a result the task it is about and its state. Returns false when the
 * text is not a JSON-RPC answer.
 */
export function readAnswer(text: string, info: A2aRequestInfo, seen: AnswerState): boolean {
  const msg = parseJson(text);
  if (!isObject(msg) || msg.jsonrpc !== '2.0') return false;
  if (isObject(msg.error)) {
    seen.error = true;
    if (typeof msg.error.code === 'number') info.errorCode = msg.error.code;
    return true;
  }
  if (!('result' in msg)) return false;
  seen.result = true;
  if (isObject(msg.result)) taskOfPayload(msg.result, info);
  return true;
}

/** What the answers of one request amounted to so far. */
export interface AnswerState {
  result: boolean;
  error: boolean;
}

/** The task a result (JSON-RPC) or an answer (REST) is about and its state, in either version's shape. */
export function taskOfPayload(r: Json, info: A2aRequestInfo): void {
  // v1.0 wraps the payload in a field named after its kind; v0.3 marks it with `kind`.
  const task = isObject(r.task)
    ? r.task
    : r.kind === 'task' || (r.kind === undefined && isTask(r))
      ? r
      : undefined;
  const update = isObject(r.statusUpdate)
    ? r.statusUpdate
    : isObject(r.artifactUpdate)
      ? r.artifactUpdate
      : r.kind === 'status-update' || r.kind === 'artifact-update'
        ? r
        : undefined;
  const message = isObject(r.message) ? r.message : r.kind === 'message' ? r : undefined;
  if (task) {
    info.taskId ??= str(task.id);
    info.contextId ??= str(task.contextId);
    if (isObject(task.status)) info.taskState = taskStateName(task.status.state) ?? info.taskState;
  } else if (update) {
    info.taskId ??= str(update.taskId);
    info.contextId ??= str(update.contextId);
    if (isObject(update.status)) info.taskState = taskStateName(update.status.state) ?? info.taskState;
  } else if (message) {
    info.taskId ??= str(message.taskId);
    info.contextId ??= str(message.contextId);
  }
}

/** A v1.0 Task answered bare (GetTask, CancelTask): an id and a status. */
function isTask(r: Json): boolean {
  return typeof r.id === 'string' && isObject(r.status);
}
