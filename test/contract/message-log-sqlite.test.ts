import { join } from 'node:path';
import { pino } from 'pino';
import { describe } from 'vitest';
import { unpackCheckpointDocument } from '../../src/adapters/sql/checkpoint-document-codec.js';
import { openNodeSqlite } from '../../src/adapters/sql/node-sqlite.js';
import { openSqliteStorage } from '../../src/adapters/storage-factory.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { Closers } from './checkpoint-cache.suite.js';
import { heldCheckpointWritesSuite } from './held-checkpoint-writes.suite.js';
import { messageLogSuite, type LogBackend } from './message-log.suite.js';

const logger = pino({ level: 'silent' });

async function sqliteBackend(): Promise<LogBackend> {
  const dataDir = await makeTempDir('vigil-message-log-');
  const file = join(dataDir, 'vigil.sqlite');
  const closers = new Closers();
  closers.add(() => removeTempDir(dataDir));
  const query = <T>(sql: string, ...params: string[]): T => {
    const database = openNodeSqlite(file, { readOnly: true });
    // Checkpoint documents are stored packed (checkpoint-document-codec.ts): SQL reads them through this.
    database.function('checkpoint_json', (stored) => Buffer.from(unpackCheckpointDocument(stored as Uint8Array)).toString());
    try {
      return database.prepare(sql).get(...params) as T;
    } finally {
      database.close();
    }
  };
  return {
    async open() {
      const storage = await openSqliteStorage({ file, logger });
      closers.add(() => storage.close());
      return storage;
    },
    logRows: async (threadId) => query<{ count: number }>('SELECT count(*) AS count FROM checkpoint_messages WHERE thread_id = ?', threadId).count,
    checkpointRows: async (threadId) => query<{ count: number }>('SELECT count(*) AS count FROM checkpoints WHERE thread_id = ?', threadId).count,
    writeRows: async (threadId) => query<{ count: number }>('SELECT count(*) AS count FROM writes WHERE thread_id = ?', threadId).count,
    largestStoredMessages: async (threadId) =>
      query<{ size: number }>(
        "SELECT max(length(json_extract(checkpoint_json(checkpoint), '$.channel_values.messages'))) AS size FROM checkpoints WHERE thread_id = ?",
        threadId,
      ).size,
    messageWritesBytes: async (threadId) =>
      query<{ size: number }>("SELECT coalesce(sum(length(value)), 0) AS size FROM writes WHERE thread_id = ? AND channel = 'messages'", threadId).size,
    inputBytes: async (threadId) =>
      query<{ size: number }>("SELECT coalesce(sum(length(json_extract(checkpoint_json(checkpoint), '$.channel_values.__start__'))), 0) AS size FROM checkpoints WHERE thread_id = ?", threadId).size +
      query<{ size: number }>('SELECT coalesce(sum(length(value)), 0) AS size FROM checkpoint_values WHERE thread_id = ?', threadId).size,
    summaryBytes: async (threadId) =>
      query<{ size: number }>("SELECT coalesce(sum(length(json_extract(checkpoint_json(checkpoint), '$.channel_values.summary'))), 0) AS size FROM checkpoints WHERE thread_id = ?", threadId).size +
      query<{ size: number }>('SELECT coalesce(sum(length(value)), 0) AS size FROM checkpoint_values WHERE thread_id = ?', threadId).size,
    logValues: async (threadId) => {
      const database = openNodeSqlite(file, { readOnly: true });
      try {
        const rows = database.prepare('SELECT message_id, type, value FROM checkpoint_messages WHERE thread_id = ? ORDER BY seq').all(threadId) as Array<{ message_id: string; type: string; value: Uint8Array }>;
        return rows.map((row) => ({ messageId: row.message_id, type: row.type, value: row.value }));
      } finally {
        database.close();
      }
    },
    rewriteLog: async (threadId, rewrite) => {
      const database = openNodeSqlite(file);
      try {
        const rows = database.prepare('SELECT seq, message_id, type, value FROM checkpoint_messages WHERE thread_id = ?').all(threadId) as Array<{ seq: number; message_id: string; type: string; value: Uint8Array }>;
        const update = database.prepare('UPDATE checkpoint_messages SET type = ?, value = ? WHERE thread_id = ? AND seq = ?');
        for (const row of rows) {
          const next = rewrite({ messageId: row.message_id, type: row.type, value: row.value });
          update.run(next.type, next.value, threadId, row.seq);
        }
      } finally {
        database.close();
      }
    },
    close: () => closers.closeAll(),
  };
}

describe('message log: SQLite', () => {
  messageLogSuite(sqliteBackend, { channelRows: false });
});

describe('held checkpoint writes: SQLite', () => {
  heldCheckpointWritesSuite(sqliteBackend);
});
