// config.modelCatalog (agentgateway's model cost catalog): each LLM request priced from its usage —
// in the access log (llm.cost), CEL (llm.cost.*) and gw_llm_cost_total. The pricing rules on their
// own; the catalog read from a file, JSON text and inline, merged, and its errors; then the official
// `openai` client through gw to a fake OpenAI, streamed and not.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@gw/api';
import { FAKE_USAGE, type FakeOpenAI, startFakeOpenAI } from '@gw/testkit';
import { startProxy, type TestProxy } from '@gw/testkit/proxy';
import { tempDir } from '@gw/testkit/temp-dir';
import OpenAI from 'openai';
import { loadConfigText } from '../config/load.ts';
import { priceUsage } from './cost.ts';

const near = (a: number | undefined, b: number) =>
  assert.ok(a !== undefined && Math.abs(a - b) < 1e-12, `${a} ≠ ${b}`);
const usage = (
  input: number,
  output: number,
  more: { cachedInput?: number; cacheWrite?: number; reasoning?: number } = {},
) => ({
  input,
  output,
  cachedInput: more.cachedInput ?? 0,
  reasoning: more.reasoning ?? 0,
  ...(more.cacheWrite !== undefined ? { cacheWrite: more.cacheWrite } : {}),
});

describe('pricing', () => {
  const catalog = {
    openai: {
      'gpt-4o': { rates: { input: 2.5, output: 10, cacheRead: 1.25 }, tiers: [] },
      o3: { rates: { input: 2, output: 8, reasoning: 4 }, tiers: [] },
      plain: { rates: { input: 1, output: 2 }, tiers: [] },
      free: { rates: {}, tiers: [] },
    },
    anthropic: {
      'claude-x': { rates: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, tiers: [] },
    },
    'gcp.gemini': {
      'gemini-2.5-pro': {
        rates: { input: 1.25, output: 10 },
        tiers: [
          { contextOver: 200_000, rates: { input: 2.5, output: 15 } },
          { contextOver: 500_000, rates: { input: 4 } },
        ],
      },
    },
  };
  test('input and output per million tokens; cached tokens at their rate only where there is one', () => {
    const c = priceUsage(catalog, 'openai', ['gpt-4o'], usage(1000, 500, { cachedInput: 400 }));
    near(c?.input, (600 * 2.5) / 1e6);
    near(c?.cacheRead, (400 * 1.25) / 1e6);
    near(c?.output, (500 * 10) / 1e6);
    near(c?.total, (600 * 2.5 + 400 * 1.25 + 500 * 10) / 1e6);
    // no cache rate: cached tokens are input like any other
    near(priceUsage(catalog, 'openai', ['plain'], usage(1000, 0, { cachedInput: 400 }))?.total, 1000 / 1e6);
  });
  test('cache writes apart (Anthropic); reasoning at its rate, else the output’s', () => {
    const c = priceUsage(
      catalog,
      'anthropic',
      ['claude-x'],
      usage(1000, 100, { cachedInput: 200, cacheWrite: 300 }),
    );
    near(c?.input, (500 * 3) / 1e6);
    near(c?.cacheRead, (200 * 0.3) / 1e6);
    near(c?.cacheWrite, (300 * 3.75) / 1e6);
    const o3 = priceUsage(catalog, 'openai', ['o3'], usage(0, 1000, { reasoning: 600 }));
    near(o3?.output, (400 * 8) / 1e6);
    near(o3?.reasoning, (600 * 4) / 1e6);
    near(priceUsage(catalog, 'openai', ['plain'], usage(0, 1000, { reasoning: 600 }))?.total, 2000 / 1e6);
  });
  test('the highest tier the context exceeds reprices the whole request, over the base rates', () => {
    const g = (input: number) => priceUsage(catalog, 'gemini', ['gemini-2.5-pro'], usage(input, 1000))?.total;
    near(g(200_000), (200_000 * 1.25 + 1000 * 10) / 1e6);
    near(g(250_000), (250_000 * 2.5 + 1000 * 15) / 1e6);
    // the second tier sets input only: output comes from the base, not from the first tier
    near(g(600_000), (600_000 * 4 + 1000 * 10) / 1e6);
  });
  test('the model that answered first, then the one sent; OpenTelemetry provider names; else unpriced', () => {
    near(priceUsage(catalog, 'openai', ['gpt-4o-2024-08-06', 'plain'], usage(1e6, 0))?.total, 1);
    near(priceUsage(catalog, 'openai', ['gpt-4o', 'plain'], usage(1e6, 0))?.total, 2.5);
    assert.equal(priceUsage(catalog, 'openai', ['nope'], usage(1, 1)), undefined);
    assert.equal(priceUsage(catalog, 'mistral', ['gpt-4o'], usage(1, 1)), undefined);
    assert.equal(priceUsage(catalog, 'openai', ['free'], usage(1, 1)), undefined);
  });
});

