// Watches a config file for edits. Editors often replace the file (write + rename), so the directory
// is watched and events are debounced; the callback runs once per burst of changes.
import { watch } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';

export function watchFile(path: string, onChange: () => void, debounceMs = 150): () => void {
  const full = resolve(path);
  const name = basename(full);
  let timer: NodeJS.Timeout | undefined;
  const w = watch(dirname(full), (_event, file) => {
    if (file !== null && file !== name) return;
    clearTimeout(timer);
    timer = setTimeout(onChange, debounceMs);
  });
  w.on('error', () => {});
  return () => {
    clearTimeout(timer);
    w.close();
  };
}
