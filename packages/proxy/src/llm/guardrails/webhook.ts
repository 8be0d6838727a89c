// The webhook guard: the request's messages (or the answer's choices) are posted to a guardrail
// service (@gw/guardrail-sdk's contract: POST /request, POST /response) over one keep-alive pool per
// target, and its verdict is applied: allow, modify (the new text replaces the message's) or reject
// (its status and text, in the client's error format). A call that fails follows the failure mode.
// With messageFormat raw (request guards), the request's own messages go instead, and the webhook's
// answer replaces them whole: for services that rewrite a conversation (compression, redaction of
// tool results) rather than judge its text.

import { userRegExp } from '@gw/api/runtime';
import type { ParseResult, Verdict } from '@gw/guardrail-sdk';
import { REQUEST_PATH, RESPONSE_PATH } from '@gw/guardrail-sdk/wire';
import { type CelProgram, compileCel } from '../../cel/cel.ts';
import type { Headers } from '../../pipeline/context.ts';
import { messageContent } from '../formats/content.ts';
import { guardrailContract, preloadGuardrailContract } from './contract.ts';
import { failed, guardService, ServiceFailure } from './service-call.ts';
import type { CompiledGuard, GuardInput, GuardKindModule, GuardVerdict } from './types.ts';

/** A reason is the webhook's free text: cut for the log and trace. */
const MAX_REASON = 120;

interface HeaderProgram {
  name: string;
  program: CelProgram;
}

