/**
 * vigil's memory search folds text with normalize() (migration 24), which PostgreSQL runs
 * only in a UTF8 database. In any other (SQL_ASCII, LATIN1 …) the server started, and every
 * memory written then failed with a 500 ("Unicode normalization can only be performed if
 * server encoding is UTF8"); with memories already there, migration 24 failed with that
 * message. Storage now refuses such a database at once, saying what it needs.
 */
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStorage } from '../../src/adapters/storage-factory.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { describePostgres, postgresTarget } from '../helpers/postgres.js';

const postgres = await postgresTarget();
const logger = pino({ level: 'silent' });

describePostgres('a PostgreSQL database that is not UTF8', postgres, () => {
  const database = `vigil_sqlascii_${process.pid}_${Date.now().toString(36)}`;
  let admin: pg.Client;
  let url: string;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`);
    const target = new URL(postgres.url);
    target.pathname = `/${database}`;
    url = target.toString();
  }, 60_000);

  afterAll(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  });

  it('is refused when storage opens (CONFIG_INVALID, naming the encoding), before anything is created — not a server whose every memory write fails', async () => {
    let opened: SqlStorage | undefined;
    try {
      opened = await openStorage({ databaseUrl: url, dataDir: 'unused', logger });
      // What it used to come to: the first memory written fails.
      await opened.memories.add({ userId: 'alice', agentId: 'default' }, { id: 'm-1', content: 'likes café au lait', origin: { by: 'api' } }, new Date().toISOString());
      expect.fail('a SQL_ASCII database was opened and took a memory');
    } catch (error) {
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('SQL_ASCII') });
      expect((error as Error).message).toContain('UTF8');
    } finally {
      await opened?.close();
    }
    // Refused before migrating: nothing of vigil's is in the database.
    const probe = new pg.Client({ connectionString: url });
    await probe.connect();
    try {
      expect((await probe.query("SELECT 1 FROM pg_tables WHERE tablename = 'memories'")).rowCount).toBe(0);
    } finally {
      await probe.end();
    }
  });
});
