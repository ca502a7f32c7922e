import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { RunCancellations, RunCancelRequest } from '../../app/runs/run-cancellation.js';
import type { PostgresListener } from '../sql/postgres-listener.js';

const CANCEL_CHANNEL = 'vigil_run_cancel';
const noticeSchema = z.object({ schema: z.string(), runId: z.string(), userId: z.string() }).strict();

/**
 * Cancel requests across the instances on one PostgreSQL database, on the instance's shared
 * LISTEN connection. A request sent while an instance's listener is reconnecting is not
 * heard there (NOTIFY is not stored): the person may cancel again.
 */
export class PostgresRunCancellations implements RunCancellations {
  constructor(private readonly options: { db: Kysely<any>; listener: PostgresListener; schema: string; logger: Logger }) {}

  async request(cancel: RunCancelRequest): Promise<void> {
    await sql`SELECT pg_notify(${CANCEL_CHANNEL}, ${JSON.stringify({ schema: this.options.schema, ...cancel })})`.execute(this.options.db);
  }

  listen(handler: (cancel: RunCancelRequest) => void): Promise<() => void> {
    return this.options.listener.listen(CANCEL_CHANNEL, (payload) => {
      let notice: z.infer<typeof noticeSchema>;
      try {
        notice = noticeSchema.parse(JSON.parse(payload));
      } catch (error) {
        this.options.logger.warn({ err: error }, 'a run cancel notice that is not one of ours');
        return;
      }
      // Other schemas on the same database are other vigil deployments.
      if (notice.schema === this.options.schema) handler({ runId: notice.runId, userId: notice.userId });
    });
  }
}
