// Loading an `llm:` block in tests of provider settings: the providers the loader made, or the
// issues it named.
import assert from 'node:assert/strict';
import { ConfigError } from '@gw/api';
import type { AiTarget, LlmProviderIR } from '../../config/ir.ts';
import { loadConfigText } from '../../config/load.ts';

/** An `llm:` block on a port of its own serving these `models` lines. */
export const llm = (models: string) => `llm:\n  port: 0\n  models:\n${models}`;

/** The providers of the first ai backend the config loads to. */
export function providers(yaml: string): LlmProviderIR[] {
  const { ir } = loadConfigText('gw.yaml', yaml, process.cwd(), () => undefined);
  for (const b of ir.binds)
    for (const l of b.listeners)
      for (const r of l.routes)
        for (const be of r.backends)
          if (be.target.kind === 'ai') return (be.target as AiTarget).models.map((m) => m.provider);
  assert.fail('no ai backend');
}

/** `path: message` of each issue of a config that must not load. */
export function issues(yaml: string): string[] {
  try {
    loadConfigText('gw.yaml', yaml, process.cwd(), () => undefined);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.issues.map((i) => `${i.path}: ${i.message}`);
  }
  assert.fail('config was accepted');
}
