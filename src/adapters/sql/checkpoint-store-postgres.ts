/**
 * The thread store's statements on PostgreSQL (the saver's pool, whose connections have the
 * storage's schema first on their search_path). See checkpoint-store.ts.
 *
 * Each call is one statement, so one round trip: a read returns the key, the key's highest
 * row number, the checkpoint and its pending writes together; a commit writes rows, marks,
 * values, the checkpoint and the thread's counters together (data-modifying CTEs, atomic as
 * one statement).
 */
import type pg from 'pg';
import type { CheckpointStore, CommitRequest, CommitResult, ListQuery, StoredCheckpoint, StoredMessageRow, StoredWrite, ThreadRead } from './checkpoint-store.js';
import { StoreConflict } from './checkpoint-store.js';
import { messageIdHash } from './message-id-hash.js';

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
/** Checkpoint ids are stored as uuid (migration 25): the lowercase form, as LangGraph makes them and PostgreSQL gives them back. */
const CHECKPOINT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A checkpoint id this store can hold, or a clear error (never PostgreSQL's "invalid input syntax for type uuid"). */
function storableCheckpointId(id: string): string {
  if (!CHECKPOINT_ID.test(id)) throw new Error(`checkpoint id "${id}" is not a lowercase UUID: vigil's PostgreSQL store keeps checkpoint ids as uuid (LangGraph makes them so)`);
  return id;
}

interface JsonWrite {
  task_id: string;
  idx: number;
  channel: string;
  type: string | null;
  value: string | null;
  task_path: string;
}

interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  key: number;
  checkpoint_id: string | null;
  parent_id: string | null;
  last_seq: number | null;
  body: Buffer | null;
  writes: JsonWrite[] | null;
}

const WRITES = `(SELECT json_agg(json_build_object('task_id', w.task_id, 'idx', w.idx, 'channel', w.channel, 'type', w.type,
                   'value', encode(w.value, 'base64'), 'task_path', w.task_path) ORDER BY w.task_path, w.task_id, w.idx)
                 FROM thread_checkpoint_writes w WHERE w.thread_key = k.key AND w.checkpoint_id = c.checkpoint_id) AS writes`;

function readSql(byId: boolean): string {
  return `SELECT k.key, k.thread_id, k.checkpoint_ns,
      (SELECT coalesce(max(seq), 0) FROM thread_messages WHERE thread_key = k.key) AS max_seq,
      c.checkpoint_id, c.parent_id, c.last_seq, c.body, ${WRITES}
    FROM thread_keys k
    LEFT JOIN LATERAL (
      SELECT checkpoint_id, parent_id, last_seq, body FROM thread_checkpoints
      WHERE thread_key = k.key ${byId ? 'AND checkpoint_id = $3::uuid' : ''} ORDER BY checkpoint_id DESC LIMIT 1
    ) c ON true
    WHERE k.thread_id = $1 AND k.checkpoint_ns = $2`;
}

