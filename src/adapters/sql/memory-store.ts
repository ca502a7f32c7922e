import { sql } from 'kysely';
import type { Selectable } from 'kysely';
import type { Iso, MemoryHit, MemoryNamespace, MemoryOrigin, MemoryPage, MemoryRecord, MemoryStore } from '../../app/ports.js';
import { decodeMemoryCursor, encodeMemoryCursor } from './cursor.js';
import type { MemoriesTable, SqlContext } from './database.js';
import { fts5MatchExpression, searchTerms } from './search-terms.js';
import { checkLimit, isoForDatabase, isoFromDatabase } from './values.js';

type MemoryRow = Selectable<MemoriesTable>;
const MEMORY_COLUMNS = ['id', 'user_id', 'agent_id', 'content', 'created_at', 'updated_at', 'origin', 'run_id', 'thread_id'] as const;
type HitRow = MemoryRow & { score: number | string };
/** A lexeme as tsquery text: quoted, its quotes and backslashes escaped (none survive the folding; this is the guard). */
const QUOTED_LEXEME = sql.raw(`'''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || ''''`);

export class SqlMemoryStore implements MemoryStore {
  readonly #context: SqlContext;

  constructor(context: SqlContext) {
    this.#context = context;
  }

  async add(namespace: MemoryNamespace, memory: { id: string; content: string; origin: MemoryOrigin }, now: Iso): Promise<MemoryRecord> {
    const row = await this.#context.db.insertInto('memories').values(memoryRow(namespace, memory, now)).returning(MEMORY_COLUMNS).executeTakeFirstOrThrow();
    return toMemoryRecord(row);
  }

  async put(namespace: MemoryNamespace, memory: { id: string; content: string; origin: MemoryOrigin }, now: Iso): Promise<MemoryRecord | undefined> {
    const values = memoryRow(namespace, memory, now);
    // One statement on both backends: the row is inserted, or updated in place when it is
    // this namespace's (SQLite's update trigger re-indexes it; PostgreSQL's search column
    // follows), or left alone when the id is another namespace's (no row returned). A
    // replace keeps the memory's creation time and moves its update time, as a LangGraph
    // store item's do.
    const row = await this.#context.db
      .insertInto('memories')
      .values(values)
      .onConflict((conflict) =>
        conflict
          .column('id')
          .doUpdateSet({ content: values.content, updated_at: values.updated_at, origin: values.origin, run_id: values.run_id, thread_id: values.thread_id })
          .where('memories.user_id', '=', namespace.userId)
          .where('memories.agent_id', '=', namespace.agentId),
      )
      .returning(MEMORY_COLUMNS)
      .executeTakeFirst();
    return row === undefined ? undefined : toMemoryRecord(row);
  }

  async search(namespace: MemoryNamespace, query: string, options: { limit: number }): Promise<MemoryHit[]> {
    const limit = checkLimit(options.limit);
    const terms = searchTerms(query);
    if (terms.length === 0) return [];
    const rows = this.#context.dialect === 'sqlite' ? await this.#searchSqlite(namespace, terms, limit) : await this.#searchPostgres(namespace, terms, limit);
    return rows.map((row) => ({ ...toMemoryRecord(row), score: Number(row.score) }));
  }

  // bm25() is lower-is-better; negate it so a higher score means more relevant.
  async #searchSqlite(namespace: MemoryNamespace, terms: string[], limit: number): Promise<HitRow[]> {
    // The full-text index holds every namespace's memories, so a MATCH reads the postings
    // of all of them before the join keeps this namespace's. The EXISTS names no table of
    // the outer query: SQLite tests such a term once, before its loops, so a namespace
    // with no memories (most agents, every turn) skips the index instead of searching it.
    const result = await sql<HitRow>`
      SELECT m.id, m.user_id, m.agent_id, m.content, m.created_at, m.updated_at, m.origin, m.run_id, m.thread_id, -bm25(memories_fts) AS score
      FROM memories_fts
      JOIN memories AS m ON m.row_id = memories_fts.rowid
      WHERE EXISTS (SELECT 1 FROM memories WHERE user_id = ${namespace.userId} AND agent_id = ${namespace.agentId})
        AND memories_fts MATCH ${fts5MatchExpression(terms)}
        AND m.user_id = ${namespace.userId}
        AND m.agent_id = ${namespace.agentId}
      ORDER BY bm25(memories_fts), m.created_at DESC, m.id
      LIMIT ${limit}`.execute(this.#context.db);
    return result.rows;
  }

