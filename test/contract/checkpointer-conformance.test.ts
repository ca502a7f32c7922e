/**
 * LangChain's checkpointer conformance suite against the checkpointers exactly as
 * openStorage builds them (SQLite file in a temp dir; PostgreSQL in a fresh schema),
 * plus its opt-in delta-channel-history cases, which LangGraph runs on its own savers.
 *
 * One storage per backend for the whole suite: createCheckpointer empties the checkpoint
 * tables and hands back the same saver, which the suite allows ("shared storage, cleared
 * when a checkpointer is created") and which keeps ~1,400 cases to seconds on two cores.
 *
 * The saver keeps what it wrote and read of each thread key in memory; emptying the tables
 * behind its back is part of the test: a key deleted under it is refused by the database
 * and asked again, and a new key (keys are never reused) shares nothing with the old one.
 */
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import type { CheckpointSaverTestInitializer } from '@langchain/langgraph-checkpoint-validation';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, test } from 'vitest';
import { openStorage } from '../../src/adapters/storage-factory.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import type { Storage } from '../../src/app/ports.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName, TEST_DATABASE_URL } from '../helpers/postgres.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

// The suite calls describe/it/expect… as globals (vitest's `globals: true`); this project
// imports them explicitly, so lend them to it.
Object.assign(globalThis, { describe, it, test, expect, beforeAll, afterAll, beforeEach, afterEach });

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

function conformance(initializer: CheckpointSaverTestInitializer<BaseCheckpointSaver>): void {
  validate(initializer);
  deltaChannelHistoryTests(initializer);
}

describe('checkpointer conformance: SQLite', () => {
  let dataDir: string | undefined;
  let storage: Storage | undefined;

  conformance({
    // The suite skips cases by package name; like SqliteSaver, vigil's saver stores no channel deltas.
    checkpointerName: '@langchain/langgraph-checkpoint-sqlite',
    beforeAllTimeout: 60_000,
    async beforeAll() {
      dataDir = await makeTempDir('vigil-checkpoints-');
      storage = await openStorage({ dataDir, logger });
      expect(storage.kind).toBe('sqlite');
    },
    async afterAll() {
      await storage?.close();
      await removeTempDir(dataDir);
    },
    async createCheckpointer() {
      await sql`DELETE FROM thread_keys`.execute((storage as SqlStorage).context.db);
      return storage!.checkpointer;
    },
  });
});

describePostgres('checkpointer conformance: PostgreSQL', postgres, () => {
  const schema = randomSchemaName('vigil_checkpoints');
  let storage: Storage | undefined;
  let cleaner: pg.Client | undefined;

  conformance({
    // The same saver as on SQLite: it stores no channel deltas either.
    checkpointerName: '@langchain/langgraph-checkpoint-sqlite',
    beforeAllTimeout: 60_000,
    async beforeAll() {
      storage = await openStorage({ databaseUrl: TEST_DATABASE_URL, dataDir: 'unused', logger, postgresSchema: schema });
      expect(storage.kind).toBe('postgres');
      cleaner = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await cleaner.connect();
    },
    async afterAll() {
      await storage?.close();
      await cleaner?.end();
      await dropSchema(schema);
    },
    async createCheckpointer() {
      // Not RESTART IDENTITY: keys are never reused.
      await cleaner!.query(`TRUNCATE "${schema}".thread_keys CASCADE`);
      return storage!.checkpointer;
    },
  });
});
