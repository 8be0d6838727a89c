// Watches a config file for edits. Editors often replace the file (write + rename), so its directory
// is watched rather than the file, and events are debounced: the callback runs once per burst of
// changes, and at least once a second while a burst goes on.
//
// The path may lead through symbolic links. A Kubernetes ConfigMap volume is the common case:
// `config.yaml` links to `..data/config.yaml`, `..data` links to a timestamped directory, and an
// update swaps `..data` for a new one in one rename. The events then name `..data`, never
// `config.yaml`, and an edit of the file itself happens in the directory the links lead to. So when
// the path is a link, every event in its directory counts, the directory of the file it leads to is
// watched too (again after each change, since a swap moves it), and a burst calls back only if
// where the path leads, or that file, has changed.
import { type FSWatcher, realpathSync, statSync, watch } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

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
  let real = realPath(full);
  let seen = fingerprint(real);
  /** Whether the file itself is a link (a link among the directories above it is followed as is). */
  let isLink = linkedFile(full, real);
  /** The watcher of the directory the links lead to, and that directory; none for a plain path. */
  let inner: { w: FSWatcher; dir: string } | undefined;

  const changed = () => {
    const now = Date.now();
    burstStart ??= now;
    clearTimeout(timer);
    timer = setTimeout(fire, Math.max(0, Math.min(debounceMs, burstStart + maxWaitMs - now)));
  };
  const fire = () => {
    timer = undefined;
    burstStart = undefined;
    real = realPath(full);
    isLink = linkedFile(full, real);
    followLinks();
    const now = fingerprint(real);
    if (now === seen) return;
    seen = now;
    onChange();
  };
  const followLinks = () => {
    const dir = isLink ? dirname(real) : undefined;
    if (inner?.dir === dir) return;
    inner?.w.close();
    inner = undefined;
    if (dir === undefined) return;
    try {
      inner = { w: watchDir(dir, (file) => file === basename(real)), dir };
    } catch {
      // Gone again since realpath (swapped once more): the swap's own events bring the next try.
    }
  };
  const watchDir = (dir: string, counts: (file: string) => boolean): FSWatcher => {
    const w = watch(dir, (_event, file) => {
      if (file === null || counts(file)) changed();
    });
    w.on('error', () => {});
    return w;
  };

  // In the path's own directory only the file's name counts, unless the path is a link.
  const outer = watchDir(dirname(full), (file) => file === name || isLink);
  followLinks();
  return () => {
    clearTimeout(timer);
    outer.close();
    inner?.w.close();
  };
}

/** Whether the file at `full` is itself a link: where it leads is not its name in its (real) directory. */
function linkedFile(full: string, real: string): boolean {
  return real !== join(realPath(dirname(full)), basename(full));
}

/** Where the path leads (itself when it is not a link or does not exist). */
function realPath(full: string): string {
  try {
    return realpathSync(full);
  } catch {
    return full;
  }
}

/** Where the path leads (`real`, from realPath) and that file's identity, size and times: any edit or swap changes it. */
function fingerprint(real: string): string {
  try {
    const s = statSync(real, { bigint: true });
    return `${real}\0${s.ino}\0${s.size}\0${s.mtimeNs}\0${s.ctimeNs}`;
  } catch (err) {
    return `unreadable\0${(err as NodeJS.ErrnoException).code ?? ''}`;
  }
}
