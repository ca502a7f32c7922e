import { AsyncLocalStorage } from 'node:async_hooks';
import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';

export type LogContextRunner = <T>(fields: Record<string, string>, work: () => T) => T;

export interface LoggerBundle {
  logger: Logger;
  /** Run work with extra fields (request id, …) on every log line it writes. */
  withLogContext: LogContextRunner;
}

/**
 * pino JSON logs. Request, thread and run ids travel in an AsyncLocalStorage so that log
 * lines written deep in the app layer carry the id of the request that caused them.
 */
export function createLogger(level: string, destination?: DestinationStream): LoggerBundle {
  const context = new AsyncLocalStorage<Record<string, string>>();
  const logger = pino(
    {
      level,
      base: { service: 'vigil' },
      mixin: () => context.getStore() ?? {},
      serializers: {
        err: stdSerializers.err,
        req: (request: { method?: string; url?: string; ip?: string }) => ({
          method: request.method,
          // A WebSocket may carry its bearer token as ?token=: never log it.
          url: request.url?.replace(/([?&]token=)[^&]*/g, '$1[redacted]'),
          remoteAddress: request.ip,
        }),
        res: (reply: { statusCode?: number }) => ({ statusCode: reply.statusCode }),
      },
      redact: { paths: ['*.authorization', '*.headers.authorization', '*.apiKey', '*.token'], censor: '[redacted]' },
    },
    destination,
  );
  const withLogContext: LogContextRunner = (fields, work) => context.run({ ...context.getStore(), ...fields }, work);
  return { logger, withLogContext };
}
