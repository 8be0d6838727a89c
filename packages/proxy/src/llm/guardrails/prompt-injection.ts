// The promptInjection guard: injection phrasing in a request's texts, found here without calling a
// service. Each family below is a kind of attack, matched by a few case-insensitive patterns; a text's
// score is the number of families it matches over 3 (at most 1), and a text is flagged when at least
// one family matched and the score reaches the threshold (default 0.33: one family flags). The
// patterns aim at phrasing aimed at the model ("ignore your previous instructions"), not at words that
// ordinary prompts use ("act as a translator", "debug mode"), since an operator's own system prompt is
// in the default scope. Zero-width and soft-hyphen characters are removed before matching, so they
// cannot split a phrase.
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

/** Characters that render as nothing and would split a phrase the patterns look for. */
const INVISIBLE = /[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff]/g;

/** The families `text` matches, in the order above. */
export function injectionFamilies(text: string): string[] {
  const t = text.replace(INVISIBLE, '');
  const found: string[] = [];
  for (const f of FAMILIES) if (f.patterns.some((re) => re.test(t))) found.push(f.name);
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
      check({ texts }): GuardVerdict {
        for (const text of texts) {
          const families = injectionFamilies(text);
          if (flags(families.length)) return { action, rule: families.join('+') };
        }
        return { action: 'pass' };
      },
    };
  },
};
