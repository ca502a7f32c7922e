import { Webhook } from 'standardwebhooks';

/**
 * A sender's side of Standard Webhooks, with the same library a sender would use: the
 * headers of one delivery. `timestamp` is unix seconds.
 */
export function signedHeaders(secret: string, id: string, timestamp: number, rawBody: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': new Webhook(secret).sign(id, new Date(timestamp * 1000), rawBody),
  };
}
