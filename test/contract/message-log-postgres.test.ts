import pg from 'pg';
import { pino } from 'pino';
import { openPostgresStorage } from '../../src/adapters/storage-factory.js';
import { TEST_DATABASE_URL, describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { Closers } from './checkpoint-cache.suite.js';
import { heldCheckpointWritesSuite } from './held-checkpoint-writes.suite.js';
import { messageLogSuite, type LogBackend } from './message-log.suite.js';

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

async function postgresBackend(): Promise<LogBackend> {
  const schema = randomSchemaName('vigil_message_log');
  const closers = new Closers();
  closers.add(() => dropSchema(schema));
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  closers.add(() => client.end());
  const count = async (table: string, threadId: string) =>
    Number((await client.query<{ count: string }>(`SELECT count(*) AS count FROM "${schema}".${table} WHERE thread_id = $1`, [threadId])).rows[0]!.count);
  return {
    async open() {
      const storage = await openPostgresStorage({ connectionString: TEST_DATABASE_URL, schema, logger });
      closers.add(() => storage.close());
      return storage;
    },
    logRows: async (threadId) => count('checkpoint_messages', threadId),
    checkpointRows: async (threadId) => count('checkpoints', threadId),
    writeRows: async (threadId) => count('checkpoint_writes', threadId),
    emptyBlobRows: async (threadId) =>
      Number((await client.query<{ count: string }>(`SELECT count(*) AS count FROM "${schema}".checkpoint_blobs WHERE thread_id = $1 AND type = 'empty'`, [threadId])).rows[0]!.count),
    largestStoredMessages: async (threadId) =>
      Number(
        (await client.query<{ size: number }>(`SELECT max(octet_length(blob)) AS size FROM "${schema}".checkpoint_blobs WHERE thread_id = $1 AND channel = 'messages'`, [threadId]))
          .rows[0]!.size,
      ),
    messageWritesBytes: async (threadId) =>
      Number(
        (await client.query<{ size: string }>(`SELECT coalesce(sum(octet_length(blob)), 0) AS size FROM "${schema}".checkpoint_writes WHERE thread_id = $1 AND channel = 'messages'`, [threadId]))
          .rows[0]!.size,
      ),
    inputBytes: async (threadId) =>
      Number(
        (await client.query<{ size: string }>(`SELECT coalesce(sum(octet_length(blob)), 0) AS size FROM "${schema}".checkpoint_blobs WHERE thread_id = $1 AND channel = '__start__'`, [threadId]))
          .rows[0]!.size,
      ),
    summaryBytes: async (threadId) =>
      Number(
        (await client.query<{ size: string }>(`SELECT coalesce(sum(octet_length(blob)), 0) AS size FROM "${schema}".checkpoint_blobs WHERE thread_id = $1 AND channel = 'summary'`, [threadId]))
          .rows[0]!.size,
      ),
    logValues: async (threadId) =>
      (await client.query<{ message_id: string; type: string; value: Buffer }>(`SELECT message_id, type, value FROM "${schema}".checkpoint_messages WHERE thread_id = $1 ORDER BY seq`, [threadId])).rows.map((row) => ({
        messageId: row.message_id,
        type: row.type,
        value: new Uint8Array(row.value),
      })),
    rewriteLog: async (threadId, rewrite) => {
      const rows = (await client.query<{ seq: number; message_id: string; type: string; value: Buffer }>(`SELECT seq, message_id, type, value FROM "${schema}".checkpoint_messages WHERE thread_id = $1`, [threadId])).rows;
      for (const row of rows) {
        const next = rewrite({ messageId: row.message_id, type: row.type, value: new Uint8Array(row.value) });
        await client.query(`UPDATE "${schema}".checkpoint_messages SET type = $1, value = $2 WHERE thread_id = $3 AND seq = $4`, [next.type, Buffer.from(next.value), threadId, row.seq]);
      }
    },
    close: () => closers.closeAll(),
  };
}

describePostgres('message log: PostgreSQL', postgres, () => {
  messageLogSuite(postgresBackend, { channelRows: true });
});

describePostgres('held checkpoint writes: PostgreSQL', postgres, () => {
  heldCheckpointWritesSuite(postgresBackend);
});
