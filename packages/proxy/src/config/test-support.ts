// What tests of the config loader share.
import { ConfigError } from '@gw/api';
import { loadConfigText } from './load.ts';

/**
 * The message of the ConfigError that loading `text` raises ('' when it loads): every problem, each
 * with its file, line and field. Anything else thrown is a test failure and is thrown on.
 */
export function configIssues(text: string, baseDir = process.cwd()): string {
  try {
    loadConfigText('gw.yaml', text, baseDir);
    return '';
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
}
