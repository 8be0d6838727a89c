// Checks of prompt guards beyond their schema, for the standalone loader and the controller alike:
// every pattern compiles (as the proxy compiles it), and what a guard cannot do where it is set.
import {
  type AiPolicy,
  type GuardWebhook,
  type PromptGuard,
  SERVED_AI_ROUTE_TYPES,
} from '../config/schema.ts';
import type { FieldPath } from '../config/source.ts';
import { checkCel, checkCelMap } from './cel.ts';
import type { Problem } from './problem.ts';
import { checkRegex, GUARD_REGEX_FLAGS, userRegExp } from './regex.ts';

export { GUARD_REGEX_FLAGS };

export function checkGuardPattern(pattern: string, path: FieldPath): Problem[] {
  let re: RegExp;
  try {
    re = userRegExp(pattern, GUARD_REGEX_FLAGS);
  } catch (err) {
    return [{ path, message: `invalid regular expression: ${(err as Error).message}` }];
  }
  // A pattern matching the empty string would match everywhere (and mask nothing).
  if (re.test('')) return [{ path, message: 'the pattern matches the empty string' }];
  return [];
}

export function checkPromptGuard(g: PromptGuard, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  for (const phase of ['request', 'response'] as const) {
    (g[phase] ?? []).forEach((guard, i) => {
      const rules = guard.regex?.rules ?? [];
      rules.forEach((r, ri) => {
        if ('pattern' in r)
          out.push(...checkGuardPattern(r.pattern, [...path, phase, i, 'regex', 'rules', ri, 'pattern']));
      });
      if (guard.webhook) out.push(...checkWebhook(guard.webhook, [...path, phase, i, 'webhook']));
    });
  }
  return out;
}

/** The pseudo-headers a webhook's `headers` may set besides header names. */
export const WEBHOOK_PSEUDO_HEADERS = [':path', ':method', ':authority'] as const;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function checkWebhook(w: GuardWebhook, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  for (const [name, expr] of Object.entries(w.headers ?? {})) {
    const at = [...path, 'headers', name];
    if (name.startsWith(':') && !(WEBHOOK_PSEUDO_HEADERS as readonly string[]).includes(name))
      out.push({
        path: at,
        message: `unknown pseudo-header ${name} (use ${WEBHOOK_PSEUDO_HEADERS.join(', ')})`,
      });
    else if (!name.startsWith(':') && !TOKEN.test(name))
      out.push({ path: at, message: `invalid header name ${JSON.stringify(name)}` });
    out.push(...checkCel(expr, at));
  }
  (w.forwardHeaderMatches ?? []).forEach((m, i) => {
    if ('regex' in m.value)
      out.push(...checkRegex(m.value.regex, [...path, 'forwardHeaderMatches', i, 'value', 'regex']));
  });
  const host = 'host' in w.target ? w.target.host : undefined;
  // an http:// or https:// scheme in front, as agentgateway takes it (a trailing / allowed)
  if (
    host !== undefined &&
    !/^(https?:\/\/)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?\/?$/i.test(host)
  )
    out.push({
      path: [...path, 'target', 'host'],
      message: `expected host, host:port or http(s)://host[:port], got ${JSON.stringify(host)}`,
    });
  return out;
}

export function checkAiPolicy(p: AiPolicy, path: FieldPath): Problem[] {
  return [
    ...(p.promptGuard ? checkPromptGuard(p.promptGuard, [...path, 'promptGuard']) : []),
    ...checkCelMap(p.transformations, [...path, 'transformations']),
    ...checkCelMap(p.finalTransformations, [...path, 'finalTransformations']),
    ...checkModelAliases(p.modelAliases, [...path, 'modelAliases']),
    ...Object.entries(p.routes ?? {}).flatMap(([suffix, type]) =>
      SERVED_AI_ROUTE_TYPES.includes(type)
        ? []
        : [
            {
              path: [...path, 'routes', suffix],
              message: `the route type ${type} is not supported by this build of gw yet (served: ${SERVED_AI_ROUTE_TYPES.join(', ')})`,
            },
          ],
    ),
  ];
}

/** An alias names the model to send, which a provider would not know by a pattern. */
function checkModelAliases(a: Record<string, string> | undefined, path: FieldPath): Problem[] {
  const out: Problem[] = [];
  for (const [from, to] of Object.entries(a ?? {}))
    if (to.includes('*'))
      out.push({
        path: [...path, from],
        message: `the model an alias sends is a name, not a pattern: ${JSON.stringify(to)}`,
      });
  return out;
}