/** A CEL result as a header value; anything else (a map, a list, an error) leaves the header out. */
function headerValue(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** The rule a finding names: the verdict and the webhook's reason, if it gave one. */
function rule(kind: string, reason: string | undefined): string {
  if (!reason) return kind;
  const r = reason.replace(/\s+/g, ' ');
  return `${kind}: ${r.length > MAX_REASON ? `${r.slice(0, MAX_REASON)}…` : r}`;
}

export const webhookGuard: GuardKindModule<'webhook'> = {
  compile(ir, env): CompiledGuard {
    const s = ir.settings;
    preloadGuardrailContract();
    // One way to call a guard service (pool, timeout, size limit, failures): service-call.ts.
    const service = guardService(
      {
        origin: s.origin,
        timeoutMs: s.timeoutMs,
        ...(s.tls ? { tls: s.tls } : {}),
        ...(s.requestHeaders ? { requestHeaders: s.requestHeaders } : {}),
        ...(s.tcp ? { tcp: s.tcp } : {}),
        ...(s.http2 ? { http2: true } : {}),
        ...(s.endpoints ? { endpoints: s.endpoints } : {}),
      },
      env,
      'verdict',
    );
    const headers: HeaderProgram[] = Object.entries(s.headers).map(([name, expr]) => ({
      name: name.toLowerCase(),
      program: compileCel(expr),
    }));
    const forward = s.forward.map((f) => ({
      name: f.name,
      test:
        f.regex !== undefined
          ? (
              (re: RegExp) => (v: string) =>
                re.test(v)
            )(userRegExp(f.regex, '', true))
          : (v: string) => v === f.exact,
    }));
    const authority = new URL(s.origin).host;

    /** The call's method, path and headers: the defaults, forwarded client headers, then the CEL map. */
    function shape(input: GuardInput): { method: string; path: string; headers: Record<string, string> } {
      const out = {
        method: 'POST',
        path: s.path ?? (input.phase === 'request' ? REQUEST_PATH : RESPONSE_PATH),
        headers: { host: authority } as Record<string, string>,
      };
      const client: Headers = input.request.headers;
      for (const f of forward) {
        const v = client[f.name];
        const value = Array.isArray(v) ? v.join(', ') : v;
        if (value !== undefined && f.test(value)) out.headers[f.name] = value;
      }
      const cel = input.request.cel;
      for (const h of headers) {
        // No CEL context (never expected once a guard reads CEL) counts as unevaluable.
        const v = cel ? headerValue(h.program.eval(cel)) : undefined;
        if (v === undefined) continue;
        if (h.name === ':path') out.path = v.startsWith('/') ? v : `/${v}`;
        else if (h.name === ':method') out.method = v;
        else if (h.name === ':authority') out.headers.host = v;
        else out.headers[h.name] = v;
      }
      return out;
    }

    /** The webhook's answer to `body`; undefined when the body is under minSizeBytes (not called). */
    function call(input: GuardInput, body: unknown): Promise<unknown> | undefined {
      const bytes = Buffer.from(JSON.stringify(body));
      if (s.minSizeBytes !== undefined && bytes.length < s.minSizeBytes) return undefined;
      const { method, path, headers: h } = shape(input);
      return service.post({
        method,
        path,
        headers: h,
        body: bytes,
        ...(input.signal ? { signal: input.signal } : {}),
      });
    }

    /**
     * messageFormat raw: the request's own messages and model are posted, and the `messages` of the
     * answer replace them (absent or null: unchanged). A list that is not one, is empty where the
     * request's was not, or holds anything but objects is a failed call.
     */
    async function checkRaw(input: GuardInput): Promise<GuardVerdict> {
      const list = input.messageList?.();
      // a request without a list of messages (embeddings) has nothing to send
      if (!list) return { action: 'pass' };
      let next: unknown[] | undefined;
      try {
        const pending = call(input, { messages: list, model: input.llmRequest?.model });
        if (!pending) return { action: 'pass' };
        const answer = await pending;
        if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
          throw new ServiceFailure('invalid answer: not a JSON object');
        const m = (answer as { messages?: unknown }).messages;
        if (m !== undefined && m !== null) {
          if (!Array.isArray(m)) throw new ServiceFailure('invalid answer: messages is not a list');
          if (m.length === 0 && list.length > 0)
            throw new ServiceFailure('invalid answer: an empty list of messages');
          if (m.some((x) => typeof x !== 'object' || x === null || Array.isArray(x)))
            throw new ServiceFailure('invalid answer: a message that is not an object');
          next = m;
        }
      } catch (err) {
        return failed(err, !s.audit && s.failureMode === 'failClosed');
      }
      if (!next || JSON.stringify(next) === JSON.stringify(list)) return { action: 'pass' };
      const rule = `replaced ${list.length} messages with ${next.length}`;
      return s.audit ? { action: 'audit', rule } : { action: 'mask', rule, list: next };
    }

    return {
      ir,
      readsCel: headers.length > 0,
      ...(s.audit ? { audits: true } : {}),
      async check(input): Promise<GuardVerdict> {
        if (s.raw) return checkRaw(input);
        const msgs = input.messages();
        const plain = msgs.map((m) => ({ role: m.role, content: messageContent(m) }));
        let verdict: Verdict<{
          messages?: { content: string }[];
          choices?: { message: { content: string } }[];
        }>;
        try {
          const { maskCountProblem, promptRequestBody, promptVerdict, responseRequestBody, responseVerdict } =
            guardrailContract.value ?? (await guardrailContract.ready);
          const pending = call(
            input,
            input.phase === 'request'
              ? promptRequestBody(plain)
              : responseRequestBody(plain.map((message) => ({ message }))),
          );
          if (!pending) return { action: 'pass' };
          const answer = await pending;
          const parsed: ParseResult<typeof verdict> =
            input.phase === 'request' ? promptVerdict(answer) : responseVerdict(answer);
          if (!parsed.ok) throw new ServiceFailure(parsed.error.split('\n')[0] ?? 'invalid verdict');
          verdict = parsed.value;
          if (verdict.kind === 'modify') {
            const n = verdict.body.messages?.length ?? verdict.body.choices?.length ?? 0;
            const problem = maskCountProblem(
              msgs.length,
              n,
              input.phase === 'request' ? 'messages' : 'choices',
            );
            if (problem) throw new ServiceFailure(`invalid verdict: ${problem}`);
          }
        } catch (err) {
          // An audit never stops traffic: its failures are recorded, never enforced.
          return failed(err, !s.audit && s.failureMode === 'failClosed');
        }
        const named = rule(verdict.kind === 'modify' ? 'mask' : verdict.kind, verdict.reason);
        if (s.audit) return { action: 'audit', rule: named };
        if (verdict.kind === 'allow') return { action: 'pass' };
        if (verdict.kind === 'reject')
          return { action: 'reject', rule: named, status: verdict.statusCode, message: verdict.body };
        const texts =
          verdict.body.messages?.map((m) => m.content) ??
          verdict.body.choices?.map((c) => c.message.content) ??
          [];
        const changed = new Map<number, string>();
        texts.forEach((t, i) => {
          if (t !== plain[i]?.content) changed.set(i, t);
        });
        return changed.size === 0 ? { action: 'pass' } : { action: 'mask', rule: named, messages: changed };
      },
    };
  },
};
