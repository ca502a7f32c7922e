import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openSqliteStorage, openStorage } from '../../src/adapters/storage-factory.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { storageContract } from './storage.contract.js';

const logger = pino({ level: 'silent' });

describe('SQLite storage', () => {
  let dataDir: string | undefined;

  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-storage-');
  });

  afterAll(async () => {
    await removeTempDir(dataDir);
  });

  // A file in a temp dir, as openStorage builds it without DATABASE_URL; reopening
  // opens the same file.
  storageContract('SQLite', () => openStorage({ dataDir: join(dataDir!, 'data'), logger }));
});

// SQLite only: Kysely and the checkpoint saver share one connection, so a checkpoint write
// must never join (and roll back with) one of our transactions.
describe('SQLite storage: shared connection', () => {
  it('keeps checkpoints written while a transaction rolls back', async () => {
    const storage = await openSqliteStorage({ file: ':memory:', logger });
    try {
      const thread = await storage.threads.create({ id: randomUUID(), userId: randomUUID(), agentId: 'agent', title: null }, new Date().toISOString());
      // Writes, reads, then fails at an INSERT (a thread id taken): all of it rolls back.
      const append = storage.context.transaction(async (trx) => {
        await trx.updateTable('threads').set({ title: 'renamed' }).where('id', '=', thread.id).execute();
        await trx.selectFrom('threads').selectAll().execute();
        await trx.insertInto('threads').values({ id: thread.id, user_id: 'x', agent_id: 'x', title: null, created_at: '', updated_at: '', last_user_activity_at: null, visible_count: 0, last_visible_preview: null, last_visible_at: null, message_count: 0 }).execute();
      });
      // Checkpoint writes started at every microtask offset, so some fall inside the transaction.
      const configs = Array.from({ length: 30 }, () => ({ configurable: { thread_id: randomUUID(), checkpoint_ns: '' } }));
      const puts = configs.map(async (config, ticks) => {
        for (let tick = 0; tick < ticks; tick++) await Promise.resolve();
        return storage.checkpointer.put(config, { ...emptyCheckpoint(), id: uuid6(-1) }, { source: 'loop', step: 0, parents: {} }, {});
      });
      await expect(append).rejects.toThrow();
      await Promise.all(puts);
      for (const config of configs) expect(await storage.checkpointer.getTuple(config)).toBeDefined();
      expect(await storage.threads.get(thread.userId, thread.id)).toMatchObject({ title: null });
    } finally {
      await storage.close();
    }
  });
});

describe('openStorage', () => {
  it('creates the data dir and an SQLite file in WAL mode when no database URL is set', async () => {
    const root = await makeTempDir('vigil-open-');
    try {
      const dataDir = join(root, 'nested', 'data');
      const storage = await openStorage({ dataDir, databaseUrl: '', logger });
      try {
        expect(storage.kind).toBe('sqlite');
        const db = (storage as SqlStorage).context.db;
        expect((await sql<{ file: string }>`SELECT file FROM pragma_database_list WHERE name = 'main'`.execute(db)).rows[0]?.file).toBe(join(dataDir, 'vigil.sqlite'));
        expect((await sql`PRAGMA journal_mode`.execute(db)).rows[0]).toMatchObject({ journal_mode: 'wal' });
        expect((await sql<{ timeout: number }>`PRAGMA busy_timeout`.execute(db)).rows[0]?.timeout).toBeGreaterThan(0);
      } finally {
        await storage.close();
      }
      expect(existsSync(join(dataDir, 'vigil.sqlite'))).toBe(true);
    } finally {
      await removeTempDir(root);
    }
  });

  it('refuses an unknown URL scheme and a bad schema name with CONFIG_INVALID, before connecting', async () => {
    await expect(openStorage({ databaseUrl: 'mysql://root@localhost/vigil', dataDir: 'unused', logger })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(
      openStorage({ databaseUrl: 'postgres://nobody@127.0.0.1:1/none', dataDir: 'unused', logger, postgresSchema: 'Robert"); DROP' }),
    ).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });
});
