import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { VigilError } from '../../domain/errors.js';
import { errorBody } from '../schemas.js';

/** What the Telegram webhook route needs of the channel. */
export interface TelegramWebhookReceiver {
  /** The secret Telegram echoes in X-Telegram-Bot-Api-Secret-Token (set with setWebhook). */
  secret: string;
  receive(update: unknown): Promise<void>;
}

export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token';

// Telegram's updates carry many fields and grow new ones: loose, unlike vigil's own API;
// the channel validates the fields it reads (channels/telegram/telegram-update.ts).
const updateBody = z.object({ update_id: z.number().int().nonnegative() }).loose();

/** Chat channels calling in. Telegram: the secret header is the authentication, no bearer token. */
export function channelRoutes(telegram: TelegramWebhookReceiver): FastifyPluginAsyncZod {
  const expected = digest(telegram.secret);
  return async (app) => {
    app.post(
      '/api/channels/telegram/webhook',
      {
        config: { public: true },
        // Checked before the body is even parsed: an unauthenticated caller gets 401 and nothing more.
        onRequest: async (request) => {
          const given = request.headers[TELEGRAM_SECRET_HEADER];
          // Fixed-length digests, compared in constant time.
          if (typeof given !== 'string' || !timingSafeEqual(digest(given), expected)) {
            throw new VigilError('TELEGRAM_SECRET_INVALID', 'the Telegram secret token header is missing or wrong');
          }
        },
        schema: {
          tags: ['channels'],
          description: 'Telegram Bot API updates (webhook mode), authenticated by X-Telegram-Bot-Api-Secret-Token.',
          security: [],
          body: updateBody,
          response: { 200: z.object({ ok: z.literal(true) }), 400: errorBody, 401: errorBody },
        },
      },
      async (request) => {
        await telegram.receive(request.body);
        return { ok: true as const };
      },
    );
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
