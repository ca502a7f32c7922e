import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { VigilError } from '../../domain/errors.js';

/**
 * Webhook signatures, in the style of Stripe's and Slack's:
 *
 *   X-Vigil-Timestamp: <unix seconds>
 *   X-Vigil-Delivery:  <the sender's unique id for this delivery>
 *   X-Vigil-Signature: sha256=<hex of HMAC-SHA256(secret, "<timestamp>.<raw body>")>
 *
 * The signature covers the timestamp, so a captured request cannot be replayed later
 * with a fresh one; within the ±5 minute window the delivery id refuses a replay (it is
 * recorded once per hook). The raw body bytes are signed as received: no re-serialised
 * JSON, whose spacing or key order could differ from the sender's.
 */

export const SIGNATURE_HEADER = 'x-vigil-signature';
export const TIMESTAMP_HEADER = 'x-vigil-timestamp';
export const DELIVERY_HEADER = 'x-vigil-delivery';
/** How far a delivery's timestamp may be from the server's clock, either way. */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;

export const deliveryIdSchema = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1 to 128 letters, digits or . _ : -');

/** A new hook secret: 256 random bits, shown once. */
export function newHookSecret(): string {
  return `vhs_${randomBytes(32).toString('base64url')}`;
}

export function signDelivery(secret: string, timestamp: string, rawBody: Buffer | string): string {
  return `sha256=${digest(secret, timestamp, rawBody).toString('hex')}`;
}

function digest(secret: string, timestamp: string, rawBody: Buffer | string): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest();
}

export interface DeliveryHeaders {
  signature: string | undefined;
  timestamp: string | undefined;
  deliveryId: string | undefined;
}

/** HOOK_SIGNATURE_INVALID unless `signature` is this secret's signature of the delivery; constant time. */
export function verifySignature(secret: string, headers: DeliveryHeaders, rawBody: Buffer): void {
  const match = /^sha256=([0-9a-f]{64})$/i.exec(headers.signature ?? '');
  const timestamp = headers.timestamp ?? '';
  if (!match?.[1] || !/^\d{1,12}$/.test(timestamp)) throw new VigilError('HOOK_SIGNATURE_INVALID', 'the delivery signature is missing or does not match');
  const given = Buffer.from(match[1], 'hex');
  const expected = digest(secret, timestamp, rawBody);
  if (!timingSafeEqual(given, expected)) throw new VigilError('HOOK_SIGNATURE_INVALID', 'the delivery signature is missing or does not match');
}

/** HOOK_TIMESTAMP_STALE unless the timestamp is within the tolerance of `now`. */
export function checkTimestamp(timestamp: string | undefined, now: Date): void {
  const seconds = /^\d{1,12}$/.test(timestamp ?? '') ? Number(timestamp) : Number.NaN;
  if (!Number.isFinite(seconds) || Math.abs(now.getTime() / 1000 - seconds) > TIMESTAMP_TOLERANCE_SECONDS) {
    throw new VigilError('HOOK_TIMESTAMP_STALE', `the delivery timestamp is missing or more than ${TIMESTAMP_TOLERANCE_SECONDS / 60} minutes from the server's clock`);
  }
}
