import { hkdfSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { VigilError } from '../../domain/errors.js';

export const SECRET_KEY_FILE_NAME = 'secrets.key';

/**
 * The server key that encrypts stored secrets (hook secrets): from VIGIL_SECRETS_KEY when
 * set (any string of 32+ characters, stretched with HKDF), else a random key kept in
 * `<data dir>/secrets.key` (created on first use, mode 0600), so one machine needs no
 * setup. Several instances sharing a database must share the key: set VIGIL_SECRETS_KEY.
 */
export async function loadSecretKey(options: { configured: string | undefined; dataDir: string; logger: Logger }): Promise<Buffer> {
  if (options.configured !== undefined) return Buffer.from(hkdfSync('sha256', options.configured, 'vigil', 'stored-secrets/v1', 32));
  const file = join(options.dataDir, SECRET_KEY_FILE_NAME);
  await mkdir(options.dataDir, { recursive: true });
  try {
    await writeFile(file, randomBytes(32).toString('base64'), { flag: 'wx', mode: 0o600 });
    options.logger.info({ file }, 'created the key that encrypts stored secrets; keep it with the database, or set VIGIL_SECRETS_KEY');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new VigilError('CONFIG_INVALID', `cannot create ${file}`, { cause: error });
  }
  // Another process may have created the file an instant ago and not written it yet.
  let text = '';
  for (let attempt = 0; attempt < 20 && text === ''; attempt++) {
    text = (await readFile(file, 'utf8')).trim();
    if (text === '') await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32) throw new VigilError('CONFIG_INVALID', `${file} does not hold a 32-byte base64 key`);
  return key;
}
