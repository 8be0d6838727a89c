// A throwaway PKI for tests, made with the openssl CLI: one CA, a server certificate per DNS name
// (name in CN and subjectAltName) and a client certificate for mTLS. Files live in a temp dir.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CertFiles {
  /** Paths of the PEM files. */
  certFile: string;
  keyFile: string;
  /** The same material inline. */
  cert: string;
  key: string;
}

export interface TestPki {
  dir: string;
  caFile: string;
  ca: string;
  /** Server certificate for each requested name. */
  servers: Record<string, CertFiles>;
  /** Client certificate (CN=gw-test-client, clientAuth) signed by the same CA. */
  client: CertFiles;
  cleanup(): Promise<void>;
}

async function openssl(dir: string, args: string[]): Promise<void> {
  try {
    await run('openssl', args, { cwd: dir });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('the openssl CLI is needed to make test certificates');
    throw new Error(`openssl ${args[0]} failed: ${e.stderr ?? e.message}`);
  }
}

const fileSafe = (name: string) => name.replace(/[^A-Za-z0-9.-]/g, '_');

/** Creates a CA and certificates for `names` (EC P-256, valid for two days). */
export async function makeTestPki(names: string[]): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), 'gw-pki-'));
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(dir, [
    'req',
    '-x509',
    ...key,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=gw test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);

  const issue = async (base: string, cn: string, ext: string): Promise<CertFiles> => {
    await writeFile(join(dir, `${base}.ext`), ext);
    await openssl(dir, [
      'req',
      ...key,
      '-keyout',
      `${base}.key`,
      '-out',
      `${base}.csr`,
      '-subj',
      `/CN=${cn}`,
    ]);
    await openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      `${base}.crt`,
      '-extfile',
      `${base}.ext`,
    ]);
    const certFile = join(dir, `${base}.crt`);
    const keyFile = join(dir, `${base}.key`);
    return {
      certFile,
      keyFile,
      cert: await readFile(certFile, 'utf8'),
      key: await readFile(keyFile, 'utf8'),
    };
  };

  const servers: Record<string, CertFiles> = {};
  // Sequential: the CA serial file is shared.
  for (const name of names) {
    servers[name] = await issue(
      `server-${fileSafe(name)}`,
      name,
      `subjectAltName=DNS:${name}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n`,
    );
  }
  const client = await issue(
    'client',
    'gw-test-client',
    'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n',
  );
  const caFile = join(dir, 'ca.crt');
  return {
    dir,
    caFile,
    ca: await readFile(caFile, 'utf8'),
    servers,
    client,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
