/**
 * SQL for {@link LegacyPostgresSaver}, over the tables LangGraph's PostgresSaver
 * (@langchain/langgraph-checkpoint-postgres 1.0.x) creates and migrates.
 *
 * The reads return what PostgresSaver's reads return, as plain rows instead of
 * `array_agg(array[… bytea])`: node-postgres parses a bytea[] character by character
 * (postgres-array, then parseByteA per element), which for a long thread's 1.6 MB of hex
 * was a third of a turn, while a bytea column is one native hex decode. Channel, type
 * and task id are still cast to bytea, exactly as PostgresSaver casts them, so any name
 * decodes to the same string it would there.
 */
import { TASKS } from '@langchain/langgraph-checkpoint';

export interface CheckpointTables {
  checkpoints: string;
  blobs: string;
  writes: string;
}

export function checkpointTables(schema: string): CheckpointTables {
  // Quoted as PostgresSaver quotes them (its schema option is used verbatim).
  return {
    checkpoints: `"${schema}".checkpoints`,
    blobs: `"${schema}".checkpoint_blobs`,
    writes: `"${schema}".checkpoint_writes`,
  };
}

/**
 * Identifies the stored checkpoint row's content: a cache entry is used only while the
 * row still hashes the same (a rewrite of the same checkpoint id by anyone is a miss).
 */
function rowDigest(alias: string): string {
  return `md5(${alias}.checkpoint::text) || md5(${alias}.metadata::text) || coalesce(${alias}.parent_checkpoint_id, '')`;
}

const CHECKPOINT_COLUMNS = 'thread_id, checkpoint, checkpoint_ns, checkpoint_id, parent_checkpoint_id, metadata';

/**
 * One statement (one snapshot, as PostgresSaver's single query) returning, per selected
 * checkpoint in `checkpoint_id DESC` order: a head row (part 0), its channel blobs (part
 * 1, in channel_versions order) and its pending writes (part 2, by task id and index, as
 * PostgresSaver orders them).
 *
 * `hitCondition` (over the head's checkpoint_id, digest, blob_count, blob_bytes) says when
 * the caller's cached entry is still the stored checkpoint: then the head carries no
 * checkpoint or metadata and no blob is sent, only the pending writes. Blob rows are
 * never updated (PostgresSaver inserts them with ON CONFLICT DO NOTHING) and only
 * deleted with their thread, so the same number and total size of the rows the
 * checkpoint's channel_versions join to means the same blobs.
 */
function readSql(tables: CheckpointTables, selectCheckpoints: string, hitCondition: string): string {
  return `WITH cp AS (
  SELECT s.*, row_number() OVER (ORDER BY s.checkpoint_id DESC) AS rn
  FROM (${selectCheckpoints}) AS s
), refs AS (
  SELECT cp.rn, j.ord, bl.channel, bl.version, octet_length(bl.blob) AS size
  FROM cp
  CROSS JOIN LATERAL jsonb_each_text(cp.checkpoint -> 'channel_versions') WITH ORDINALITY AS j(key, value, ord)
  JOIN ${tables.blobs} bl
    ON bl.thread_id = cp.thread_id AND bl.checkpoint_ns = cp.checkpoint_ns AND bl.channel = j.key AND bl.version = j.value
), head AS (
  SELECT cp.*, ${rowDigest('cp')} AS digest,
    (SELECT count(*) FROM refs WHERE refs.rn = cp.rn) AS blob_count,
    (SELECT coalesce(sum(refs.size), 0) FROM refs WHERE refs.rn = cp.rn) AS blob_bytes
  FROM cp
), decided AS (
  SELECT head.*, (${hitCondition}) IS TRUE AS hit FROM head
)
SELECT 0 AS part, d.rn, 0::bigint AS ord, NULL::text AS sort_task,
  d.hit, d.digest, d.blob_count, d.blob_bytes,
  d.thread_id, d.checkpoint_ns, d.checkpoint_id, d.parent_checkpoint_id,
  CASE WHEN d.hit THEN NULL ELSE d.checkpoint END AS checkpoint,
  CASE WHEN d.hit THEN NULL ELSE d.metadata END AS metadata,
  NULL::text AS version, NULL::integer AS size,
  NULL::bytea AS task_id, NULL::bytea AS channel, NULL::bytea AS type, NULL::bytea AS blob
FROM decided d
UNION ALL
SELECT 1, d.rn, r.ord, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  r.version, r.size, NULL, bl.channel::bytea, bl.type::bytea, bl.blob
FROM refs r
JOIN decided d ON d.rn = r.rn AND NOT d.hit
JOIN ${tables.blobs} bl
  ON bl.thread_id = d.thread_id AND bl.checkpoint_ns = d.checkpoint_ns AND bl.channel = r.channel AND bl.version = r.version
UNION ALL
SELECT 2, d.rn, cw.idx, cw.task_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, cw.task_id::text::bytea, cw.channel::bytea, cw.type::bytea, cw.blob
FROM decided d
JOIN ${tables.writes} cw
  ON cw.thread_id = d.thread_id AND cw.checkpoint_ns = d.checkpoint_ns AND cw.checkpoint_id = d.checkpoint_id
ORDER BY rn, part, sort_task, ord`;
}

