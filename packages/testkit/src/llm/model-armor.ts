// A fake Google Model Armor endpoint on loopback: POST
// /v1/projects/<p>/locations/<l>/templates/<t>:sanitizeUserPrompt ({userPromptData: {text}}) and
// :sanitizeModelResponse ({modelResponseData: {text}}), answering a SanitizationResult shaped as
// ./fixtures/model-armor/sanitize-match.json: the prompt-injection filter matches "ignore previous
// instructions" (or the test's pattern), the responsible-AI `dangerous` filter "kill"; anything else
// is NO_MATCH_FOUND. A request needs `Authorization: Bearer <token>`, else Google's 401 error JSON.
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FakeLlmRequest, startFakeServer } from './fake-server.ts';

type Json = Record<string, unknown>;

const MATCH = JSON.parse(
  readFileSync(
    join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'model-armor', 'sanitize-match.json'),
    'utf8',
  ),
) as { sanitizationResult: Json & { filterResults: Record<string, Record<string, Json>> } };

export type FakeModelArmorAnswer = { status: number } | { garbage: true };

export interface FakeModelArmorOptions {
  /** The access token requests must carry. */
  token: string;
  /** The template this fake knows, as projects/<p>/locations/<l>/templates/<t>. */
  template: string;
  /** Texts the prompt-injection and jailbreak filter matches (default: "ignore previous instructions"). */
  injection?: RegExp;
  answer?: (req: FakeLlmRequest) => FakeModelArmorAnswer | undefined;
}

export interface FakeModelArmor {
  port: number;
  host: string;
  seen: FakeLlmRequest[];
  close(): Promise<void>;
}

function googleError(res: ServerResponse, code: number, status: string, message: string): void {
  const body = JSON.stringify({ error: { code, message, status } });
  res.writeHead(code, {
    'content-type': 'application/json; charset=UTF-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** The fixture's result with each filter's state set from what it found. */
function result(text: string, injection: RegExp): Json {
  const jailbreak = injection.test(text);
  const dangerous = /\bkill\b/i.test(text);
  const state = (hit: boolean) => (hit ? 'MATCH_FOUND' : 'NO_MATCH_FOUND');
  const f = structuredClone(MATCH.sanitizationResult.filterResults);
  const pi = f.pi_and_jailbreak?.piAndJailbreakFilterResult as Json;
  pi.matchState = state(jailbreak);
  if (!jailbreak) delete pi.confidenceLevel;
  const rai = f.rai?.raiFilterResult as Json & { raiFilterTypeResults: Record<string, Json> };
  rai.matchState = state(dangerous);
  (rai.raiFilterTypeResults.dangerous as Json).matchState = state(dangerous);
  return {
    sanitizationResult: {
      ...MATCH.sanitizationResult,
      filterMatchState: state(jailbreak || dangerous),
      filterResults: f,
    },
  };
}

export async function startFakeModelArmor(opts: FakeModelArmorOptions): Promise<FakeModelArmor> {
  const injection = opts.injection ?? /ignore (all )?previous instructions/i;
  const fake = await startFakeServer(undefined, async (r, req, res) => {
    const m =
      /^\/v1\/(projects\/[^/]+\/locations\/[^/]+\/templates\/[^/:]+):(sanitizeUserPrompt|sanitizeModelResponse)$/.exec(
        r.url,
      );
    if (req.method !== 'POST' || !m) {
      googleError(res, 404, 'NOT_FOUND', `The requested URL ${r.url} was not found on this server.`);
      return;
    }
    if (req.headers.authorization !== `Bearer ${opts.token}`) {
      googleError(
        res,
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
      return;
    }
    if (m[1] !== opts.template) {
      googleError(res, 404, 'NOT_FOUND', `Template ${m[1]} not found.`);
      return;
    }
    const special = opts.answer?.(r);
    if (special && 'status' in special) {
      googleError(res, special.status, 'INTERNAL', 'Internal error encountered.');
      return;
    }
    if (special) {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Error 502</body></html>');
      return;
    }
    const data = (m[2] === 'sanitizeUserPrompt' ? r.json?.userPromptData : r.json?.modelResponseData) as
      | Json
      | undefined;
    if (typeof data?.text !== 'string') {
      googleError(res, 400, 'INVALID_ARGUMENT', 'Invalid value: data item must have text or byteItem.');
      return;
    }
    const body = JSON.stringify(result(data.text, injection));
    res.writeHead(200, {
      'content-type': 'application/json; charset=UTF-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  });
  return { port: fake.port, host: `127.0.0.1:${fake.port}`, seen: fake.seen, close: () => fake.close() };
}
