import { z } from 'zod';
import { errorBody } from './schemas.js';
import { OPERATIONS, documentedStatuses, type RouteShape } from './openapi-operations.js';

type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  400: 'Bad input (VALIDATION_FAILED, MALFORMED_JSON, …)',
  401: 'No or unknown bearer token (UNAUTHORIZED), or a bad signature',
  403: 'Forbidden',
  404: 'Not found, or not yours (I12)',
  409: 'Conflict with the current state',
  413: 'Body larger than VIGIL_BODY_LIMIT (BODY_TOO_LARGE)',
  415: 'Body is not JSON (UNSUPPORTED_MEDIA_TYPE)',
  422: 'A protocol option vigil cannot honour (UNSUPPORTED_OPTION)',
  429: 'Too many requests',
  500: 'Internal error (INTERNAL)',
};

/** fastify-swagger's placeholder for a route that declared no responses. */
function isPlaceholder(response: Json | undefined): boolean {
  return response?.description === 'Default Response' && response.content === undefined;
}

/** A route's shape, read from its operation in the document. */
export function shapeOfOperation(key: string, operation: Json): RouteShape {
  const parameters: Json[] = operation.parameters ?? [];
  const declared = Object.entries<Json>(operation.responses ?? {})
    .filter(([, response]) => !isPlaceholder(response))
    .map(([status]) => Number(status));
  return {
    key,
    declared,
    hasBody: operation.requestBody !== undefined,
    hasParams: parameters.some((parameter) => parameter.in === 'path'),
    hasQuery: parameters.some((parameter) => parameter.in === 'query'),
  };
}

/**
 * Complete the generated document: operation ids and summaries from OPERATIONS, every
 * status a route can answer with the error schema, server-sent events where a route
 * streams, no security on public routes, servers and licence. Runs once, when the
 * document is first built.
 */
export function completeOpenApiDocument(document: Json): Json {
  document.servers = [{ url: '/', description: 'this vigil server' }];
  document.info = { ...document.info, license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' } };
  document.components ??= {};
  document.components.schemas = { ...document.components.schemas, Error: z.toJSONSchema(errorBody, { target: 'openapi-3.0' }) };
  const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
  for (const [path, item] of Object.entries<Json>(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation: Json | undefined = item[method];
      if (!operation) continue;
      const key = `${method.toUpperCase()} ${path}`;
      const doc = OPERATIONS[key];
      if (doc) {
        operation.operationId = doc.id;
        operation.summary = doc.summary;
        if (doc.public) operation.security = [];
      }
      operation.tags ??= [path.split('/')[path.startsWith('/api/') ? 2 : 1] ?? 'other'];
      const statuses = documentedStatuses(shapeOfOperation(key, operation));
      const responses: Json = operation.responses ?? {};
      for (const [status, response] of Object.entries<Json>(responses)) if (isPlaceholder(response) && !statuses.includes(Number(status))) delete responses[status];
      for (const status of statuses) {
        const existing = responses[String(status)];
        if (existing && !isPlaceholder(existing)) {
          if (status >= 400 && existing.content === undefined) existing.content = errorContent;
          continue;
        }
        responses[String(status)] = status >= 400 ? { description: STATUS_TEXT[status] ?? 'Error', content: errorContent } : { description: STATUS_TEXT[status] ?? 'OK' };
      }
      for (const [status, response] of Object.entries<Json>(responses)) response.description ??= STATUS_TEXT[Number(status)] ?? 'Response';
      if (doc?.sse && responses['200']) {
        responses['200'].content = {
          ...responses['200'].content,
          'text/event-stream': {
            schema: {
              type: 'string',
              description: 'With Accept: text/event-stream: server-sent events, one per run event (`event: <type>`, `data: <JSON>`), ending after `run.end`; see the README for the event union.',
            },
          },
        };
      }
      operation.responses = responses;
    }
  }
  return document;
}
