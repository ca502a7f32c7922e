import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { VigilError } from '../../domain/errors.js';

/**
 * How hook secrets are kept at rest.
 *
 * A webhook signature is an HMAC keyed with the secret, so the server needs the secret
 * itself to verify one: a one-way hash (as for passwords) cannot verify an HMAC, and
 * storing HMAC's own pre-hashed key would be just as good as the secret to a thief. So
 * secrets are encrypted with AES-256-GCM under a server key that is not in the database
 * (VIGIL_SECRETS_KEY, or a key file under the data directory): a copy of the database
 * alone reveals no secret and lets nobody sign deliveries. The hook id is the GCM
 * associated data, so a ciphertext moved to another hook's row does not decrypt.
 *
 * Format: `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts); the key id (a hash
 * prefix of the key) makes "encrypted under another key" a clear error, not a bad
 * signature.
 */
export class SecretBox {
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new VigilError('INTERNAL', 'a secret box key is 32 bytes');
    this.keyId = createHash('sha256').update(key).digest('base64url').slice(0, 8);
  }

  seal(plaintext: string, associatedData: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', this.keyId, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
  }

  open(sealed: string, associatedData: string): string {
    const [version, keyId, iv, tag, ciphertext] = sealed.split('.');
    if (version !== 'v1' || !keyId || !iv || !tag || ciphertext === undefined) throw new VigilError('INTERNAL', 'a stored secret has an unknown format');
    if (keyId !== this.keyId) throw new VigilError('INTERNAL', 'a stored secret was encrypted under another key: every instance must share VIGIL_SECRETS_KEY');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(associatedData, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch (error) {
      throw new VigilError('INTERNAL', 'a stored secret does not decrypt (tampered, or moved to another row)', { cause: error });
    }
  }
}
