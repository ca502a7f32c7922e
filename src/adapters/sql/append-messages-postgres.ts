/**
 * appendMessages on PostgreSQL in one statement, for the common case: none of the
 * messages is stored yet and the thread exists.
 *
 * Why: the general path (thread-repository.ts) is a transaction of six round trips
 * (BEGIN, the thread row FOR UPDATE, which ids are stored, the insert, the counters,
 * COMMIT), twice a turn: the largest part of a turn's time on PostgreSQL. Here the
 * counters' UPDATE locks the thread row and hands the insert its first seq, in one
 * statement, atomic by itself. A message already stored (a retried projection) breaks
 * the (thread_id, message_id) unique key and so the whole statement, which then changed
 * nothing: the caller takes the general path, which leaves such messages out. A thread
 * that does not exist updates no row and inserts nothing: the general path says so.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './database.js';

export interface AppendRow {
  thread_id: string;
  message_id: string;
  type: string;
  content: string;
  additional_kwargs: string;
  response_metadata: string;
  visibility: string;
  run_id: string | null;
  preview: string;
  created_at: string;
}

export interface CounterChange {
  visibleAdded: number;
  updatedAt: string;
  /** The newest real person's message among the rows (I2: only those are user activity), or null. */
  userActivityAt: string | null;
  /** The newest visible row's preview and time, or null when no row is visible. */
  lastVisible: { preview: string; at: string } | null;
}

const UNIQUE_VIOLATION = '23505';

/** The seq of the first row, or undefined when the general path must decide (a stored message, no such thread). */
export async function appendInOneStatement(db: Kysely<Database>, threadId: string, rows: readonly AppendRow[], change: CounterChange): Promise<number | undefined> {
  const count = rows.length;
  const column = <K extends keyof AppendRow>(key: K) => rows.map((row) => row[key]);
  try {
    const result = await sql<{ seq: number }>`
      WITH counters AS (
        UPDATE threads SET
          message_count = message_count + ${count}::integer,
          visible_count = visible_count + ${change.visibleAdded}::integer,
          updated_at = ${change.updatedAt}::timestamptz,
          last_user_activity_at = CASE
            WHEN ${change.userActivityAt}::timestamptz IS NULL THEN last_user_activity_at
            ELSE greatest(last_user_activity_at, ${change.userActivityAt}::timestamptz) END,
          last_visible_preview = coalesce(${change.lastVisible?.preview ?? null}::text, last_visible_preview),
          last_visible_at = coalesce(${change.lastVisible?.at ?? null}::timestamptz, last_visible_at)
        WHERE id = ${threadId}
        RETURNING message_count - ${count}::integer AS base
      )
      INSERT INTO thread_messages (thread_id, seq, message_id, type, content, additional_kwargs, response_metadata, visibility, run_id, preview, created_at)
      SELECT ${threadId}, counters.base + m.ord::integer - 1, m.message_id, m.type, m.content::json, m.additional_kwargs::json, m.response_metadata::json,
             m.visibility, m.run_id, m.preview, m.created_at::timestamptz
        FROM counters,
             unnest(${column('message_id')}::text[], ${column('type')}::text[], ${column('content')}::text[], ${column('additional_kwargs')}::text[],
                    ${column('response_metadata')}::text[], ${column('visibility')}::text[], ${column('run_id')}::text[], ${column('preview')}::text[],
                    ${column('created_at')}::text[])
               WITH ORDINALITY AS m(message_id, type, content, additional_kwargs, response_metadata, visibility, run_id, preview, created_at, ord)
      RETURNING seq`.execute(db);
    if (result.rows.length !== count) return undefined;
    return Math.min(...result.rows.map((row) => row.seq));
  } catch (error) {
    if ((error as { code?: string }).code === UNIQUE_VIOLATION) return undefined;
    throw error;
  }
}
