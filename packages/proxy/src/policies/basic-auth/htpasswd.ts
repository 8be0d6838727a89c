// Verifying htpasswd entries in every format Apache's htpasswd writes: bcrypt ($2y$), APR1-MD5
// ($apr1$), SHA-1 ({SHA}) and DES crypt. Which lines are entries is @gw/api's rule (the config checks
// refuse the others, plain-text passwords included, when the config loads).
import { createHash, timingSafeEqual } from 'node:crypto';
import { hashFormat } from '@gw/api/runtime';
import { Lazy } from '../../lazy.ts';

export type { HashFormat, HtpasswdEntry } from '@gw/api';
export { hashFormat, parseHtpasswd } from '@gw/api/runtime';

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * The hashing libraries, loaded once a basicAuth policy is built (hashers.ready) rather than with the
 * proxy: bcryptjs and the Apache ones cost about 1.3 MiB of RSS in every thread, which a config without
 * basic auth never needs.
 */
export const hashers = new Lazy(async () => {
  const [crypt, md5, bcrypt] = await Promise.all([
    import('apache-crypt'),
    import('apache-md5'),
    import('bcryptjs'),
  ]);
  return { apacheCrypt: crypt.default, apacheMd5: md5.default, bcrypt: bcrypt.default };
});

export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const format = hashFormat(hash);
  if (format === 'sha1') return same(`{SHA}${createHash('sha1').update(password).digest('base64')}`, hash);
  const { apacheCrypt, apacheMd5, bcrypt } = hashers.value ?? (await hashers.ready);
  switch (format) {
    case 'bcrypt':
      // bcryptjs knows $2a$/$2b$; Apache writes $2y$, which is the same algorithm.
      return await bcrypt.compare(password, hash.replace(/^\$2y\$/, '$2b$'));
    case 'apr1':
      return same(apacheMd5(password, hash), hash);
    case 'crypt':
      return same(apacheCrypt(password, hash), hash);
    default:
      return false;
  }
}
