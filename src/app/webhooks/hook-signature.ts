import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { z } from 'zod';
import { VigilError } from '../../domain/errors.js';

/**
 * Webhook signatures: the Standard Webhooks scheme (https://www.standardwebhooks.com),
 * verified with its reference library (`standardwebhooks`):
 *
 *   webhook-id:        <the sender's unique id for this delivery>
 *   webhook-timestamp: <unix seconds>
 *   webhook-signature: v1,<base64 of HMAC-SHA256(secret, "<id>.<timestamp>.<raw body>")>
 *                      (several, space-separated, while a sender rotates secrets)
 *
 * The signature covers the id as well as the timestamp and body. The scheme before this
 * one (x-vigil-*, removed: nobody used it yet, and keeping it would keep its hole open)
 * signed only timestamp and body, so a captured request resent with a new delivery id
 * within the freshness window passed the replay guard. Now a new id breaks the
 * signature, and a reused id is refused by the guard (one row per hook and id).
 *
 * The raw body is verified as received: no re-serialised JSON, whose spacing or key
 * order could differ from the sender's.
 */

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';
/** How far a delivery's timestamp may be from the server's clock, either way (the library's window too). */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;
/** The Standard Webhooks secret prefix; the rest is the base64 key. */
export const HOOK_SECRET_PREFIX = 'whsec_';

export const deliveryIdSchema = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1 to 128 letters, digits or . _ : -');

/** A new hook secret: 256 random bits in the library's format (`whsec_` + base64), shown once. */
export function newHookSecret(): string {
  return `${HOOK_SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

export interface DeliveryHeaders {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

/**
 * The delivery's id once it is proven: a fresh timestamp by the server's clock
 * (HOOK_TIMESTAMP_STALE), a well-formed id (VALIDATION_FAILED), and a signature by this
 * secret over id, timestamp and body (HOOK_SIGNATURE_INVALID). Whether the id was seen
 * before is the caller's check (it needs storage).
 */
export function verifyDelivery(secret: string, headers: DeliveryHeaders, rawBody: Buffer, now: Date): string {
  if (!headers.signature) throw signatureInvalid();
  checkTimestamp(headers.timestamp, now);
  const id = deliveryIdSchema.safeParse(headers.id);
  if (!id.success) throw new VigilError('VALIDATION_FAILED', `${WEBHOOK_ID_HEADER} is missing or not 1 to 128 letters, digits or . _ : -`);
  try {
    new Webhook(secret).verify(
      rawBody,
      { [WEBHOOK_ID_HEADER]: id.data, [WEBHOOK_TIMESTAMP_HEADER]: headers.timestamp!, [WEBHOOK_SIGNATURE_HEADER]: headers.signature },
      { jsonParse: false }, // the service parses the body itself, with its own errors
    );
  } catch (error) {
    if (error instanceof WebhookVerificationError) throw signatureInvalid(error);
    throw error;
  }
  return id.data;
}

function signatureInvalid(cause?: unknown): VigilError {
  return new VigilError('HOOK_SIGNATURE_INVALID', `the ${WEBHOOK_SIGNATURE_HEADER} is missing or does not match the delivery's id, timestamp and body`, { cause });
}

/**
 * HOOK_TIMESTAMP_STALE unless the timestamp is within the tolerance of `now`. Checked
 * here, by the server's clock, before the library's own check (which reads Date.now()):
 * a stale delivery gets its own code, not a signature error.
 */
export function checkTimestamp(timestamp: string | undefined, now: Date): void {
  const seconds = /^\d{1,12}$/.test(timestamp ?? '') ? Number(timestamp) : Number.NaN;
  if (!Number.isFinite(seconds) || Math.abs(now.getTime() / 1000 - seconds) > TIMESTAMP_TOLERANCE_SECONDS) {
    throw new VigilError('HOOK_TIMESTAMP_STALE', `the ${WEBHOOK_TIMESTAMP_HEADER} is missing or more than ${TIMESTAMP_TOLERANCE_SECONDS / 60} minutes from the server's clock`);
  }
}
