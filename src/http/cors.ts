import type { FastifyInstance } from 'fastify';

/**
 * CORS for browser clients (Agent Chat UI, a `useStream` app) on other origins: off
 * unless VIGIL_CORS_ORIGINS names origins. A preflight (OPTIONS with
 * Access-Control-Request-Method) from an allowed origin answers 204 with what it may send.
 */
export function registerCors(app: FastifyInstance, origins: readonly string[]): void {
  const any = origins.includes('*');
  const allowed = (origin: string | undefined): origin is string => origin !== undefined && (any || origins.includes(origin));
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    if (!allowed(origin)) return done();
    void reply.header('access-control-allow-origin', any ? '*' : origin);
    if (!any) void reply.header('vary', 'Origin');
    void reply.header('access-control-expose-headers', 'content-location, location, x-request-id, x-pagination-next');
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
