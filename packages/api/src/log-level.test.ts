// config.logging.level: what the logger takes passes (any case, per module, spaces around entries);
// anything else is refused naming the level, as the logger would refuse it at start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logLevelProblem } from './log-level.ts';

test('log level filters', () => {
  for (const ok of ['info', 'DEBUG', 'info,rmcp=warn', 'warn, proxy=debug ,request=error', 'trace,'])
    assert.equal(logLevelProblem(ok), undefined, ok);
  assert.match(
    logLevelProblem('verbose') ?? '',
    /^invalid log level "verbose": expected one of trace, debug/,
  );
  assert.match(logLevelProblem('info,proxy=loud') ?? '', /^invalid log level "loud"/);
  assert.match(logLevelProblem('off') ?? '', /^invalid log level "off"/);
});
