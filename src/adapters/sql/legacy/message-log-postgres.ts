/** The message log's statements on PostgreSQL (the saver's pool, schema-qualified). See message-log.ts. */
import type pg from 'pg';
import type { LoggedRow, MessageLogStore, NewLogRow } from './message-log.js';

const UNIQUE_VIOLATION = '23505';
/** Another process appending to the same thread at the same moment takes a number first: try again. */
const APPEND_ATTEMPTS = 5;

/** Created with the saver's own tables, under the migration lock (the log is the saver's, like `checkpoints`). */
export function postgresMessageLogDdl(table: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  seq INTEGER NOT NULL,
  message_id TEXT NOT NULL,
  type TEXT NOT NULL,
  value BYTEA NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, seq)
)`,
    `CREATE INDEX IF NOT EXISTS checkpoint_messages_by_id ON ${table} (thread_id, checkpoint_ns, message_id, seq)`,
  ];
}

interface Row {
  seq: number;
  message_id: string;
  type: string;
  value: Buffer;
}

export class PostgresMessageLogStore implements MessageLogStore {
  readonly #pool: pg.Pool;
  readonly #table: string;

  /** `table`: the quoted, schema-qualified name. */
  constructor(pool: pg.Pool, table: string) {
    this.#pool = pool;
    this.#table = table;
  }

  async read(threadId: string, checkpointNs: string, ranges: readonly number[]): Promise<LoggedRow[]> {
    const lows = ranges.filter((_, index) => index % 2 === 0);
    const highs = ranges.filter((_, index) => index % 2 === 1);
    const result = await this.#pool.query<Row>(
      `SELECT m.seq, m.message_id, m.type, m.value FROM unnest($3::int[], $4::int[]) AS r(lo, hi)
       JOIN ${this.#table} m ON m.thread_id = $1 AND m.checkpoint_ns = $2 AND m.seq BETWEEN r.lo AND r.hi`,
      [threadId, checkpointNs, lows, highs],
    );
    return result.rows.map(fromRow);
  }

  async latest(threadId: string, checkpointNs: string, messageIds: readonly string[]): Promise<LoggedRow[]> {
    const result = await this.#pool.query<Row>(
      `SELECT DISTINCT ON (message_id) seq, message_id, type, value FROM ${this.#table}
       WHERE thread_id = $1 AND checkpoint_ns = $2 AND message_id = ANY($3::text[])
       ORDER BY message_id, seq DESC`,
      [threadId, checkpointNs, messageIds],
    );
    return result.rows.map(fromRow);
  }

  async append(threadId: string, checkpointNs: string, rows: readonly NewLogRow[]): Promise<number[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.#pool.query<{ seq: number }>(
          `INSERT INTO ${this.#table} (thread_id, checkpoint_ns, seq, message_id, type, value)
           SELECT $1, $2, last.seq + r.ord, r.id, r.type, r.value
           FROM (SELECT coalesce(max(seq), 0) AS seq FROM ${this.#table} WHERE thread_id = $1 AND checkpoint_ns = $2) last,
                unnest($3::text[], $4::text[], $5::bytea[]) WITH ORDINALITY AS r(id, type, value, ord)
           RETURNING seq`,
          [threadId, checkpointNs, rows.map((row) => row.messageId), rows.map((row) => row.type), rows.map((row) => Buffer.from(row.value))],
        );
        // Numbered last + ordinality: ascending order is input order.
        return result.rows.map((row) => row.seq).sort((a, b) => a - b);
      } catch (error) {
        if ((error as { code?: string }).code !== UNIQUE_VIOLATION || attempt >= APPEND_ATTEMPTS) throw error;
      }
    }
  }

  /**
   * latest and append in one round trip: each row's seq, the stored one where the newest
   * version of its message is these very bytes, else a new one. Rows must have distinct
   * message ids (the caller's general path handles the rest).
   */
  async appendMissing(threadId: string, checkpointNs: string, rows: readonly NewLogRow[]): Promise<number[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.#pool.query<{ ord: string; seq: number }>(
          `WITH input AS (
             SELECT * FROM unnest($3::text[], $4::text[], $5::bytea[]) WITH ORDINALITY AS r(id, type, value, ord)
           ), newest AS (
             SELECT DISTINCT ON (message_id) seq, message_id, type, value FROM ${this.#table}
             WHERE thread_id = $1 AND checkpoint_ns = $2 AND message_id = ANY($3::text[])
             ORDER BY message_id, seq DESC
           ), matched AS (
             SELECT input.ord, newest.seq FROM input JOIN newest ON newest.message_id = input.id AND newest.type = input.type AND newest.value = input.value
           ), fresh AS (
             SELECT input.*, row_number() OVER (ORDER BY input.ord) AS n FROM input WHERE input.ord NOT IN (SELECT ord FROM matched)
           ), inserted AS (
             INSERT INTO ${this.#table} (thread_id, checkpoint_ns, seq, message_id, type, value)
             SELECT $1, $2, last.seq + fresh.n, fresh.id, fresh.type, fresh.value
             FROM (SELECT coalesce(max(seq), 0) AS seq FROM ${this.#table} WHERE thread_id = $1 AND checkpoint_ns = $2) last, fresh
             RETURNING seq, message_id
           )
           SELECT matched.ord, matched.seq FROM matched
           UNION ALL
           SELECT input.ord, inserted.seq FROM inserted JOIN input ON input.id = inserted.message_id`,
          [threadId, checkpointNs, rows.map((row) => row.messageId), rows.map((row) => row.type), rows.map((row) => Buffer.from(row.value))],
        );
        const seqs = new Array<number>(rows.length);
        for (const row of result.rows) seqs[Number(row.ord) - 1] = row.seq;
        return seqs;
      } catch (error) {
        if ((error as { code?: string }).code !== UNIQUE_VIOLATION || attempt >= APPEND_ATTEMPTS) throw error;
      }
    }
  }

  async messageIdAt(threadId: string, checkpointNs: string, seq: number): Promise<string | undefined> {
    const result = await this.#pool.query<{ message_id: string }>(`SELECT message_id FROM ${this.#table} WHERE thread_id = $1 AND checkpoint_ns = $2 AND seq = $3`, [
      threadId,
      checkpointNs,
      seq,
    ]);
    return result.rows[0]?.message_id;
  }
}

function fromRow(row: Row): LoggedRow {
  return { seq: row.seq, messageId: row.message_id, type: row.type, value: row.value };
}
