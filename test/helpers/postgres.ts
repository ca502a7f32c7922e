/**
 * PostgreSQL for tests. Suites that need it use top-level await:
 *
 *   const postgres = await postgresTarget();
 *   describePostgres('storage on PostgreSQL', postgres, () => { … });
 *
 * When PostgreSQL does not answer, the suite is skipped with a message locally, and
 * fails in CI (CI set to anything but '' or 'false'), where PostgreSQL is required.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, it } from 'vitest';

export const TEST_DATABASE_URL = process.env.VIGIL_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface PostgresTarget {
  url: string;
  available: boolean;
  /** Why it is not available. */
  problem?: string;
}

/** Connects once and runs `select 1`. */
export async function postgresTarget(url: string = TEST_DATABASE_URL): Promise<PostgresTarget> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('select 1');
    return { url, available: true };
  } catch (error) {
    return { url, available: false, problem: error instanceof Error ? error.message || error.name : String(error) };
  } finally {
    await client.end().catch(() => undefined);
  }
}

export function isCi(): boolean {
  const value = process.env.CI;
  return value !== undefined && value !== '' && value !== 'false';
}

export function describePostgres(name: string, target: PostgresTarget, suite: () => void): void {
  if (target.available) {
    describe(name, suite);
    return;
  }
  const where = redactUrl(target.url);
  if (isCi()) {
    describe(name, () => {
      it('needs PostgreSQL, which is required in CI', () => {
        throw new Error(
          `PostgreSQL at ${where} did not answer (${target.problem ?? 'unknown error'}). ` +
            'PostgreSQL suites are required in CI: start PostgreSQL or point VIGIL_TEST_DATABASE_URL at one.',
        );
      });
    });
    return;
  }
  console.warn(
    `[vigil tests] PostgreSQL suite "${name}" skipped: ${where} did not answer (${target.problem ?? 'unknown error'}). ` +
      'Start PostgreSQL there, or set VIGIL_TEST_DATABASE_URL=postgres://user@host:port/db, to run it.',
  );
  describe.skip(name, suite);
}

/** A fresh schema name per suite, so suites never see each other's rows. */
export function randomSchemaName(prefix = 'vigil_test'): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

export async function dropSchema(schema: string, url: string = TEST_DATABASE_URL): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`refusing to drop odd schema name ${schema}`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    // The job queue's (pg-boss) schema beside it, when a server ran there (pgBossSchemaFor).
    await client.query(`DROP SCHEMA IF EXISTS "${schema}_pgboss" CASCADE`);
  } finally {
    await client.end();
  }
}

function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable VIGIL_TEST_DATABASE_URL)';
  }
}