  async #searchPostgres(namespace: MemoryNamespace, terms: string[], limit: number): Promise<HitRow[]> {
    // The query's words are folded and split by the very function the memories' search
    // column is made with (migration 24), so both are cut into the same lexemes, which are
    // OR-ed (cast as to_tsvector made them: never stemmed twice). English stop words count
    // only when the query has nothing else: beside other words they would match nearly
    // every memory and, as ts_rank does not weigh a word by its rarity (bm25 does), crowd
    // out the real matches; alone ("who are you?") they find what SQLite finds.
    const result = await sql<HitRow>`
      WITH folded (text) AS (SELECT vigil_memory_search_text(${terms.join(' ')})),
      q (query) AS (
        SELECT coalesce(
          (SELECT string_agg(${QUOTED_LEXEME}, ' | ')::tsquery FROM folded, unnest(to_tsvector('pg_catalog.english', folded.text))),
          (SELECT string_agg(${QUOTED_LEXEME}, ' | ')::tsquery FROM folded, unnest(to_tsvector('vigil_memory_search', folded.text)))
        )
      )
      SELECT m.id, m.user_id, m.agent_id, m.content, m.created_at, m.updated_at, m.origin, m.run_id, m.thread_id, ts_rank(m.search, q.query) AS score
      FROM memories AS m, q
      WHERE m.user_id = ${namespace.userId}
        AND m.agent_id = ${namespace.agentId}
        AND m.search @@ q.query
      ORDER BY score DESC, m.created_at DESC, m.id
      LIMIT ${limit}`.execute(this.#context.db);
    return result.rows;
  }

  /** Newest first, then by id (memories written in the same millisecond), so a page boundary never skips or repeats one. */
  async list(namespace: MemoryNamespace, options: { limit: number; cursor?: string | undefined }): Promise<MemoryPage> {
    const limit = checkLimit(options.limit);
    const after = options.cursor === undefined ? undefined : decodeMemoryCursor(options.cursor);
    const rows = await this.#context.db
      .selectFrom('memories')
      .select(MEMORY_COLUMNS)
      .where('user_id', '=', namespace.userId)
      .where('agent_id', '=', namespace.agentId)
      // A row-value comparison, which both backends answer from the (user_id, agent_id, created_at) index.
      .$if(after !== undefined, (query) => query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after!.createdAt, after!.id))))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute();
    const memories = rows.slice(0, limit).map(toMemoryRecord);
    const last = memories.at(-1);
    return { memories, nextCursor: rows.length > limit && last !== undefined ? encodeMemoryCursor({ createdAt: last.createdAt, id: last.id }) : null };
  }

  async get(namespace: MemoryNamespace, memoryId: string): Promise<MemoryRecord | undefined> {
    const row = await this.#context.db
      .selectFrom('memories')
      .select(MEMORY_COLUMNS)
      .where('id', '=', memoryId)
      .where('user_id', '=', namespace.userId)
      .where('agent_id', '=', namespace.agentId)
      .executeTakeFirst();
    return row === undefined ? undefined : toMemoryRecord(row);
  }

  async delete(userId: string, memoryId: string): Promise<boolean> {
    const result = await this.#context.db.deleteFrom('memories').where('id', '=', memoryId).where('user_id', '=', userId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}

function memoryRow(namespace: MemoryNamespace, memory: { id: string; content: string; origin: MemoryOrigin }, now: Iso) {
  const { origin } = memory;
  return {
    id: memory.id,
    user_id: namespace.userId,
    agent_id: namespace.agentId,
    content: memory.content,
    created_at: isoForDatabase(now),
    updated_at: isoForDatabase(now),
    origin: origin.by,
    run_id: origin.by === 'agent' ? origin.runId : null,
    thread_id: origin.by === 'agent' ? origin.threadId : null,
  };
}

function toMemoryRecord(row: MemoryRow): MemoryRecord {
  return {
    id: row.id,
    userId: row.user_id,
    agentId: row.agent_id,
    content: row.content,
    createdAt: isoFromDatabase(row.created_at),
    updatedAt: isoFromDatabase(row.updated_at),
    origin: originOf(row),
  };
}

function originOf(row: MemoryRow): MemoryOrigin | null {
  if (row.origin === 'api') return { by: 'api' };
  if (row.origin === 'agent' && row.run_id !== null) return { by: 'agent', runId: row.run_id, threadId: row.thread_id };
  return null;
}
