// The Amazon Bedrock Guardrails guard: the texts go to ApplyGuardrail (POST
// /guardrail/<id>/version/<v>/apply on bedrock-runtime.<region>.amazonaws.com, source INPUT or
// OUTPUT, one content block per text so the outputs line up with them), signed with SigV4 for service
// `bedrock` by the Bedrock provider's signer, with the configured or ambient credentials or those of
// an assumed role. GUARDRAIL_INTERVENED with any policy BLOCKED rejects;
// with only ANONYMIZED entities the outputs replace the texts (a mask). Audit records, never applies.
import type { LlmGuardSettings } from '../../config/ir.ts';
import { assumeRole } from '../../policies/backend-auth/aws-assume-role.ts';
import { type AwsCredentials, sigV4 } from '../providers/bedrock/sigv4.ts';
import { failed, field, guardService, ServiceFailure, type ServiceRequest } from './service-call.ts';
import type { CompiledGuard, GuardInput, GuardKindModule, GuardVerdict } from './types.ts';

type Json = Record<string, unknown>;

const isString = (x: unknown): x is string => typeof x === 'string';
const isList = (x: unknown): x is Json[] => Array.isArray(x);
const list = (v: unknown, ...path: string[]): Json[] => {
  let x = v;
  for (const p of path) x = x && typeof x === 'object' ? (x as Json)[p] : undefined;
  return Array.isArray(x) ? (x as Json[]) : [];
};

/**
 * What the assessments say, by policy entry: a name for the finding (the policy and the entry's
 * type or name, never the matched text), and whether it blocked or anonymized.
 */
function findings(assessments: Json[]): { blocked: string[]; anonymized: string[] } {
  const out = { blocked: [] as string[], anonymized: [] as string[] };
  const add = (e: Json, what: string) => {
    if (e.detected === false) return;
    if (e.action === 'BLOCKED') out.blocked.push(what);
    else if (e.action === 'ANONYMIZED') out.anonymized.push(what);
  };
  for (const a of assessments) {
    for (const t of list(a, 'topicPolicy', 'topics')) add(t, `topic ${String(t.name)}`);
    for (const f of list(a, 'contentPolicy', 'filters')) add(f, `content ${String(f.type)}`);
    for (const w of list(a, 'wordPolicy', 'customWords')) add(w, 'word');
    for (const w of list(a, 'wordPolicy', 'managedWordLists')) add(w, `word ${String(w.type)}`);
    for (const p of list(a, 'sensitiveInformationPolicy', 'piiEntities')) add(p, `pii ${String(p.type)}`);
    for (const r of list(a, 'sensitiveInformationPolicy', 'regexes')) add(r, `regex ${String(r.name)}`);
    for (const g of list(a, 'contextualGroundingPolicy', 'filters')) add(g, `grounding ${String(g.type)}`);
  }
  return out;
}

const named = (kind: string, what: string[]) =>
  what.length === 0 ? kind : `${kind}: ${[...new Set(what)].join(', ')}`;

/** Signs a call for `input`'s request: the session name and tags of an assumed role may read it. */
type Signer = (input: GuardInput) => (req: ServiceRequest) => Promise<void>;

function signer(auth: LlmGuardSettings['bedrockGuardrails']['auth'], region: string): Signer {
  if (auth.kind === 'key') {
    const bearer = `Bearer ${auth.key.reveal()}`;
    const sign = async (req: ServiceRequest) => {
      req.headers.authorization = bearer;
    };
    return () => sign;
  }
  if (auth.kind === 'assumeRole') {
    const role = assumeRole(auth.role, region);
    return (input) => async (req) => {
      const creds = await role({ celContext: () => input.request.cel ?? {} });
      await sigV4({ method: 'POST', ...req }, region, 'bedrock', creds);
    };
  }
  const creds: AwsCredentials | undefined =
    auth.kind === 'static'
      ? {
          accessKeyId: auth.accessKeyId,
          secretAccessKey: auth.secretAccessKey.reveal(),
          ...(auth.sessionToken ? { sessionToken: auth.sessionToken.reveal() } : {}),
        }
      : undefined;
  const sign = async (req: ServiceRequest) => {
    // The signer writes its headers into `req.headers`: the copy shares that object.
    await sigV4({ method: 'POST', ...req }, region, 'bedrock', creds);
  };
  return () => sign;
}

export const bedrockGuardrailsGuard: GuardKindModule<'bedrockGuardrails'> = {
  compile(ir, env): CompiledGuard {
    const s = ir.settings;
    const service = guardService(s.service, env);
    const path = `/guardrail/${encodeURIComponent(s.identifier)}/version/${encodeURIComponent(s.version)}/apply`;
    const sign = signer(s.auth, s.region);
    const role = s.auth.kind === 'assumeRole' ? s.auth.role : undefined;
    return {
      ir,
      // an assumed role's session name or tags from the request
      ...(role && (typeof role.sessionName === 'object' || role.tags.some((t) => t.expression))
        ? { readsCel: true }
        : {}),
      ...(s.audit ? { audits: true } : {}),
      async check(input): Promise<GuardVerdict> {
        let action: string;
        let answer: unknown;
        try {
          answer = await service.post(
            {
              path,
              headers: {},
              ...(input.signal ? { signal: input.signal } : {}),
              body: Buffer.from(
                JSON.stringify({
                  source: input.phase === 'request' ? 'INPUT' : 'OUTPUT',
                  content: input.texts.map((text) => ({ text: { text } })),
                }),
              ),
            },
            sign(input),
          );
          action = field(answer, 'action', isString);
          if (action !== 'NONE' && action !== 'GUARDRAIL_INTERVENED')
            throw new ServiceFailure(`invalid answer: action ${action}`);
        } catch (err) {
          // An audit never stops traffic: its failures are recorded, never enforced.
          return failed(err, !s.audit);
        }
        if (action === 'NONE') return { action: 'pass' };
        const f = findings(list(answer, 'assessments'));
        let verdict: GuardVerdict;
        if (f.blocked.length > 0 || f.anonymized.length === 0) {
          verdict = { action: 'reject', rule: named('blocked', f.blocked) };
        } else {
          const rule = named('anonymized', f.anonymized);
          let outputs: Json[];
          try {
            outputs = field(answer, 'outputs', isList);
            if (outputs.length !== input.texts.length || !outputs.every((o) => typeof o.text === 'string'))
              throw new ServiceFailure(
                `invalid answer: ${outputs.length} outputs for ${input.texts.length} texts`,
              );
          } catch (err) {
            return failed(err, !s.audit);
          }
          const texts = new Map<number, string>();
          outputs.forEach((o, i) => {
            if (o.text !== input.texts[i]) texts.set(i, o.text as string);
          });
          verdict = texts.size === 0 ? { action: 'pass' } : { action: 'mask', rule, texts };
        }
        if (s.audit && verdict.action !== 'pass') return { action: 'audit', rule: verdict.rule };
        return verdict;
      },
    };
  },
};
