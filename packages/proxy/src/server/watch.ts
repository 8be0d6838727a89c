// Watches a config file for edits. Editors often replace the file (write + rename), so the directory
// is watched and events are debounced; the callback runs once per burst of changes, and at least
// once a second while a burst goes on.
import { watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

/**
 * Calls `onChange` `debounceMs` after the last change of a burst, but no later than `maxWaitMs` after
 * its first change: a file rewritten more often than `debounceMs` (a generator writing in a loop)
 * would otherwise never be reloaded until the writes stopped.
 */
export function watchFile(
  path: string,
  onChange: () => void,
  debounceMs = 150,
  maxWaitMs = 1000,
): () => void {
  const full = resolve(path);
  const name = basename(full);
  let timer: NodeJS.Timeout | undefined;
  let burstStart: number | undefined;
  const fire = () => {
    timer = undefined;
    burstStart = undefined;
    onChange();
  };
  const w = watch(dirname(full), (_event, file) => {
    if (file !== null && file !== name) return;
    const now = Date.now();
    burstStart ??= now;
    clearTimeout(timer);
    timer = setTimeout(fire, Math.max(0, Math.min(debounceMs, burstStart + maxWaitMs - now)));
  });
  w.on('error', () => {});
  return () => {
    clearTimeout(timer);
    w.close();
  };
}
