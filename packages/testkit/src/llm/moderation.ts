// A fake OpenAI moderation endpoint on loopback: POST /v1/moderations with `input` as a string, an
// array of strings or an array of `{type: text, text}` parts, one result per input in the shape of
// ./fixtures/openai/moderation.json (the API reference's flagged example). A text the test's `flags`
// names is flagged in those categories; any other is clean. OpenAI's error JSON for a wrong key.
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FakeLlmRequest, startFakeServer } from './fake-server.ts';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'openai');

type Json = Record<string, unknown>;

/** An answer other than the verdict, for a test to choose per request. */
export type FakeModerationAnswer = { status: number } | { garbage: true };

export interface FakeModerationOptions {
  /** When set, requests must carry `Authorization: Bearer <key>` (else 401). */
  apiKey?: string;
  /** The categories a text is flagged in (none: clean). Default: "kill" is violence. */
  flags?: (text: string) => string[];
  answer?: (req: FakeLlmRequest) => FakeModerationAnswer | undefined;
}

export interface FakeModeration {
  port: number;
  /** host:port, for a guard's hostOverride. */
  host: string;
  seen: FakeLlmRequest[];
  close(): Promise<void>;
}

const defaultFlags = (text: string) => (/\bkill\b/i.test(text) ? ['violence'] : []);

function send(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The texts of a request's `input`, or undefined when it is not one of the documented shapes. */
function inputs(json: Json | undefined): string[] | undefined {
  const input = json?.input;
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input) || input.length === 0) return undefined;
  const out: string[] = [];
  for (const x of input) {
    if (typeof x === 'string') out.push(x);
    else if (x && typeof x === 'object' && x.type === 'text' && typeof x.text === 'string') out.push(x.text);
    else return undefined;
  }
  return out;
}

export async function startFakeModeration(opts: FakeModerationOptions = {}): Promise<FakeModeration> {
  const template = JSON.parse(readFileSync(join(FIXTURES, 'moderation.json'), 'utf8')) as Json;
  const flagged = (template.results as Json[])[0] as Json;
  const flags = opts.flags ?? defaultFlags;
  const fake = await startFakeServer(undefined, async (r, req, res) => {
    if (req.method !== 'POST' || r.url !== '/v1/moderations') {
      send(
        res,
        404,
        JSON.stringify({ error: { message: `no route ${r.url}`, type: 'invalid_request_error' } }),
      );
      return;
    }
    if (opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      send(res, 401, readFileSync(join(FIXTURES, 'error-invalid-api-key.json'), 'utf8'));
      return;
    }
    const special = opts.answer?.(r);
    if (special && 'status' in special) {
      send(
        res,
        special.status,
        JSON.stringify({ error: { message: 'The server had an error', type: 'server_error' } }),
      );
      return;
    }
    if (special) {
      send(res, 200, '<html><body>502 Bad Gateway</body></html>', 'text/html');
      return;
    }
    const texts = inputs(r.json);
    if (!texts) {
      send(
        res,
        400,
        JSON.stringify({
          error: {
            message: "Invalid value for 'input'.",
            type: 'invalid_request_error',
            param: 'input',
            code: null,
          },
        }),
      );
      return;
    }
    const results = texts.map((t) => {
      const hits = new Set(flags(t));
      const categories: Json = {};
      const scores: Json = {};
      for (const name of Object.keys(flagged.categories as Json)) {
        categories[name] = hits.has(name);
        scores[name] = hits.has(name) ? 0.86 : 0.0001;
      }
      return { ...flagged, flagged: hits.size > 0, categories, category_scores: scores };
    });
    send(res, 200, JSON.stringify({ ...template, model: r.json?.model ?? template.model, results }));
  });
  return {
    port: fake.port,
    host: `127.0.0.1:${fake.port}`,
    seen: fake.seen,
    close: () => fake.close(),
  };
}
