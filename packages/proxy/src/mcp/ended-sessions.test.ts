// A session ended by DELETE on one worker thread is ended on the others.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { endSession, sessionEnded } from './ended-sessions.ts';

test('a session ended on another thread is ended here; one ended here is remembered', async () => {
  assert.equal(sessionEnded('from-a-worker'), false);
  const module = new URL('./ended-sessions.ts', import.meta.url).href;
  const worker = new Worker(
    `import(${JSON.stringify(module)}).then((m) => { m.endSession('from-a-worker'); });`,
    { eval: true },
  );
  await new Promise((resolve, reject) => {
    worker.once('exit', resolve);
    worker.once('error', reject);
  });
  // the message crosses threads asynchronously
  const until = Date.now() + 5000;
  while (!sessionEnded('from-a-worker') && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  assert.equal(sessionEnded('from-a-worker'), true);
  assert.equal(sessionEnded('never-ended'), false);
  endSession('ended-here');
  assert.equal(sessionEnded('ended-here'), true);
});
