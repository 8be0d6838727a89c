// Verifying htpasswd entries in every format Apache's htpasswd writes: bcrypt ($2y$), APR1-MD5
// ($apr1$), SHA-1 ({SHA}) and DES crypt. Plain-text passwords are refused when the config loads.
import { createHash, timingSafeEqual } from 'node:crypto';
import apacheCrypt from 'apache-crypt';
import apacheMd5 from 'apache-md5';
import bcrypt from 'bcryptjs';

export type HashFormat = 'bcrypt' | 'apr1' | 'sha1' | 'crypt';

export function hashFormat(hash: string): HashFormat | undefined {
  if (/^\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash)) return 'bcrypt';
  if (hash.startsWith('$apr1$')) return 'apr1';
  if (hash.startsWith('{SHA}')) return 'sha1';
  if (/^[./A-Za-z0-9]{13}$/.test(hash)) return 'crypt';
  return undefined;
}

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  switch (hashFormat(hash)) {
    case 'bcrypt':
      // bcryptjs knows $2a$/$2b$; Apache writes $2y$, which is the same algorithm.
      return await bcrypt.compare(password, hash.replace(/^\$2y\$/, '$2b$'));
    case 'apr1':
      return same(apacheMd5(password, hash), hash);
    case 'sha1':
      return same(`{SHA}${createHash('sha1').update(password).digest('base64')}`, hash);
    case 'crypt':
      return same(apacheCrypt(password, hash), hash);
    default:
      return false;
  }
}

export interface HtpasswdEntry {
  user: string;
  hash: string;
}

/** Parses htpasswd lines; returns the entries and, per line, the problem with it. */
export function parseHtpasswd(lines: string[]): {
  entries: HtpasswdEntry[];
  problems: { index: number; message: string }[];
} {
  const entries: HtpasswdEntry[] = [];
  const problems: { index: number; message: string }[] = [];
  lines.forEach((line, index) => {
    const l = line.trim();
    if (!l || l.startsWith('#')) return;
    const colon = l.indexOf(':');
    const user = l.slice(0, colon);
    const hash = l.slice(colon + 1);
    if (colon <= 0 || !hash) problems.push({ index, message: 'expected <user>:<hash>' });
    else if (!hashFormat(hash)) {
      problems.push({
        index,
        message: `user ${user}: unsupported or plain-text password (use bcrypt, MD5 ($apr1$), SHA-1 or crypt hashes)`,
      });
    } else entries.push({ user, hash });
  });
  return { entries, problems };
}