const COMMIT_SQL = `
WITH input AS (
  SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $5::bytea[], $6::text[], $7::text[], $8::bool[], $24::int[])
    AS r(seq, message_id, type, body, visibility, preview, real_user, id_hash)
), marks AS (
  SELECT * FROM unnest($9::int[], $10::text[], $11::text[], $12::text[], $13::bool[], $25::int[]) AS r(seq, message_id, visibility, preview, real_user, id_hash)
), candidates AS (
  SELECT message_id, id_hash FROM input WHERE visibility IS NOT NULL UNION ALL SELECT message_id, id_hash FROM marks
), known AS (
  SELECT t.message_id FROM thread_messages t JOIN candidates c ON t.id_hash = c.id_hash AND t.message_id = c.message_id
  WHERE t.thread_key = $1 AND t.visibility IS NOT NULL
), shown_rows AS (
  SELECT * FROM input WHERE visibility IS NOT NULL AND message_id NOT IN (SELECT message_id FROM known)
), inserted AS (
  INSERT INTO thread_messages (thread_key, seq, message_id, id_hash, type, body, visibility, run_id, created_at)
  SELECT $1, i.seq, i.message_id, i.id_hash, i.type, i.body, s.visibility,
         CASE WHEN s.seq IS NOT NULL THEN $14::text END, CASE WHEN s.seq IS NOT NULL THEN $15::timestamptz END
  FROM input i LEFT JOIN shown_rows s ON s.seq = i.seq
  RETURNING seq
), marked AS (
  UPDATE thread_messages t SET visibility = m.visibility, run_id = $14::text, created_at = $15::timestamptz
  FROM marks m
  WHERE t.thread_key = $1 AND t.seq = m.seq AND t.visibility IS NULL AND m.message_id NOT IN (SELECT message_id FROM known)
  RETURNING t.seq, m.visibility, m.preview, m.real_user
), shown AS (
  SELECT seq, visibility, preview, real_user FROM shown_rows
  UNION ALL
  SELECT seq, visibility, preview, real_user FROM marked
), stored_values AS (
  INSERT INTO thread_values (thread_key, hash, type, value)
  SELECT $1, v.hash, v.type, v.value FROM unnest($16::text[], $17::text[], $18::bytea[]) AS v(hash, type, value)
  ON CONFLICT DO NOTHING
), stored_checkpoint AS (
  INSERT INTO thread_checkpoints (thread_key, checkpoint_id, parent_id, last_seq, body)
  SELECT $1, $19::uuid, $20::uuid, greatest($21::int, (SELECT coalesce(max(seq), 0) FROM thread_messages WHERE thread_key = $1)), $22::bytea
  WHERE $19::uuid IS NOT NULL
  ON CONFLICT (thread_key, checkpoint_id) DO UPDATE SET parent_id = excluded.parent_id, last_seq = excluded.last_seq, body = excluded.body
), before AS (
  SELECT m.seq, m.message_id, m.type, m.body FROM thread_messages m
  WHERE $26::bool AND m.thread_key = $1 AND m.visibility IS NOT NULL
    AND m.seq > coalesce((SELECT last_seq FROM thread_checkpoints c WHERE c.thread_key = $1 ORDER BY c.checkpoint_id DESC LIMIT 1), 0)
), counters AS (
  UPDATE threads SET
    message_count = message_count + (SELECT count(*) FROM shown),
    visible_count = visible_count + (SELECT count(*) FROM shown WHERE visibility = 'user'),
    updated_at = $15::timestamptz,
    last_user_activity_at = CASE WHEN EXISTS (SELECT 1 FROM shown WHERE real_user)
      THEN greatest(last_user_activity_at, $15::timestamptz) ELSE last_user_activity_at END,
    last_visible_preview = coalesce((SELECT preview FROM shown WHERE visibility = 'user' ORDER BY seq DESC LIMIT 1), last_visible_preview),
    last_visible_at = CASE WHEN EXISTS (SELECT 1 FROM shown WHERE visibility = 'user') THEN $15::timestamptz ELSE last_visible_at END
  WHERE id = $23::text AND EXISTS (SELECT 1 FROM shown)
)
SELECT seq, NULL::text AS message_id, NULL::text AS type, NULL::bytea AS body FROM shown
UNION ALL
SELECT seq, message_id, type, body FROM before`;

export class PostgresCheckpointStore implements CheckpointStore {
  readonly #pool: pg.Pool;

  /** The pool's connections must have the storage's schema on their search_path; the tables must exist (migration 25). */
  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async key(threadId: string, checkpointNs: string, create: boolean): Promise<number | undefined> {
    const select = 'SELECT key FROM thread_keys WHERE thread_id = $1 AND checkpoint_ns = $2';
    if (create) {
      // A key another transaction is making at the same moment is not in this statement's snapshot: asked again below.
      const made = await this.#pool.query<{ key: number }>(
        `WITH made AS (INSERT INTO thread_keys (thread_id, checkpoint_ns) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING key)
         SELECT key FROM made UNION ALL ${select}`,
        [threadId, checkpointNs],
      );
      if (made.rows[0] !== undefined) return made.rows[0].key;
    }
    return (await this.#pool.query<{ key: number }>(select, [threadId, checkpointNs])).rows[0]?.key;
  }

