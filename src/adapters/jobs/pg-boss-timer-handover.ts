/**
 * The upgrade from a version whose follow-ups, check-ins and schedule fires were pg-boss
 * jobs: since migration 0015 the due timers live in `vigil_jobs` (RoutedJobQueue), and no
 * process works those pg-boss queues any more, so a timer still pending there would never
 * fire — a check-in has no other safety net, and a follow-up's sweep hands one out ten
 * minutes late at best. At start, before the schedulers, its pending jobs move over.
 *
 * One statement moves them: a DELETE … RETURNING on pg-boss's job table feeds the INSERT,
 * so each job moves once even when several instances start at once (a row one of them
 * deletes, the others skip), and a second run finds nothing to move. Waiting and retrying
 * jobs move, and so do jobs a process had taken (`active`): the instance that took one has
 * stopped, or if it still runs the old version the job is delivered twice, as a lapsed
 * claim is, and the handlers are idempotent per key (I7). A pending job of the same
 * (queue, key) already in `vigil_jobs` stands, as `schedule()` keeps it.
 */
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../sql/database.js';
import { JOBS_CHANNEL } from './embedded-job-queue.js';

export interface PgBossTimerHandover {
  db: Kysely<Database>;
  /** pg-boss's schema (pgBossSchemaFor), which may not exist: a database that never ran it. */
  pgBossSchema: string;
  /** vigil's schema: the NOTIFY payload that wakes every instance's scheduler. */
  vigilSchema: string;
  queues: ReadonlySet<string>;
  logger: Logger;
}

/** pg-boss's states of a job not yet done: waiting for its time, waiting to retry, taken by a worker. */
const UNFINISHED_STATES = ['created', 'retry', 'active'];

/** Moves the unfinished pg-boss jobs of `queues` into `vigil_jobs`; answers how many. */
export async function handOverPgBossTimers(options: PgBossTimerHandover): Promise<number> {
  const found = await sql<{ job: string | null }>`SELECT to_regclass(${`${quoteIdentifier(options.pgBossSchema)}.job`})::text AS job`.execute(options.db);
  if (!found.rows[0]?.job) return 0;
  const bossJobs = sql.table(`${options.pgBossSchema}.job`);
  // attempt: deliveries so far. pg-boss counts a retry only when it hands a started job out again.
  const moved = await sql<{ queue: string; key: string }>`
    WITH unfinished AS (
      DELETE FROM ${bossJobs}
      WHERE name IN (${sql.join([...options.queues])}) AND state::text IN (${sql.join(UNFINISHED_STATES)})
      RETURNING id, name, singleton_key, data, start_after, started_on, retry_count, created_on
    )
    INSERT INTO vigil_jobs (id, queue, key, due_at, payload, state, attempt, lease_until, claimed_by, last_error, created_at, updated_at)
    SELECT id::text, name, COALESCE(singleton_key, id::text), start_after, COALESCE(data, '{}'::jsonb)::text, 'pending',
           CASE WHEN started_on IS NULL THEN 0 ELSE retry_count + 1 END, NULL, NULL, NULL, created_on, now()
    FROM unfinished
    ON CONFLICT DO NOTHING
    RETURNING queue, key`.execute(options.db);
  if (moved.rows.length === 0) return 0;
  await sql`SELECT pg_notify(${JOBS_CHANNEL}, ${options.vigilSchema})`.execute(options.db);
  options.logger.info({ jobs: moved.rows.length, queues: [...new Set(moved.rows.map((row) => row.queue))] }, 'due timers left in pg-boss by an earlier version moved to the job table');
  return moved.rows.length;
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
