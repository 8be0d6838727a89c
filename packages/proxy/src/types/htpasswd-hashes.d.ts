// Type declarations for the two hash libraries that ship none.
declare module 'apache-md5' {
  /** APR1-MD5: with an existing `$apr1$` hash as salt, returns the hash of `password` for comparison. */
  export default function apacheMd5(password: string, salt?: string): string;
}
declare module 'apache-crypt' {
  /** Traditional DES crypt(3): with an existing hash as salt, returns the hash of `password`. */
  export default function apacheCrypt(password: string, salt?: string): string;
}
