// The guard kinds this build runs, by kind. A kind is a key of LlmGuardSettings (config/ir.ts) and an
// entry here; a key without an entry does not compile.
import type { LlmGuardKind } from '../../config/ir.ts';
import { azureContentSafetyGuard } from './azure-content-safety.ts';
import { bedrockGuardrailsGuard } from './bedrock-guardrails.ts';
import { googleModelArmorGuard } from './google-model-armor.ts';
import { openAIModerationGuard } from './openai-moderation.ts';
import { promptInjectionGuard } from './prompt-injection.ts';
import { regexGuard } from './regex.ts';
import type { GuardKindModule } from './types.ts';
import { webhookGuard } from './webhook.ts';

export const GUARD_KINDS: { [K in LlmGuardKind]: GuardKindModule<K> } = {
  regex: regexGuard,
  webhook: webhookGuard,
  openAIModeration: openAIModerationGuard,
  bedrockGuardrails: bedrockGuardrailsGuard,
  googleModelArmor: googleModelArmorGuard,
  azureContentSafety: azureContentSafetyGuard,
  promptInjection: promptInjectionGuard,
};