export interface CheckpointStatements {
  /** $1 thread_id, $2 checkpoint_ns; $3…$6 the cached entry's id, digest, blob count, blob bytes (or nulls). */
  readLatest: string;
  /** $1 thread_id, $2 checkpoint_ns, $3 checkpoint_id; $4…$7 as readLatest's $3…$6. */
  readById: string;
  /** For list(): `where` and its parameters from PostgresSaver._searchWhere. */
  list(where: string, limit: number | undefined): string;
  /** PostgresSaver's own query for checkpoints older than v4 (rare; kept as it is). */
  pendingSends: string;
  /** PostgresSaver's put (blobs, then an upsert returning what the row now holds: its parent survives a conflict), in one statement. */
  putCheckpoint: string;
  /** PostgresSaver's putWrites in one statement. */
  putWrites(upsert: boolean): string;
}

export function checkpointStatements(tables: CheckpointTables): CheckpointStatements {
  const cached = (first: number) =>
    `checkpoint_id = $${first} AND digest = $${first + 1} AND blob_count = $${first + 2} AND blob_bytes = $${first + 3}`;
  return {
    readLatest: readSql(
      tables,
      `SELECT ${CHECKPOINT_COLUMNS} FROM ${tables.checkpoints} WHERE thread_id = $1 AND checkpoint_ns = $2 ORDER BY checkpoint_id DESC LIMIT 1`,
      cached(3),
    ),
    readById: readSql(
      tables,
      `SELECT ${CHECKPOINT_COLUMNS} FROM ${tables.checkpoints} WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3`,
      cached(4),
    ),
    list(where, limit) {
      let select = `SELECT ${CHECKPOINT_COLUMNS} FROM ${tables.checkpoints} ${where} ORDER BY checkpoint_id DESC`;
      if (limit !== undefined) select += ` LIMIT ${limit}`;
      return readSql(tables, select, 'false');
    },
    pendingSends: `select
      checkpoint_id,
      array_agg(array[cw.type::bytea, cw.blob] order by cw.task_id, cw.idx) as pending_sends
    from ${tables.writes} cw
    where cw.thread_id = $1
      and cw.checkpoint_id = any($2)
      and cw.channel = '${TASKS}'
    group by cw.checkpoint_id`,
    /**
     * PostgresSaver.put's transaction (each blob, then the checkpoint) as one statement:
     * atomic by itself, one round trip instead of one per blob plus BEGIN and COMMIT.
     * $1 thread, $2 namespace, $3–$6 the blobs as parallel arrays (channel, version,
     * type, bytes), $7 checkpoint id, $8 parent id, $9 checkpoint, $10 metadata. Returns
     * the row's parent and digest, and which blobs were inserted (not already there).
     */
    putCheckpoint: `WITH blobs AS (
  INSERT INTO ${tables.blobs} (thread_id, checkpoint_ns, channel, version, type, blob)
  SELECT $1, $2, b.channel, b.version, b.type, b.blob
    FROM unnest($3::text[], $4::text[], $5::text[], $6::bytea[]) AS b(channel, version, type, blob)
  ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING
  RETURNING channel, version
), saved AS (
  INSERT INTO ${tables.checkpoints} AS cp (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
  VALUES ($1, $2, $7, $8, $9, $10)
  ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)
  DO UPDATE SET
    checkpoint = EXCLUDED.checkpoint,
    metadata = EXCLUDED.metadata
  RETURNING cp.parent_checkpoint_id, ${rowDigest('cp')} AS digest
)
SELECT saved.parent_checkpoint_id, saved.digest,
  (SELECT coalesce(json_agg(json_build_array(blobs.channel, blobs.version)), '[]'::json) FROM blobs) AS inserted
FROM saved`,
    /**
     * PostgresSaver.putWrites's transaction (one insert per write) as one statement.
     * $1 thread, $2 namespace, $3 checkpoint id, $4 task id, $5–$8 the writes as parallel
     * arrays (idx, channel, type, bytes). `upsert`: writes of the special channels
     * replace what is there, as PostgresSaver's UPSERT does; other writes never do.
     */
    putWrites: (upsert: boolean) => `INSERT INTO ${tables.writes} (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob)
  SELECT $1, $2, $3, $4, w.idx, w.channel, w.type, w.blob
    FROM unnest($5::integer[], $6::text[], $7::text[], $8::bytea[]) AS w(idx, channel, type, blob)
  ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) ${
    upsert ? 'DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob' : 'DO NOTHING'
  }`,
  };
}
