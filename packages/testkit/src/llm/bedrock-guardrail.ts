// What the fake Bedrock's one guardrail finds, answered in ApplyGuardrail's shape (the parts of
// ./fixtures/bedrock/apply-guardrail.json): the topic "Investment Advice" (by default a text about
// investing) and the VIOLENCE content filter ("kill", "hate") block; e-mail addresses (or the test's
// pattern) are anonymized to {EMAIL}, one output per content block. A block gets one blocked message.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

type Json = Record<string, unknown>;

const EXAMPLE = JSON.parse(
  readFileSync(
    join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'bedrock', 'apply-guardrail.json'),
    'utf8',
  ),
) as {
  usage: Json;
  outputs: Json[];
  assessments: [
    { topicPolicy: { topics: Json[] }; contentPolicy: { filters: Json[] }; invocationMetrics: Json },
  ];
  guardrailCoverage: Json;
};
const [example] = EXAMPLE.assessments;
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;

/** What the guardrail finds; by default investing, and e-mail addresses (anonymized as {EMAIL}). */
export interface FakeGuardrailRules {
  /** Texts on the denied topic "Investment Advice". */
  deny?: RegExp;
  /** A PII type anonymized as {<type>} (the pattern needs the g flag). */
  anonymize?: { pattern: RegExp; type: string };
}

/** The answer to an ApplyGuardrail body, or a ValidationException's message. */
export function applyGuardrail(body: Json | undefined, rules: FakeGuardrailRules = {}): Json | string {
  const deny = rules.deny ?? /\binvest/i;
  const pii = rules.anonymize ?? { pattern: EMAIL, type: 'EMAIL' };
  if (body?.source !== 'INPUT' && body?.source !== 'OUTPUT') return '1 validation error detected: source';
  const content = body.content;
  if (!Array.isArray(content) || content.length === 0) return '1 validation error detected: content';
  const texts: string[] = [];
  for (const b of content) {
    const t = b?.text?.text;
    if (typeof t !== 'string') return 'content blocks must be text';
    texts.push(t);
  }
  const topics = texts.some((t) => deny.test(t)) ? example.topicPolicy.topics : [];
  const filters = texts.some((t) => /\b(kill|hate)\b/i.test(t)) ? example.contentPolicy.filters : [];
  const entities = texts.flatMap((t) =>
    [...t.matchAll(pii.pattern)].map((m) => ({
      match: m[0],
      type: pii.type,
      action: 'ANONYMIZED',
      detected: true,
    })),
  );
  const assessment: Json = { invocationMetrics: example.invocationMetrics };
  if (topics.length > 0) assessment.topicPolicy = { topics };
  if (filters.length > 0) assessment.contentPolicy = { filters };
  if (entities.length > 0) assessment.sensitiveInformationPolicy = { piiEntities: entities, regexes: [] };
  const blocked = topics.length + filters.length > 0;
  const intervened = blocked || entities.length > 0;
  return {
    usage: EXAMPLE.usage,
    action: intervened ? 'GUARDRAIL_INTERVENED' : 'NONE',
    ...(intervened ? { actionReason: blocked ? 'Guardrail blocked.' : 'Guardrail masked.' } : {}),
    outputs: !intervened
      ? []
      : blocked
        ? EXAMPLE.outputs
        : texts.map((t) => ({ text: t.replace(pii.pattern, `{${pii.type}}`) })),
    assessments: [assessment],
    guardrailCoverage: EXAMPLE.guardrailCoverage,
  };
}
