// Verifying htpasswd entries in every format Apache's htpasswd writes: bcrypt ($2y$), APR1-MD5
// ($apr1$), SHA-1 ({SHA}) and DES crypt. Which lines are entries is @gw/api's rule (the config checks
// refuse the others, plain-text passwords included, when the config loads).
import { createHash, timingSafeEqual } from 'node:crypto';
import { hashFormat } from '@gw/api/runtime';
import apacheCrypt from 'apache-crypt';
import apacheMd5 from 'apache-md5';
import bcrypt from 'bcryptjs';

export type { HashFormat, HtpasswdEntry } from '@gw/api';
export { hashFormat, parseHtpasswd } from '@gw/api/runtime';

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
