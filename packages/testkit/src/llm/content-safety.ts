// A fake Azure AI Content Safety resource on loopback: POST /contentsafety/text:analyze and
// /contentsafety/text:detectJailbreak (any api-version, recorded in `seen`), answering in the shapes of
// ./fixtures/content-safety/. Analyze: "hate" is Hate at severity 4, "hurt" Violence at 2, anything
// else 0 everywhere; a text holding an item of a requested blocklist matches it. Jailbreak: "ignore
// previous instructions" (or the test's pattern). A request needs `Ocp-Apim-Subscription-Key: <key>`
// or `Authorization: Bearer <token>`, else Azure's 401 error JSON; a text longer than the API takes
// is its 400.
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FakeLlmRequest, startFakeServer } from './fake-server.ts';

type Json = Record<string, unknown>;

const fixture = (name: string) =>
  JSON.parse(
    readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'content-safety', name), 'utf8'),
  ) as Json;
const ANALYZE = fixture('analyze-text.json') as {
  blocklistsMatch: Json[];
  categoriesAnalysis: { category: string; severity: number }[];
};
const JAILBREAK = fixture('detect-jailbreak.json') as { jailbreakAnalysis: Json };

/** The longest text each API takes, in characters. */
export const CONTENT_SAFETY_LIMITS = { analyze: 10_000, jailbreak: 1_000 };

export type FakeContentSafetyAnswer = { status: number } | { garbage: true };

export interface FakeContentSafetyOptions {
  /** The subscription key requests may carry. */
  key?: string;
  /** The Entra ID access token requests may carry instead. */
  token?: string;
  /** Blocklists the resource has: name → items (matched case-insensitively as words). */
  blocklists?: Record<string, string[]>;
  /** What the jailbreak detection finds (default: "ignore previous instructions"). */
  jailbreak?: RegExp;
  answer?: (req: FakeLlmRequest) => FakeContentSafetyAnswer | undefined;
}

export interface FakeContentSafety {
  port: number;
  host: string;
  seen: FakeLlmRequest[];
  close(): Promise<void>;
}

function azureError(res: ServerResponse, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function analyze(text: string, names: unknown, blocklists: Record<string, string[]>): Json {
  const severity: Record<string, number> = {
    Hate: /\bhate\b/i.test(text) ? 4 : 0,
    Violence: /\bhurt\b/i.test(text) ? 2 : 0,
  };
  const requested = Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : [];
  const template = ANALYZE.blocklistsMatch[0] as Json;
  const blocklistsMatch = requested.flatMap((name) =>
    (blocklists[name] ?? [])
      .filter((item) => new RegExp(`\\b${item.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'i').test(text))
      .map((item, i) => ({
        ...template,
        blocklistName: name,
        blocklistItemId: `${name}-${i}`,
        blocklistItemText: item,
      })),
  );
  return {
    blocklistsMatch,
    categoriesAnalysis: ANALYZE.categoriesAnalysis.map((c) => ({
      ...c,
      severity: severity[c.category] ?? 0,
    })),
  };
}

export async function startFakeContentSafety(opts: FakeContentSafetyOptions): Promise<FakeContentSafety> {
  const jailbreak = opts.jailbreak ?? /ignore (all )?previous instructions/i;
  const fake = await startFakeServer(undefined, async (r, req, res) => {
    const m = /^\/contentsafety\/text:(analyze|detectJailbreak)\?api-version=[\w.-]+$/.exec(r.url);
    if (req.method !== 'POST' || !m) {
      azureError(res, 404, '404', 'Resource not found');
      return;
    }
    const key = req.headers['ocp-apim-subscription-key'];
    const bearer = req.headers.authorization;
    const authorized =
      (opts.key !== undefined && key === opts.key) ||
      (opts.token !== undefined && bearer === `Bearer ${opts.token}`);
    if (!authorized) {
      azureError(
        res,
        401,
        '401',
        'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
      );
      return;
    }
    const special = opts.answer?.(r);
    if (special && 'status' in special) {
      azureError(res, special.status, 'InternalServerError', 'The service encountered an internal error.');
      return;
    }
    if (special) {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Bad Gateway</body></html>');
      return;
    }
    const text = r.json?.text;
    const kind = m[1] === 'analyze' ? 'analyze' : 'jailbreak';
    if (typeof text !== 'string' || text.length === 0 || text.length > CONTENT_SAFETY_LIMITS[kind]) {
      azureError(
        res,
        400,
        'InvalidRequestBody',
        `The text must be 1 to ${CONTENT_SAFETY_LIMITS[kind]} characters.`,
      );
      return;
    }
    const answer =
      kind === 'analyze'
        ? analyze(text, r.json?.blocklistNames, opts.blocklists ?? {})
        : { jailbreakAnalysis: { ...JAILBREAK.jailbreakAnalysis, detected: jailbreak.test(text) } };
    const body = JSON.stringify(answer);
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  });
  return { port: fake.port, host: `127.0.0.1:${fake.port}`, seen: fake.seen, close: () => fake.close() };
}
