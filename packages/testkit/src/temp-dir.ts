// Temp dirs for tests that remove themselves. node's test runner gives each test file a process of
// its own, so removing them at that process's exit cleans up after the file, whichever test made them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

function removeAll(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A new directory under the OS temp dir, named `<prefix>XXXXXX`, removed when the process exits. */
export function tempDir(prefix: string): string {
  if (made.length === 0) process.once('exit', removeAll);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
