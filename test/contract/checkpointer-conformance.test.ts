/**
 * LangChain's checkpointer conformance suite against the checkpointers exactly as
 * openStorage builds them (SQLite file in a temp dir; PostgreSQL in a fresh schema),
 * plus its opt-in delta-channel-history cases, which LangGraph runs on its own savers.
 *
 * One storage per backend for the whole suite: createCheckpointer empties the checkpoint
 * tables and hands back the same saver, which the suite allows ("shared storage, cleared
 * when a checkpointer is created") and which keeps ~1,400 cases to seconds on two cores.
 *
 * The savers carry vigil's checkpoint cache (and, on PostgreSQL, its plain-row reads);
 * emptying the tables behind the cache's back is part of the test: every cached read
 * must notice. Each suite ends by checking the cache actually answered reads.
 */
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import type { CheckpointSaverTestInitializer } from '@langchain/langgraph-checkpoint-validation';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, test } from 'vitest';
import { openStorage } from '../../src/adapters/storage-factory.js';
import type { CheckpointCacheStats } from '../../src/adapters/sql/checkpoint-cache.js';
import type { NodeSqliteSaver } from '../../src/adapters/sql/checkpoint-sqlite-base.js';
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

/** Reads the cache answered, so a suite that passed without ever using it does not count. */
function cacheHits(storage: Storage | undefined): number {
  const saver = storage?.checkpointer as { cacheStats?: () => CheckpointCacheStats } | undefined;
  return saver?.cacheStats?.().hits ?? 0;
}

describe('checkpointer conformance: SQLite', () => {
  let dataDir: string | undefined;
  let storage: Storage | undefined;

  conformance({
    // The suite skips cases by package name; vigil's SQLite saver is a port of SqliteSaver
    // (it stores no channel deltas).
    checkpointerName: '@langchain/langgraph-checkpoint-sqlite',
    beforeAllTimeout: 60_000,
    async beforeAll() {
      dataDir = await makeTempDir('vigil-checkpoints-');
      storage = await openStorage({ dataDir, logger });
      expect(storage.kind).toBe('sqlite');
    },
    async afterAll() {
      const hits = cacheHits(storage);
      await storage?.close();
      await removeTempDir(dataDir);
      expect(hits).toBeGreaterThan(0);
    },
    createCheckpointer() {
      const saver = storage!.checkpointer as NodeSqliteSaver;
      saver.db.exec('DELETE FROM checkpoints; DELETE FROM writes; DELETE FROM checkpoint_messages;');
      return saver;
    },
  });
});

describePostgres('checkpointer conformance: PostgreSQL', postgres, () => {
  const schema = randomSchemaName('vigil_checkpoints');
  let storage: Storage | undefined;
  let cleaner: pg.Client | undefined;

  conformance({
    checkpointerName: '@langchain/langgraph-checkpoint-postgres',
    beforeAllTimeout: 60_000,
    async beforeAll() {
      storage = await openStorage({ databaseUrl: TEST_DATABASE_URL, dataDir: 'unused', logger, postgresSchema: schema });
      expect(storage.kind).toBe('postgres');
      cleaner = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await cleaner.connect();
    },
    async afterAll() {
      const hits = cacheHits(storage);
      await storage?.close();
      await cleaner?.end();
      await dropSchema(schema);
      expect(hits).toBeGreaterThan(0);
    },
    async createCheckpointer() {
      await cleaner!.query(`TRUNCATE "${schema}".checkpoints, "${schema}".checkpoint_blobs, "${schema}".checkpoint_writes, "${schema}".checkpoint_messages`);
      return storage!.checkpointer;
    },
  });
});
