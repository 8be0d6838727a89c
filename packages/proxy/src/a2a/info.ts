// What the gateway knows of one A2A request (`ctx.ext.a2a`): the JSON-RPC method (or the REST
// binding's operation), the task it is about and how it went. CEL sees it as `a2a.*`; the access log, the trace and metrics report it.

/**
 * ok: the agent answered a result (a stream: events and no error); error: the agent answered a
 * JSON-RPC error (REST: an HTTP error status); invalid: the gateway refused a malformed request; failed: no JSON-RPC answer (an
 * HTTP error, a body that is not JSON-RPC, no connection); aborted: a stream cut before its end.
 * rejected: a policy of the route answered before the agent was called. A card fetch is `rewritten`
 * or, when the card could not be read as JSON, `untouched`.
 */
export type A2aOutcome =
  | 'ok'
  | 'error'
  | 'invalid'
  | 'failed'
  | 'aborted'
  | 'rejected'
  | 'rewritten'
  | 'untouched';

export interface A2aRequestInfo {
  /**
   * The JSON-RPC method as sent (`message/send`, `SendMessage`, …), a REST call's operation under
   * the same name (a2a/rest.ts); `agent-card` for a card fetch.
   */
  method: string;
  /** `rest`: a call of the HTTP+JSON binding (unset: JSON-RPC, or a card fetch). */
  binding?: 'rest';
  /** The JSON-RPC request id. */
  id?: string | number | null;
  /** The task the call is about: from the request (tasks/*, a message's taskId), else from the answer. */
  taskId?: string | undefined;
  contextId?: string | undefined;
  /** The last task state the answer carried, in the v0.3 spelling (`completed`, `input-required`). */
  taskState?: string | undefined;
  /** Whether the answer is a stream of server-sent events. */
  streaming?: boolean;
  /** Set once the answer is complete (a stream: at its end). */
  outcome?: A2aOutcome;
  /** The JSON-RPC error code of an `error` outcome. */
  errorCode?: number;
}

declare module '../pipeline/context.ts' {
  interface RequestExtensions {
    /** Set by the `a2a` backend kind once it has read the request (see a2a/info.ts). */
    a2a?: A2aRequestInfo;
  }
}

/** The card fetch's pseudo-method. */
export const AGENT_CARD = 'agent-card';

// A2A v0.3 JSON-RPC methods and their v1.0 names; either may reach an agent.
const METHODS = new Set([
  AGENT_CARD,
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
]);

/** The method as a metric label: a client chooses the string, so unknown ones share `other`. */
export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : 'other';
}

/** `TASK_STATE_INPUT_REQUIRED` (v1.0) and `input-required` (v0.3) both read `input-required`. */
export function taskStateName(state: unknown): string | undefined {
  if (typeof state !== 'string' || state === '') return undefined;
  const s = state.startsWith('TASK_STATE_') ? state.slice(11) : state;
  return s.toLowerCase().replaceAll('_', '-');
}

/** The outcome of a finished request: its own, else why it has none (never called, or cut short). */
export function finalOutcome(info: A2aRequestInfo, error: { code: string } | undefined): A2aOutcome {
  if (info.outcome) return info.outcome;
  return error?.code === 'GW_ERR_CLIENT_CLOSED' ? 'aborted' : 'rejected';
}