  async read(threadId: string, checkpointNs: string, checkpointId?: string): Promise<ThreadRead | undefined> {
    // An id no checkpoint here can have names none.
    if (checkpointId !== undefined && !CHECKPOINT_ID.test(checkpointId)) return undefined;
    const result = await this.#pool.query<CheckpointRow & { max_seq: number }>(
      readSql(checkpointId !== undefined),
      checkpointId === undefined ? [threadId, checkpointNs] : [threadId, checkpointNs, checkpointId],
    );
    const row = result.rows[0];
    if (row === undefined) return undefined;
    return { key: row.key, maxSeq: Number(row.max_seq), checkpoint: toCheckpoint(row) };
  }

  async list(query: ListQuery): Promise<StoredCheckpoint[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    if (query.threadId !== undefined) {
      args.push(query.threadId);
      where.push(`k.thread_id = $${args.length}`);
    }
    if (query.checkpointNs !== undefined) {
      args.push(query.checkpointNs);
      where.push(`k.checkpoint_ns = $${args.length}`);
    }
    if (query.before !== undefined) {
      // Ids sort as their lowercase text; one that is not a UUID sorts before none of them.
      if (!CHECKPOINT_ID.test(query.before)) return [];
      args.push(query.before);
      where.push(`c.checkpoint_id < $${args.length}::uuid`);
    }
    const limit = query.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(query.limit))}` : '';
    const result = await this.#pool.query<CheckpointRow>(
      `SELECT k.key, k.thread_id, k.checkpoint_ns, c.checkpoint_id, c.parent_id, c.last_seq, c.body, ${WRITES}
       FROM thread_checkpoints c JOIN thread_keys k ON k.key = c.thread_key
       ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY c.checkpoint_id DESC${limit}`,
      args,
    );
    return result.rows.map((row) => toCheckpoint(row)!);
  }

  async writes(key: number, checkpointId: string): Promise<StoredWrite[]> {
    if (!CHECKPOINT_ID.test(checkpointId)) return [];
    const result = await this.#pool.query<{ task_id: string; idx: number; channel: string; type: string | null; value: Buffer | null; task_path: string }>(
      'SELECT task_id, idx, channel, type, value, task_path FROM thread_checkpoint_writes WHERE thread_key = $1 AND checkpoint_id = $2::uuid',
      [key, checkpointId],
    );
    return result.rows.map((row) => ({ taskId: row.task_id, idx: row.idx, channel: row.channel, type: row.type, value: row.value, taskPath: row.task_path }));
  }

  async messages(key: number, ranges: readonly number[]): Promise<StoredMessageRow[]> {
    const result = await this.#pool.query<{ seq: number; message_id: string; type: string; body: Buffer; visibility: string | null }>(
      `SELECT m.seq, m.message_id, m.type, m.body, m.visibility FROM unnest($2::int[], $3::int[]) AS r(lo, hi)
       JOIN thread_messages m ON m.thread_key = $1 AND m.seq BETWEEN r.lo AND r.hi`,
      [key, ranges.filter((_, index) => index % 2 === 0), ranges.filter((_, index) => index % 2 === 1)],
    );
    return result.rows.map((row) => ({ seq: row.seq, messageId: row.message_id, type: row.type, body: row.body, shown: row.visibility !== null }));
  }

  async values(key: number, hashes: readonly string[]): Promise<Map<string, { type: string; value: Uint8Array }>> {
    const result = await this.#pool.query<{ hash: string; type: string; value: Buffer }>('SELECT hash, type, value FROM thread_values WHERE thread_key = $1 AND hash = ANY($2::text[])', [
      key,
      hashes,
    ]);
    return new Map(result.rows.map((row) => [row.hash, { type: row.type, value: row.value }]));
  }

  async maxSeq(key: number): Promise<number> {
    const result = await this.#pool.query<{ top: number }>('SELECT coalesce(max(seq), 0) AS top FROM thread_messages WHERE thread_key = $1', [key]);
    return Number(result.rows[0]?.top ?? 0);
  }

  async commit(request: CommitRequest): Promise<CommitResult> {
    const rows = request.rows;
    const shows = (row: (typeof rows)[number]) => row.shown && row.facts !== undefined;
    const checkpoint = request.checkpoint;
    try {
      const result = await this.#pool.query<{ seq: number; message_id: string | null; type: string | null; body: Buffer | null }>(COMMIT_SQL, [
        request.key,
        rows.map((row) => row.seq),
        rows.map((row) => row.messageId),
        rows.map((row) => row.type),
        rows.map((row) => Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength)),
        rows.map((row) => (shows(row) ? row.facts!.visibility : null)),
        rows.map((row) => (shows(row) ? row.facts!.preview : null)),
        rows.map((row) => (shows(row) ? row.facts!.realUser : false)),
        request.marks.map((mark) => mark.seq),
        request.marks.map((mark) => mark.messageId),
        request.marks.map((mark) => mark.facts.visibility),
        request.marks.map((mark) => mark.facts.preview),
        request.marks.map((mark) => mark.facts.realUser),
        request.runId,
        request.at,
        request.values.map((value) => value.hash),
        request.values.map((value) => value.type),
        request.values.map((value) => Buffer.from(value.value.buffer, value.value.byteOffset, value.value.byteLength)),
        checkpoint === undefined ? null : storableCheckpointId(checkpoint.checkpointId),
        checkpoint?.parentId == null ? null : storableCheckpointId(checkpoint.parentId),
        checkpoint?.lastSeq ?? null,
        checkpoint === undefined ? null : Buffer.from(checkpoint.body.buffer, checkpoint.body.byteOffset, checkpoint.body.byteLength),
        request.threadId ?? null,
        rows.map((row) => messageIdHash(row.messageId)),
        request.marks.map((mark) => messageIdHash(mark.messageId)),
        request.unapplied === true,
      ]);
      const shown = result.rows.filter((row) => row.message_id === null).map((row) => row.seq);
      const unapplied = result.rows
        .filter((row) => row.message_id !== null)
        .map((row) => ({ seq: row.seq, messageId: row.message_id!, type: row.type!, body: row.body!, shown: true }))
        .sort((a, b) => a.seq - b.seq);
      return { shown, unapplied };
    } catch (error) {
      throw conflictOf(error) ?? error;
    }
  }

  async putWrites(key: number, checkpointId: string, writes: readonly StoredWrite[], replace: boolean): Promise<void> {
    try {
      await this.#pool.query(
        `INSERT INTO thread_checkpoint_writes (thread_key, checkpoint_id, task_id, idx, channel, type, value, task_path)
         SELECT $1, $2::uuid, * FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::bytea[], $8::text[])
         ON CONFLICT (thread_key, checkpoint_id, task_id, idx) DO ${replace ? 'UPDATE SET channel = excluded.channel, type = excluded.type, value = excluded.value, task_path = excluded.task_path' : 'NOTHING'}`,
        [
          key,
          storableCheckpointId(checkpointId),
          writes.map((write) => write.taskId),
          writes.map((write) => write.idx),
          writes.map((write) => write.channel),
          writes.map((write) => write.type),
          writes.map((write) => (write.value === null ? null : Buffer.from(write.value.buffer, write.value.byteOffset, write.value.byteLength))),
          writes.map((write) => write.taskPath),
        ],
      );
    } catch (error) {
      throw conflictOf(error) ?? error;
    }
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.#pool.query('DELETE FROM thread_keys WHERE thread_id = $1', [threadId]);
  }

  async unapplied(threadId: string): Promise<StoredMessageRow[]> {
    const result = await this.#pool.query<{ seq: number; message_id: string; type: string; body: Buffer }>(
      `SELECT m.seq, m.message_id, m.type, m.body FROM thread_keys k JOIN thread_messages m ON m.thread_key = k.key
       WHERE k.thread_id = $1 AND k.checkpoint_ns = '' AND m.visibility IS NOT NULL
         AND m.seq > coalesce((SELECT last_seq FROM thread_checkpoints c WHERE c.thread_key = k.key ORDER BY c.checkpoint_id DESC LIMIT 1), 0)
       ORDER BY m.seq`,
      [threadId],
    );
    return result.rows.map((row) => ({ seq: row.seq, messageId: row.message_id, type: row.type, body: row.body, shown: true }));
  }
}

function toCheckpoint(row: CheckpointRow): StoredCheckpoint | undefined {
  if (row.checkpoint_id === null || row.body === null) return undefined;
  return {
    threadId: row.thread_id,
    checkpointNs: row.checkpoint_ns,
    key: row.key,
    checkpointId: row.checkpoint_id,
    parentId: row.parent_id,
    lastSeq: Number(row.last_seq ?? 0),
    body: row.body,
    writes: (row.writes ?? []).map((write) => ({
      taskId: write.task_id,
      idx: write.idx,
      channel: write.channel,
      type: write.type,
      value: write.value === null ? null : Buffer.from(write.value, 'base64'),
      taskPath: write.task_path,
    })),
  };
}

function conflictOf(error: unknown): StoreConflict | undefined {
  const code = (error as { code?: string }).code;
  if (code === FOREIGN_KEY_VIOLATION) return new StoreConflict('key', { cause: error });
  if (code === UNIQUE_VIOLATION) return new StoreConflict('seq', { cause: error });
  return undefined;
}
