// promptCaching (agentgateway's): cache breakpoints the gateway adds to a request already in the
// provider's format, so providers that cache only where told to (Anthropic's `cache_control`,
// Bedrock Converse's `cachePoint` blocks) reuse the stable prefix of a conversation. Boundaries, in
// order while the provider's budget of four lasts (markers the client sent count first): the end of
// the system prompt (when it is at least `minTokens`, estimated as words × 1.3), the end of the
// conversation's history (the second-to-last message, `offset` further back), the end of the tools.
// A request with no such boundary is sent as it is; a client's own marker is never replaced.
import type { LlmFormat, LlmPromptCachingIR } from '../../config/ir.ts';
import type { JsonObject } from './types.ts';

/** Both providers refuse a request with more than four breakpoints. */
const MAX_BREAKPOINTS = 4;

/** Adds the breakpoints `c` asks for to `body`, when `format` takes them. */
export function applyPromptCaching(
  format: LlmFormat,
  model: string,
  body: JsonObject,
  c: LlmPromptCachingIR,
): void {
  if (format === 'anthropic-messages') anthropic(body, c);
  else if (format === 'bedrock-converse' && bedrockCaches(model)) bedrock(body, c);
}

// ---------- Anthropic messages: `cache_control: {type: ephemeral}` on the last block of a boundary ----------

/** Block types that take cache_control; an unknown type is left alone (a marker it refuses fails the request). */
const CACHEABLE = new Set([
  'text',
  'image',
  'document',
  'search_result',
  'tool_use',
  'tool_result',
  'server_tool_use',
  'web_search_tool_result',
]);

function anthropic(body: JsonObject, c: LlmPromptCachingIR): void {
  let used = countMarkers(body);
  if (c.system && used < MAX_BREAKPOINTS && body.system !== undefined) {
    if (c.minTokens === null || estimateTokens(body.system) >= c.minTokens) {
      const blocks = asBlocks(body, 'system');
      if (blocks && markLast(blocks, (b) => CACHEABLE.has(String(b.type)))) used++;
    }
  }
  const messages = Array.isArray(body.messages) ? (body.messages as JsonObject[]) : [];
  if (c.messages && used < MAX_BREAKPOINTS && messages.length >= 2) {
    const target = messages[Math.max(0, messages.length - 2 - c.offset)];
    const blocks = target && asBlocks(target, 'content');
    if (blocks && markLast(blocks, (b) => CACHEABLE.has(String(b.type)))) used++;
  }
  // every tool takes cache_control, and custom ones have no type
  if (c.tools && used < MAX_BREAKPOINTS && Array.isArray(body.tools))
    markLast(body.tools as JsonObject[], () => true);
}

function countMarkers(body: JsonObject): number {
  const inBlocks = (v: unknown) =>
    Array.isArray(v) ? v.filter((b) => isObject(b) && b.cache_control != null).length : 0;
  let n = inBlocks(body.system) + inBlocks(body.tools);
  if (Array.isArray(body.messages)) for (const m of body.messages) if (isObject(m)) n += inBlocks(m.content);
  return n;
}

/** `holder[key]` as content blocks, a string shorthand turned into one text block. */
function asBlocks(holder: JsonObject, key: string): JsonObject[] | undefined {
  const v = holder[key];
  if (typeof v === 'string') holder[key] = [{ type: 'text', text: v }];
  const blocks = holder[key];
  return Array.isArray(blocks) ? (blocks as JsonObject[]) : undefined;
}

/** Marks the last block `ok` accepts, unless it carries a marker already. */
function markLast(blocks: JsonObject[], ok: (b: JsonObject) => boolean): boolean {
  for (let i = blocks.length - 1; i >= 0; i--) {
    const b = blocks[i];
    if (!isObject(b) || !ok(b)) continue;
    if (b.cache_control != null) return false;
    b.cache_control = { type: 'ephemeral' };
    return true;
  }
  return false;
}

// ---------- Bedrock Converse: a `{cachePoint: {type: default}}` block after each boundary ----------

/** The Bedrock models that cache: Claude (but its first generations) and Amazon Nova. */
function bedrockCaches(model: string): boolean {
  const m = model.toLowerCase();
  if (m.includes('anthropic.claude'))
    return !['claude-instant', 'claude-v1', 'claude-v2'].some((old) => m.includes(old));
  return m.includes('amazon.nova');
}

const CACHE_POINT = (): JsonObject => ({ cachePoint: { type: 'default' } });

function bedrock(body: JsonObject, c: LlmPromptCachingIR): void {
  const tools =
    isObject(body.toolConfig) && Array.isArray(body.toolConfig.tools) ? body.toolConfig.tools : [];
  const points = (v: unknown) =>
    Array.isArray(v) ? v.filter((b) => isObject(b) && 'cachePoint' in b).length : 0;
  let used = points(body.system) + points(tools);
  const messages = Array.isArray(body.messages) ? (body.messages as JsonObject[]) : [];
  for (const m of messages) used += points(m.content);
  const system = Array.isArray(body.system) ? (body.system as JsonObject[]) : undefined;
  if (c.system && used < MAX_BREAKPOINTS && system && system.length > 0 && points(system) === 0) {
    if (c.minTokens === null || estimateTokens(system) >= c.minTokens) {
      system.push(CACHE_POINT());
      used++;
    }
  }
  if (c.messages && used < MAX_BREAKPOINTS && messages.length >= 2) {
    const target = messages[Math.max(0, messages.length - 2 - c.offset)];
    if (target && Array.isArray(target.content)) {
      target.content.push(CACHE_POINT());
      used++;
    }
  }
  if (c.tools && used < MAX_BREAKPOINTS && tools.length > 0) tools.push(CACHE_POINT());
}

/** Words × 1.3, the estimate both providers' rules use for minTokens. */
function estimateTokens(system: unknown): number {
  const words = (s: string) => s.split(/\s+/).filter((w) => w !== '').length;
  let n = 0;
  if (typeof system === 'string') n = words(system);
  else if (Array.isArray(system))
    for (const b of system) if (isObject(b) && typeof b.text === 'string') n += words(b.text);
  return Math.floor((n * 13) / 10);
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
