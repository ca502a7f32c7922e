import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { VigilError, isVigilError, type ErrorCode } from '../domain/errors.js';

/** Fastify's own errors, mapped to our stable codes. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'VALIDATION_FAILED',
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'VALIDATION_FAILED',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_VALIDATION: 'VALIDATION_FAILED',
  // The router's refusals (server.ts, frameworkErrors): a path no route can take.
  FST_ERR_BAD_URL: 'VALIDATION_FAILED',
  FST_ERR_MAX_PARAM_LENGTH: 'VALIDATION_FAILED',
};

export function toVigilError(error: unknown): VigilError {
  if (isVigilError(error)) return error;
  const fastifyError = error as FastifyError;
  if (hasZodFastifySchemaValidationErrors(fastifyError)) {
    const details = fastifyError.validation.map((issue) => ({ path: issue.instancePath || '/', message: issue.message, ...(issue.params ? { params: issue.params } : {}) }));
    const context = fastifyError.validationContext ? `${fastifyError.validationContext}: ` : '';
    return new VigilError('VALIDATION_FAILED', `${context}${details.map((detail) => `${detail.path} ${detail.message}`).join('; ')}`, { details, cause: error });
  }
  if (error instanceof SyntaxError) return new VigilError('MALFORMED_JSON', 'the request body is not valid JSON', { cause: error });
  const mapped = typeof fastifyError?.code === 'string' ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (mapped) return new VigilError(mapped, fastifyError.message, { cause: error });
  if (typeof fastifyError?.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new VigilError('VALIDATION_FAILED', fastifyError.message, { cause: error });
  }
  return new VigilError('INTERNAL', 'internal server error', { cause: error });
}

export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const vigilError = toVigilError(error);
  if (vigilError.status >= 500) request.log.error({ err: error, code: vigilError.code }, 'request failed');
  else request.log.info({ code: vigilError.code, message: vigilError.message }, 'request refused');
  void reply.status(vigilError.status).send(errorPayload(vigilError));
}

export function errorPayload(error: VigilError): { error: { code: string; message: string; details?: unknown } } {
  return { error: { code: error.code, message: error.message, ...(error.details !== undefined ? { details: error.details } : {}) } };
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply): void {
  void reply.status(404).send(errorPayload(new VigilError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`)));
}
