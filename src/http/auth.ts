import { timingSafeEqual, createHash } from 'node:crypto';
import { VigilError } from '../domain/errors.js';

/**
 * Bearer tokens → user ids (I12). With no tokens configured the server serves one local
 * user (and config refuses to bind a non-loopback host).
 */
export class Authenticator {
  private readonly digests: Array<{ digest: Buffer; userId: string }>;

  constructor(tokens: ReadonlyMap<string, string>, private readonly localUserId: string) {
    this.digests = [...tokens].map(([token, userId]) => ({ digest: digestOf(token), userId }));
  }

  get open(): boolean {
    return this.digests.length === 0;
  }

  /** The user for an Authorization header (or a WebSocket's token query); throws UNAUTHORIZED. */
  authenticate(authorization: string | undefined, queryToken?: string | undefined): string {
    if (this.open) return this.localUserId;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    const token = match?.[1] ?? queryToken;
    if (!token) throw new VigilError('UNAUTHORIZED', 'a bearer token is required');
    const digest = digestOf(token);
    // Compare fixed-length digests in constant time, checking every entry.
    let userId: string | undefined;
    for (const entry of this.digests) if (timingSafeEqual(entry.digest, digest)) userId = entry.userId;
    if (!userId) throw new VigilError('UNAUTHORIZED', 'unknown bearer token');
    return userId;
  }
}

function digestOf(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
