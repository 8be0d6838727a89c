// Every backend kind, keyed by the IR's target kind. A kind without an entry is a type error, so a
// new kind (ai, mcp, a2a, aws) is one folder here plus one line below, never a branch in the table.
import { a2aBackend } from './a2a/index.ts';
import { aiBackend } from './ai/index.ts';
import { awsBackend } from './aws/index.ts';
import { dynamicBackend } from './dynamic/index.ts';
import { hostBackend } from './host/index.ts';
import { mcpBackend } from './mcp/index.ts';
import type { BackendKind, BackendKindName } from './types.ts';
import { unixBackend } from './unix/index.ts';

export const BACKEND_KINDS: { [K in BackendKindName]: BackendKind<K> } = {
  host: hostBackend,
  unix: unixBackend,
  dynamic: dynamicBackend,
  ai: aiBackend,
  mcp: mcpBackend,
  a2a: a2aBackend,
  aws: awsBackend,
};
