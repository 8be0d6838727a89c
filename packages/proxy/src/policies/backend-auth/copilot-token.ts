// The GitHub token Copilot's API takes, where GitHub's tools keep it (as agentgateway looks): the
// GH_COPILOT_TOKEN or COPILOT_GITHUB_TOKEN environment variable, then the `oauth_token` for github.com
// in the Copilot editor plugins' hosts.json or apps.json, then in the GitHub CLI's hosts.yml, under
// $XDG_CONFIG_HOME (default ~/.config). Not cached: the tools rotate these files on their own.
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

const ENV = ['GH_COPILOT_TOKEN', 'COPILOT_GITHUB_TOKEN'];
const DOMAIN = 'github.com';

function configDir(): string {
  return process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
}

/** The oauth_token of the first entry whose key starts with github.com, trimmed; undefined if none. */
function tokenIn(doc: unknown): string | undefined {
  if (!doc || typeof doc !== 'object') return undefined;
  for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
    if (!k.startsWith(DOMAIN) || !v || typeof v !== 'object') continue;
    const t = (v as { oauth_token?: unknown }).oauth_token;
    if (typeof t === 'string' && t.trim() !== '') return t.trim();
  }
  return undefined;
}

async function read(path: string, parse: (text: string) => unknown): Promise<string | undefined> {
  try {
    return tokenIn(parse(await readFile(path, 'utf8')));
  } catch {
    return undefined;
  }
}

export async function copilotToken(): Promise<string | undefined> {
  for (const name of ENV) {
    const v = process.env[name]?.trim();
    if (v) return v;
  }
  const dir = configDir();
  for (const f of ['hosts.json', 'apps.json']) {
    const t = await read(join(dir, 'github-copilot', f), JSON.parse);
    if (t) return t;
  }
  // the YAML parser loads only for a machine with no token elsewhere
  const { parse } = await import('yaml');
  return read(join(dir, 'gh', 'hosts.yml'), parse);
}
