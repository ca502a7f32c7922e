import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openNodeSqlite } from '../../src/adapters/sql/node-sqlite.js';
import { classifyModelFailure } from '../../src/app/runs/model-failure.js';
import { describePostgres, postgresTarget } from '../helpers/postgres.js';

const postgres = await postgresTarget();

/**
 * A database error inside a run (storing a checkpoint or the projection) is not a model
 * failure: taken for a cut stream it was retried, calling the model again for the same
 * refusal. Real errors from each driver, classified as a run's retry loop sees them.
 */
async function caught(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected the statement to fail');
}

describe('database errors in a run (SQLite)', () => {
  it('a refusal is INTERNAL and not retried, even after the reply streamed', async () => {
    const database = openNodeSqlite(':memory:');
    try {
      const error = await caught(() => database.prepare('INSERT INTO missing_table VALUES (1)').run());
      expect(classifyModelFailure(error, { streamed: true })).toMatchObject({ code: 'INTERNAL', retryable: false });
      // A model's own failure after streaming is still a cut stream, retried.
      expect(classifyModelFailure(new Error('socket hang up'), { streamed: true })).toMatchObject({ code: 'MODEL_STREAM_CUT', retryable: true });
    } finally {
      database.close();
    }
  });
});

describePostgres('database errors in a run (PostgreSQL)', postgres, () => {
  it('a refusal (U+0000 in text) is INTERNAL and not retried; a passing condition (serialization failure) is retried', async () => {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      const refused = await caught(() => client.query('SELECT $1::text', ['a\u0000b']));
      expect(classifyModelFailure(refused, { streamed: true })).toMatchObject({ code: 'INTERNAL', retryable: false });
      const passing = await caught(() => client.query(`DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$`));
      expect(classifyModelFailure(passing, { streamed: true })).toMatchObject({ code: 'INTERNAL', retryable: true });
      // Wrapped, as a graph may pass it on.
      expect(classifyModelFailure(new Error('checkpoint failed', { cause: refused }), { streamed: false })).toMatchObject({ code: 'INTERNAL', retryable: false });
    } finally {
      await client.end();
    }
  });
});
