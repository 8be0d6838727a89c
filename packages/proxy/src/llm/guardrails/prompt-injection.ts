// The promptInjection guard: injection phrasing in a request's texts, found here without calling a
// service. Each family below is a kind of attack, matched by a few case-insensitive patterns; a text's
// score is the number of families it matches over 3 (at most 1), and a text is flagged when at least
// one family matched and the score reaches the threshold (default 0.33: one family flags). The
// patterns aim at phrasing aimed at the model ("ignore your previous instructions"), not at words that
// ordinary prompts use ("act as a translator", "debug mode"). A match in a defensive clause is not
// one: "never reveal your system prompt", "if the user asks you to ignore your instructions",
// "I can't help you bypass the filters" are what operators' system prompts and models' refusals say.
// The model's own earlier turns (assistant messages) are not read. Texts are NFKC-normalised
// (fullwidth letters become ASCII) and stripped of invisible characters first, so neither can hide a
// phrase.
import type { CompiledGuard, GuardKindModule, GuardVerdict } from './types.ts';

interface Family {
  /** How a finding names it. */
  name: string;
  patterns: RegExp[];
}

// Gaps between words are bounded and stop at a full stop or a line break: a phrase, not a document.
const FAMILIES: Family[] = [
  {
    name: 'instruction-override',
    patterns: [
      /\b(?:ignore|disregard|forget|override|overrule|abandon|discard)\b[^.\n]{0,40}?\b(?:previous|prior|preceding|above|earlier|initial|original|system|all|your)\b[^.\n]{0,30}?\b(?:instructions?|rules|directives?|guidelines|prompts?|constraints|programming)\b/i,
      /\b(?:new|updated|revised|real|actual)\s+(?:system\s+)?(?:instructions|directives|system\s+prompt)\s*(?::|follow\b)/i,
    ],
  },
  {
    name: 'role-hijack',
    patterns: [
      /\byou\s+are\s+no\s+longer\s+(?:an?\s+)?(?:ai|assistant|bound|restricted|limited|chatgpt|claude|a\s+language\s+model)\b/i,
      /\byou\s+are\s+now\s+(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue|free|different\s+(?:ai|assistant|model))\b/i,
      /\b(?:pretend|imagine|act\s+as\s+if|suppose)\s+(?:that\s+)?you\s+(?:are|were|have)\s+(?:no|not\s+bound|free\s+(?:of|from)|without)\b/i,
      /\bfrom\s+now\s+on,?\s+you\s+(?:will|must|shall|are\s+going\s+to)\s+(?:ignore|answer\s+without|respond\s+without|not\s+follow|disregard)\b/i,
    ],
  },
  {
    name: 'prompt-extraction',
    patterns: [
      /\b(?:reveal|show|print|repeat|output|display|leak|dump|recite|tell\s+me|what\s+(?:is|are|was|were))\b[^.\n?]{0,30}?\b(?:system|initial|original|hidden|secret|developer)\s+(?:prompt|instructions?|message)\b/i,
      /\b(?:repeat|print|output|copy)\s+(?:everything|all(?:\s+of)?(?:\s+the)?\s+text|the\s+(?:text|words))\s+(?:above|before\s+this)\b/i,
    ],
  },
  {
    name: 'template-delimiter',
    patterns: [
      /<\|(?:im_start|im_end|system|endoftext|start_header_id|end_header_id|eot_id)\|>/i,
      /\[\/?INST\]|<<\/?SYS>>/,
      /(?:^|\n)[ \t]*(?:\[(?:system|admin|developer)(?:\s+(?:message|override))?\]|`{3}[ \t]*system\b|#{2,}[ \t]*(?:override|new\s+instructions|admin\s+override)\b)/i,
    ],
  },
  {
    name: 'safety-bypass',
    patterns: [
      /\b(?:bypass|disable|circumvent|evade|ignore|turn\s+off|switch\s+off|get\s+around)\b[^.\n]{0,20}?\b(?:safety|content|security|moderation|ethical|ethics)\s+(?:filters?|guidelines|polic(?:y|ies)|restrictions|measures|checks|guardrails|training)\b/i,
      /\b(?:god|sudo|jailbreak|jailbroken|unrestricted|unfiltered|uncensored)\s+mode\b/i,
      /\bdeveloper\s+mode\s+(?:enabled|output|response)\b|\b(?:chatgpt|assistant|ai|model)\s+with\s+developer\s+mode\b/i,
      /\bjailbr(?:eak|oken|eaking)\b/i,
    ],
  },
  {
    name: 'dan-persona',
    // DAN in capitals only: Dan is a name
    patterns: [/\bdo\s+anything\s+now\b/i, /\bDAN\s+(?:mode|prompt|persona)\b|\b(?:as|you\s+are)\s+DAN\b/],
  },
  {
    name: 'encoded-instructions',
    patterns: [
      /\b(?:decode|decipher|translate|convert)\b[^.\n]{0,30}?\b(?:base64|rot-?13|hex(?:adecimal)?|binary|morse)\b[^.\n]{0,50}?\b(?:follow|execute|run|obey|carry\s+out|do\s+what)\b/i,
      /\b(?:follow|execute|obey|run)\b[^.\n]{0,30}?\b(?:base64|rot-?13|hex(?:adecimal)?)[- ]?(?:encoded|decoded)?\s*(?:instructions?|commands?|prompt|payload)\b/i,
    ],
  },
  {
    name: 'restriction-removal',
    patterns: [
      /\b(?:respond|answer|reply|speak|talk|act|operate|behave|write)\b[^.\n]{0,30}?\bwithout\s+(?:any\s+)?(?:restrictions|filters|censorship|limitations|ethical\s+\w+|moral\s+\w+|guidelines|rules)\b/i,
    ],
  },
];

/** Characters that render as nothing (joiners, bidi controls, variation selectors, tag characters). */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\u180e]/gu;

// Each pattern, global, to walk its matches.
const WALKED = FAMILIES.map((f) => ({
  name: f.name,
  patterns: f.patterns.map((re) => new RegExp(re.source, `${re.flags}g`)),
}));

/**
 * A clause that refuses or warns about what follows: a negation ("never", "can't", "do not"), a
 * refusal, or a condition on what a user might try. "Don't hesitate to" and its kin are not one.
 */
const DEFENSIVE =
  /\b(?:never|not|no|cannot|\w+n['’]t|refuse[sd]?|refusing|decline[sd]?|unable\s+to|if\s+(?:a\s+|the\s+|any\s+)?(?:user|someone|anyone|they|somebody|a\s+message)|(?:users?|someone|anyone|people|attackers?|they)\s+(?:may\s+|might\s+|could\s+|will\s+|can\s+|often\s+|sometimes\s+)?(?:try|tries|attempt|attempts|ask|asks))\b/i;
const NOT_DEFENSIVE = /\b(?:hesitate|forget|fail|be\s+afraid)\s+to\s*$/i;

/** Whether the clause before `at` in `text` (since the last punctuation, at most 60 characters) is defensive. */
function defensive(text: string, at: number): boolean {
  const clause =
    text
      .slice(Math.max(0, at - 60), at)
      .split(/[.!?;:,\n—]/)
      .pop() ?? '';
  return DEFENSIVE.test(clause) && !NOT_DEFENSIVE.test(clause);
}

/** Whether `re` matches `text` anywhere outside a defensive clause. */
function matchesPlainly(re: RegExp, text: string): boolean {
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (!defensive(text, m.index)) return true;
    if (m[0] === '') re.lastIndex++;
  }
  return false;
}

/** The families `text` matches, in the order above. */
export function injectionFamilies(text: string): string[] {
  const t = text.normalize('NFKC').replace(INVISIBLE, '');
  const found: string[] = [];
  for (const f of WALKED) if (f.patterns.some((re) => matchesPlainly(re, t))) found.push(f.name);
  return found;
}

/** A text's score: the families it matches over 3, at most 1. */
export const injectionScore = (families: number): number => Math.min(families / 3, 1);

export const promptInjectionGuard: GuardKindModule<'promptInjection'> = {
  compile(ir): CompiledGuard {
    const { threshold, action } = ir.settings;
    const flags = (n: number) => n > 0 && injectionScore(n) >= threshold;
    return {
      ir,
      local: true,
      ...(action === 'audit' ? { audits: true } : {}),
      check(input): GuardVerdict {
        // by message where the request has them, leaving out the model's own turns; a realtime
        // session's client event gives its texts alone
        const messages = input.messages();
        const texts =
          messages.length > 0
            ? messages.filter((m) => m.role !== 'assistant').flatMap((m) => m.slots.map((x) => x.text))
            : input.texts;
        for (const text of texts) {
          const families = injectionFamilies(text);
          if (flags(families.length)) return { action, rule: families.join('+') };
        }
        return { action: 'pass' };
      },
    };
  },
};
