// The format pairs this build converts, keyed `<client>__<provider>`. A pair that is not here is not
// supported: a request needing it gets a 4xx naming both formats (see llm/serve.ts).
import { openaiChatToOpenaiChat } from './openai-chat__openai-chat.ts';
import type { FormatPair, PairKey } from './types.ts';

export const FORMAT_PAIRS: Partial<Record<PairKey, FormatPair>> = {
  'openai-chat__openai-chat': openaiChatToOpenaiChat,
};
