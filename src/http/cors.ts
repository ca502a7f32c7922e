import type { FastifyInstance } from 'fastify';

/**
 * CORS for browser clients (Agent Chat UI, a `useStream` app) on other origins: off
 * unless VIGIL_CORS_ORIGINS names origins. A preflight (OPTIONS with
 * Access-Control-Request-Method) from an allowed origin answers 204 with what it may send.
 */
export function registerCors(app: FastifyInstance, origins: readonly string[]): void {
  app.addHook('onRequest', (request, reply, done) => {
    const headers = corsHeaders(origins, request.headers.origin);
    if (Object.keys(headers).length === 0) return done();
    void reply.headers(headers);
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
      void reply
        .header('access-control-allow-methods', 'GET, POST, PUT, PATCH, DELETE, OPTIONS')
        .header('access-control-allow-headers', request.headers['access-control-request-headers'] ?? 'authorization, content-type, x-api-key, last-event-id')
        .header('access-control-max-age', '600')
        .status(204)
        .send();
      return;
    }
    done();
  });
}

/**
 * The CORS headers an answer to `origin` carries: none unless the origin is allowed. Also
 * for answers given before any hook runs (the router's refusals, server.ts).
 */
export function corsHeaders(origins: readonly string[], origin: string | undefined): Record<string, string> {
  const any = origins.includes('*');
  if (origin === undefined || !(any || origins.includes(origin))) return {};
  return {
    'access-control-allow-origin': any ? '*' : origin,
    ...(any ? {} : { vary: 'Origin' }),
    'access-control-expose-headers': 'content-location, location, x-request-id, x-pagination-next',
  };
}
