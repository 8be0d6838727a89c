// The published JSON Schema of the standalone config (schema/config.json), for editors: files that
// start with `# yaml-language-server: $schema=…` get completion and validation as you type.
import { z } from 'zod';
import { ConfigFile } from './schema.ts';

export const CONFIG_SCHEMA_ID = 'https://gw.dev/schema/config.json';

export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(ConfigFile, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' });
  return { ...schema, $id: CONFIG_SCHEMA_ID, title: 'gw standalone configuration' };
}
