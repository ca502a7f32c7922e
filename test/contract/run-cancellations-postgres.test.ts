import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresRunCancellations, CANCEL_REQUEST_KEPT_MS } from '../../src/adapters/runs/postgres-run-cancellations.js';
import { openPostgresStorage } from '../../src/adapters/sql/postgres-storage.js';
import { PostgresListener } from '../../src/adapters/sql/postgres-listener.js';
type SqlStorage = Awaited<ReturnType<typeof openPostgresStorage>>;
import type { RunCancelRequest } from '../../src/app/runs/run-cancellation.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

interface Instance {
  storage: SqlStorage;
  listener: PostgresListener;
  cancellations: PostgresRunCancellations;
  heard: RunCancelRequest[];
}

describePostgres('Cancel requests across instances on PostgreSQL (run_cancel_requests, NOTIFY)', postgres, () => {
  const schema = randomSchemaName();
  const tag = schema.slice(-8);
  let a: Instance;
  let b: Instance;

  const open = async (name: string): Promise<Instance> => {
    const storage = await openPostgresStorage({ connectionString: postgres.url, schema, logger });
    const listener = await PostgresListener.open(postgres.url, logger, `vigil-listener ${name} ${tag}`);
    const cancellations = new PostgresRunCancellations({ db: storage.context.db, listener, schema, logger });
    const heard: RunCancelRequest[] = [];
    await cancellations.listen((cancel) => heard.push(cancel));
    return { storage, listener, cancellations, heard };
  };

  beforeAll(async () => {
    a = await open('a');
    b = await open('b');
  });
  afterAll(async () => {
    for (const instance of [a, b]) {
      await instance?.listener.close();
      await instance?.storage.close();
    }
    await dropSchema(schema, postgres.url);
  });

  it('a request reaches every instance with the run and its owner (I12: the owner goes with it)', async () => {
    await a.cancellations.request({ runId: 'run-1', userId: 'alice' });
    await waitFor(() => b.heard.some((cancel) => cancel.runId === 'run-1'), 5_000, 'b to hear the request');
    expect(b.heard.filter((cancel) => cancel.runId === 'run-1')).toEqual([{ runId: 'run-1', userId: 'alice' }]);
  });

  it('a request sent while an instance\'s listener was reconnecting reaches it once the listener is back', async () => {
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [`vigil-listener b ${tag}`]);
      expect(rows).toHaveLength(1);
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    } finally {
      await admin.end();
    }
    await waitFor(() => !b.listener.connected, 5_000, "b's listener to notice it was cut");
    // Sent while b listens to nobody: NOTIFY alone would never reach it.
    await a.cancellations.request({ runId: 'run-missed', userId: 'bob' });
    await waitFor(() => b.heard.some((cancel) => cancel.runId === 'run-missed'), 10_000, 'b to read the missed request after reconnecting');
    expect(b.listener.connected).toBe(true);
    expect(b.heard.find((cancel) => cancel.runId === 'run-missed')).toEqual({ runId: 'run-missed', userId: 'bob' });
  });

  it('requests older than the window are dropped by the next request, and not read again', async () => {
    const db = a.storage.context.db;
    await sql`UPDATE run_cancel_requests SET requested_at = now() - make_interval(secs => ${CANCEL_REQUEST_KEPT_MS / 1000 + 60}) WHERE run_id = 'run-1'`.execute(db);
    await a.cancellations.request({ runId: 'run-2', userId: 'alice' });
    const { rows } = await sql<{ run_id: string }>`SELECT run_id FROM run_cancel_requests ORDER BY run_id`.execute(db);
    expect(rows.map((row) => row.run_id)).toEqual(['run-2', 'run-missed']);
  });
});
