import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * /readyz while the database goes away and comes back, on a real PostgreSQL: a database of
 * the test's own that stops taking connections (its open ones cut), then takes them again.
 * PostgreSQL only: an embedded SQLite file does not go away from under its process.
 */
const postgres = await postgresTarget();

describePostgres('readiness when the database goes away (PostgreSQL)', postgres, () => {
  const database = `vigil_readyz_${process.pid}_${Date.now().toString(36)}`;
  let admin: pg.Client;
  let server: TestServer | undefined;
  const connections = (allowed: boolean) => admin.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS ${allowed}`);

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    const url = new URL(postgres.url);
    url.pathname = `/${database}`;
    server = await startTestServer({ kind: 'postgres', url: url.toString() });
  }, 60_000);

  afterAll(async () => {
    await connections(true).catch(() => undefined);
    await server?.destroy().catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  });

  it('answers 503 DATABASE_UNAVAILABLE (not 500 INTERNAL) while the database refuses, and ready again once it is back', async () => {
    expect((await server!.request('GET', '/readyz', { token: '' })).status).toBe(200);
    await connections(false);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
    const down = await server!.request('GET', '/readyz', { token: '' });
    expect(down.status).toBe(503);
    expect(down.body).toEqual({ error: expect.objectContaining({ code: 'DATABASE_UNAVAILABLE' }) });
    await connections(true);
    await waitFor(async () => (await server!.request('GET', '/readyz', { token: '' })).status === 200, 20_000, '/readyz to be ready again');
    expect(server!.undocumented).toEqual([]);
  }, 60_000);
});
