import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modulesLoadedAfterEach } from '../../routing/test-support.ts';

test('the agent backend kinds load with the first config that has one: a data plane serving plain routes never loads them', () => {
  const route = (backend: string) =>
    `binds:\n- port: 0\n  listeners:\n  - routes:\n    - backends:\n      - ${backend}\n`;
  const [plain, ai] = modulesLoadedAfterEach([
    route('host: 127.0.0.1:1'),
    route(
      'ai:\n          name: m\n          provider: {openAI: {model: gpt-4o-mini}}\n          hostOverride: 127.0.0.1:1',
    ),
  ]);
  // What the core shares with the agent kinds (a2a/info.ts, mcp/log.ts, llm/usage.ts) is not counted.
  const agentCode = (urls: string[] = []) =>
    ['/upstream/backends/agent.ts', '/llm/formats/', '/mcp/federation.ts', '/a2a/serve-agent.ts'].map((p) =>
      urls.some((u) => u.includes(p)),
    );
  assert.deepEqual(agentCode(plain), [false, false, false, false], 'none of it for plain routes');
  const [entry, formats] = agentCode(ai);
  assert.deepEqual({ entry, formats }, { entry: true, formats: true }, 'the ai backend loads it');
});
