// Reads, validates and compiles a config file and returns what the main thread needs of it.
// config/loader-process.ts runs it in a short-lived process and sends the result over; `gw
// --validate-only` and reloads run it in place.
import { formatIssue } from '@gw/api';
import { useCelFunctions } from '../cel/cel.ts';
import { sharedMemoryOf } from '../policies/shared-memory.ts';
import { compileTable } from '../routing/table.ts';
import { DEFAULT_CONFIG, DEFAULT_CONFIG_NAME } from './default-config.ts';
import { type LoadedConfig, loadConfigFile, loadConfigText } from './load.ts';
import type { LoadedConfigResult } from './loader.ts';

/** `file`, or the embedded default config when null; a config that does not load throws ConfigError. */
export async function loadAndCompile(file: string | null): Promise<LoadedConfigResult> {
  const loaded =
    file !== null
      ? await loadConfigFile(file)
      : loadConfigText(DEFAULT_CONFIG_NAME, DEFAULT_CONFIG, process.cwd());
  // Compile once without connecting anything, so what would fail in a data-plane worker fails here,
  // with the file's name, before any worker starts.
  const restoreCel = useCelFunctions(loaded.ir.global.customFunctions);
  try {
    compileTable(loaded.ir, null);
  } finally {
    restoreCel();
  }
  return resultOf(loaded);
}

/**
 * What the main thread needs of a loaded config: the IR, the start-up settings, the memory the
 * policies share and the warnings, formatted. xds-client/build.ts ends the same way.
 */
export function resultOf(loaded: LoadedConfig): LoadedConfigResult {
  return {
    ir: loaded.ir,
    startup: loaded.startup,
    policyMemory: sharedMemoryOf(loaded.ir),
    warnings: loaded.warnings.map(formatIssue),
    files: loaded.files,
  };
}
