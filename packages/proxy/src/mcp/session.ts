// The gateway's MCP session id: the routing state of a session (each target's upstream session id,
// the negotiated version and what the client said at initialize), sealed with AES-256-GCM under the
// session key, so any worker or replica holding the key can serve the session and nobody else can
// read or forge one. SESSION_KEY may be any string (the deployer's random Secret, hex, a passphrase):
// the AES key is derived from it with HKDF.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { hostname } from 'node:os';
import { threadId } from 'node:worker_threads';
import { workerExited } from '../server/worker-exits.ts';

export interface SessionState {
  /** Version of this layout. */
  v: 1;
  /** Upstream session id per target name; null: a target without one (stdio, stateless servers). */
  s: Record<string, string | null>;
  /** Targets that failed at initialize (FailOpen): they stay out of the session. */
  down?: string[];
  /** The negotiated protocol version. */
  p: string;
  /** The client's initialize params (capabilities, clientInfo), to initialize a target again. */
  c: Record<string, unknown>;
  /** Seconds since the epoch when the session began. */
  t: number;
  /** Random, so two sessions never share an id. */
  n: string;
  /**
   * The worker that initialized the session (its threadId), which holds its stdio processes and
   * legacy SSE streams; absent in ids sealed before workers shared them.
   */
  h?: number;
  /** The process of worker `h`: another process (a replica) has a worker of that number too. */
  hp?: string;
}

/**
 * This process among the gateway's replicas: its host and pid, hashed. The same in every worker of
 * the process, so a worker finds out whether a session's home is a sibling it can reach.
 */
const PROCESS = createHash('sha256').update(`${hostname()}\0${process.pid}`).digest('base64url').slice(0, 8);

/** What a session initialized in this worker records of its home. */
export function homeHere(): { h: number; hp: string } {
  return { h: threadId, hp: PROCESS };
}

/**
 * The worker of this process holding `s`'s connection-bound targets when it is not this one; undefined
 * when it is this one, when the id predates homes, or when the home is in another process (a replica
 * cannot reach it: the targets are opened here, as before homes).
 */
export function remoteHome(s: SessionState): number | undefined {
  return s.h !== undefined && s.hp === PROCESS && s.h !== threadId ? s.h : undefined;
}

/** Whether `s`'s home is a worker of this process that exited: what it held for the session is gone. */
export function homeExited(s: SessionState): boolean {
  const h = remoteHome(s);
  return h !== undefined && workerExited(h);
}

const INFO = Buffer.from('gw mcp session id v1');
/** Session ids whose opened text a sealer keeps (oldest dropped first). */
const OPENED_KEPT = 1024;

export class SessionSealer {
  // A KeyObject, not bytes: a cipher made from bytes imports the key again each time (about 25 µs of
  // a request's 30 µs to open a session id; 5 µs with the KeyObject).
  readonly #key: KeyObject;

  constructor(secret: string | Buffer) {
    const ikm = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret;
    this.#key = createSecretKey(Buffer.from(hkdfSync('sha256', ikm, Buffer.alloc(0), INFO, 32)));
  }

  seal(state: SessionState): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([c.update(JSON.stringify(state), 'utf8'), c.final()]);
    return Buffer.concat([iv, body, c.getAuthTag()]).toString('base64url');
  }

  /** The state, or undefined for an id this key did not seal (tampered, foreign, garbage). */
  open(id: string): SessionState | undefined {
    // Every request of a session carries the same id: the text of the ids opened lately is kept, so
    // most requests skip the decryption. Only ids that authenticated are kept.
    let text = this.#opened.get(id);
    if (text === undefined) {
      text = this.#decrypt(id);
      if (text === undefined) return undefined;
      if (this.#opened.size >= OPENED_KEPT) this.#opened.delete(this.#opened.keys().next().value as string);
      this.#opened.set(id, text);
    }
    try {
      const v = JSON.parse(text) as SessionState;
      return v && v.v === 1 && typeof v.s === 'object' ? v : undefined;
    } catch {
      return undefined;
    }
  }

  readonly #opened = new Map<string, string>();

  #decrypt(id: string): string | undefined {
    if (id.length > 16384 || !/^[A-Za-z0-9_-]+$/.test(id)) return undefined;
    const raw = Buffer.from(id, 'base64url');
    if (raw.length < 12 + 16 + 2) return undefined;
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
      d.setAuthTag(raw.subarray(raw.length - 16));
      return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}

let shared: SessionSealer | undefined;

/**
 * The sealer of this process: SESSION_KEY, or (standalone without one) a key the CLI generated at
 * start and put in the environment before the workers started, so every worker shares it.
 */
export function sessionSealer(): SessionSealer {
  if (!shared) {
    let key = process.env.SESSION_KEY;
    if (!key) {
      key = randomBytes(32).toString('base64');
      process.env.SESSION_KEY = key;
    }
    shared = new SessionSealer(key);
  }
  return shared;
}

export function newSessionNonce(): string {
  return randomBytes(8).toString('base64url');
}
