import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { RunCancellations, RunCancelRequest } from '../../app/runs/run-cancellation.js';
import type { PostgresListener } from '../sql/postgres-listener.js';

const CANCEL_CHANNEL = 'vigil_run_cancel';
const noticeSchema = z.object({ schema: z.string(), runId: z.string(), userId: z.string() }).strict();
/**
 * How long a request is kept for a listener that missed its notice. A listener is back
 * within seconds of losing its connection; a run older than this that a request still
 * names has long been stopped by the request's own notice, or has ended.
 */
export const CANCEL_REQUEST_KEPT_MS = 10 * 60_000;

/**
 * Cancel requests across the instances on one PostgreSQL database: each request is stored
 * (run_cancel_requests) and announced on the instance's shared LISTEN connection in one
 * statement. NOTIFY is not stored, so an instance whose listener was reconnecting when a
 * request was sent reads the recent requests once it is back and acts on them: cancelling
 * is idempotent (a run that has ended, or that another instance runs, is left alone).
 */
export class PostgresRunCancellations implements RunCancellations {
  constructor(private readonly options: { db: Kysely<any>; listener: PostgresListener; schema: string; logger: Logger }) {}

  async request(cancel: RunCancelRequest): Promise<void> {
    const notice = JSON.stringify({ schema: this.options.schema, ...cancel });
    // Requests past their time are pruned here: the table stays as small as the window.
    await sql`
      WITH pruned AS (DELETE FROM run_cancel_requests WHERE requested_at < now() - make_interval(secs => ${CANCEL_REQUEST_KEPT_MS / 1000})),
           stored AS (
             INSERT INTO run_cancel_requests (run_id, user_id) VALUES (${cancel.runId}, ${cancel.userId})
             ON CONFLICT (run_id) DO UPDATE SET requested_at = now(), user_id = excluded.user_id
             RETURNING run_id
           )
      SELECT pg_notify(${CANCEL_CHANNEL}, ${notice}) FROM stored`.execute(this.options.db);
  }

  listen(handler: (cancel: RunCancelRequest) => void): Promise<() => void> {
    return this.options.listener.listen(
      CANCEL_CHANNEL,
      (payload) => {
        let notice: z.infer<typeof noticeSchema>;
        try {
          notice = noticeSchema.parse(JSON.parse(payload));
        } catch (error) {
          this.options.logger.warn({ err: error }, 'a run cancel notice that is not one of ours');
          return;
        }
        // Other schemas on the same database are other vigil deployments.
        if (notice.schema === this.options.schema) handler({ runId: notice.runId, userId: notice.userId });
      },
      () => void this.#catchUp(handler),
    );
  }

  /** After the listener came back: the requests it may have missed, acted on again. */
  async #catchUp(handler: (cancel: RunCancelRequest) => void): Promise<void> {
    try {
      const { rows } = await sql<{ run_id: string; user_id: string }>`
        SELECT run_id, user_id FROM run_cancel_requests
         WHERE requested_at >= now() - make_interval(secs => ${CANCEL_REQUEST_KEPT_MS / 1000})`.execute(this.options.db);
      for (const row of rows) handler({ runId: row.run_id, userId: row.user_id });
      if (rows.length > 0) this.options.logger.info({ requests: rows.length }, 'cancel requests read again after the listener reconnected');
    } catch (error) {
      this.options.logger.warn({ err: error }, 'could not read the cancel requests missed while the listener reconnected');
    }
  }
}