describe('config.modelCatalog', () => {
  const dir = tempDir('gw-catalog-');
  writeFileSync(
    join(dir, 'base.json'),
    JSON.stringify({
      providers: {
        openai: {
          models: {
            'gpt-4o': { rates: { input: '2.5', output: '10' } },
            'gpt-4o-mini': { rates: { input: '0.15' } },
          },
        },
      },
    }),
  );
  writeFileSync(
    join(dir, 'bad.json'),
    JSON.stringify({ providers: { openai: { models: { m: { rates: { input: 0.5 } } } } } }),
  );
  const load = (catalog: string) =>
    loadConfigText(
      'gw.yaml',
      `config:\n  modelCatalog:\n${catalog}llm:\n  port: 0\n  models: [{name: m, provider: openai}]\n`,
      dir,
    );
  test('a file, JSON text and the catalog inline, merged in order: a later entry replaces a model whole', () => {
    const { ir } = load(`  - file: base.json
  - inline: '{"providers": {"anthropic": {"models": {"claude-x": {"rates": {"input": "3"}}}}}}'
  - inline:
      providers:
        openai:
          models:
            gpt-4o: {rates: {output: "8"}, tiers: [{contextOver: 1000, rates: {output: "9"}}]}
`);
    assert.deepEqual(ir.global.modelCatalog, {
      openai: {
        'gpt-4o': { rates: { output: 8 }, tiers: [{ contextOver: 1000, rates: { output: 9 } }] },
        'gpt-4o-mini': { rates: { input: 0.15 }, tiers: [] },
      },
      anthropic: { 'claude-x': { rates: { input: 3 }, tiers: [] } },
    });
  });
  test('errors name the source and the field in it', () => {
    const fails = (catalog: string, want: RegExp) =>
      assert.throws(
        () => load(catalog),
        (e: unknown) => e instanceof ConfigError && want.test(e.message),
      );
    fails(
      '  - file: bad.json\n',
      /config\.modelCatalog\[0\]\.file: bad\.json: providers\.openai\.models\.m\.rates\.input: .*string/,
    );
    fails("  - inline: '{nope'\n", /config\.modelCatalog\[0\]\.inline: the catalog is not JSON/);
    fails(
      '  - inline: {providers: {p: {models: {m: {rates: {input: "-1"}}}}}}\n',
      /modelCatalog\[0\]\.inline\.providers\.p\.models\.m\.rates\.input: expected a decimal string/,
    );
    fails(
      '  - inline: {providers: {p: {models: {m: {tiers: [{contextOver: 5, rates: {}}, {contextOver: 5, rates: {}}]}}}}}\n',
      /tiers\[1\]\.contextOver: each tier's contextOver is above the one before \(5\)/,
    );
  });
  test('a file that is not there is skipped with a warning (as agentgateway does)', () => {
    const { ir, warnings } = load('  - file: missing.json\n  - file: base.json\n');
    assert.ok(ir.global.modelCatalog?.openai?.['gpt-4o']);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]?.message ?? '', /missing\.json does not exist: its prices are not used/);
    const none = load('  - file: missing.json\n');
    assert.equal(none.ir.global.modelCatalog, undefined);
    assert.equal(none.warnings.length, 1);
  });
});

describe('priced requests', () => {
  let provider: FakeOpenAI;
  let proxy: TestProxy;
  before(async () => {
    provider = await startFakeOpenAI({ apiKey: 'sk-provider' });
    proxy = await startProxy(`config:
  adminAddr: "off"
  modelCatalog:
  - inline:
      providers:
        openai:
          models:
            gpt-4o-mini: {rates: {input: "0.15", output: "0.6"}}
frontendPolicies:
  accessLog:
    add: {cost_micros: 'string(int(llm.cost.total * 1000000000.0))'}
llm:
  port: 0
  models:
  - {name: gpt-4o-mini, provider: openai, params: {apiKey: sk-provider, baseUrl: "${provider.origin}/v1"}}
  - {name: unpriced, provider: openai, params: {model: gpt-4.1, apiKey: sk-provider, baseUrl: "${provider.origin}/v1"}}
`);
  });
  after(async () => {
    await proxy?.close();
    await provider?.close();
  });
  const lastLog = async () => {
    await new Promise((r) => setTimeout(r, 30));
    return proxy.accessLog[proxy.accessLog.length - 1] ?? {};
  };
  const client = () => new OpenAI({ apiKey: 'sk-client', baseURL: proxy.url('/v1'), maxRetries: 0 });
  const chatCost = (FAKE_USAGE.chat.prompt_tokens * 0.15 + FAKE_USAGE.chat.completion_tokens * 0.6) / 1e6;

  test('a chat completion: its cost in the access log, in CEL and in gw_llm_cost_total', async () => {
    await client().chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const log = await lastLog();
    near(log['llm.cost'] as number, chatCost);
    assert.equal(log.cost_micros, String(Math.trunc(chatCost * 1e9)));
    const text = await proxy.metrics.registry.metrics();
    const m = /^gw_llm_cost_total\{provider="openai",model="gpt-4o-mini"\} ([0-9.e-]+)/m.exec(text);
    assert.ok(
      m,
      text
        .split('\n')
        .filter((l) => l.includes('cost'))
        .join('\n'),
    );
    assert.ok(Number(m[1]) >= chatCost * 0.999);
  });

  test('a streamed answer is priced once its usage arrives', async () => {
    const stream = await client().chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    for await (const _ of stream) {
      // drain
    }
    const log = await lastLog();
    const u = FAKE_USAGE.stream;
    near(
      log['llm.cost'] as number,
      (u.prompt_tokens * 0.15 + (u.completion_tokens - u.reasoning_tokens) * 0.6 + u.reasoning_tokens * 0.6) /
        1e6,
    );
  });

  test('a model the catalog does not price has no cost', async () => {
    await client().chat.completions.create({
      model: 'unpriced',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const log = await lastLog();
    assert.equal(log['llm.model'], 'gpt-4.1');
    assert.equal(log['llm.cost'], undefined);
  });
});
