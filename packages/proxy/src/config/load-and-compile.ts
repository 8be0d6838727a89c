// Reads, validates and compiles a config file and returns what the main thread needs of it, in a
// form that crosses a process or thread boundary (secrets encoded, issues formatted). config/loader.ts
// runs it in a short-lived process of its own; `gw --validate-only` runs it in place.
import { ConfigError, formatIssue } from '@gw/api';
import { sharedMemoryOf } from '../policies/shared-memory.ts';
import { compileTable } from '../routing/table.ts';
import { encodeSecrets } from '../secret.ts';
import { DEFAULT_CONFIG, DEFAULT_CONFIG_NAME } from './default-config.ts';
import { loadConfigFile, loadConfigText } from './load.ts';
import type { LoaderReply } from './loader.ts';

/** `file`, or the embedded default config when null. */
export async function loadAndCompile(file: string | null): Promise<LoaderReply> {
  try {
    const loaded =
      file !== null
        ? await loadConfigFile(file)
        : loadConfigText(DEFAULT_CONFIG_NAME, DEFAULT_CONFIG, process.cwd());
    // Compile once without connecting anything, so what would fail in a data-plane worker fails here.
    compileTable(loaded.ir, null);
    return {
      ok: true,
      ir: encodeSecrets(loaded.ir),
      startup: loaded.startup,
      policyMemory: sharedMemoryOf(loaded.ir),
      warnings: loaded.warnings.map(formatIssue),
    };
  } catch (err) {
    const message = err instanceof ConfigError ? err.message : ((err as Error).message ?? String(err));
    return { ok: false, message };
  }
}
