// htpasswd lines `<user>:<hash>` with the hash formats Apache's htpasswd writes: bcrypt ($2y$), APR1-MD5
// ($apr1$), SHA-1 ({SHA}) and DES crypt. Plain-text passwords are refused. The proxy verifies with the
// entries parsed here; the checks word the problems.

export type HashFormat = 'bcrypt' | 'apr1' | 'sha1' | 'crypt';

export function hashFormat(hash: string): HashFormat | undefined {
  if (/^\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash)) return 'bcrypt';
  if (hash.startsWith('$apr1$')) return 'apr1';
  if (hash.startsWith('{SHA}')) return 'sha1';
  if (/^[./A-Za-z0-9]{13}$/.test(hash)) return 'crypt';
  return undefined;
}

export interface HtpasswdEntry {
  user: string;
  hash: string;
}

/** Parses htpasswd lines (blank lines and `#` comments skipped); the problems name the line by index. */
export function parseHtpasswd(lines: readonly string[]): {
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
