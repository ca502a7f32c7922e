import { it } from 'vitest';
import pg from 'pg';
import { pino } from 'pino';
import { PRESENCE_NAMESPACE, PostgresInstancePresence } from '../../src/adapters/locks/postgres-instance-presence.js';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { captureLogs } from '../helpers/log-capture.js';
import { waitFor } from '../helpers/wait-for.js';
import { instancePresenceContract } from './instance-presence.contract.js';

const postgres = await postgresTarget();
const logger = pino({ level: 'silent' });

describePostgres('instance presence on PostgreSQL (advisory locks)', postgres, () => {
  const schema = randomSchemaName();
  const tag = schema.slice(-8);
  let opened = 0;
  const names = new Map<string, string>();
  instancePresenceContract('PostgreSQL, processes on one schema', {
    open: async () => {
      const instanceId = `${tag}-${(opened += 1)}`;
      const presence = await PostgresInstancePresence.open({ connectionString: postgres.url, schema, logger, retryMs: 100, instanceId });
      names.set(presence.id, `vigil-presence ${instanceId}`);
      return presence;
    },
    concurrent: true,
    // Perhaps an older instance still running: never judged gone.
    ownerlessAlive: true,
    breakConnection: async (presence) => {
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      try {
        const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [names.get(presence.id)]);
        if (rows.length !== 1) throw new Error(`expected one presence connection, found ${rows.length}`);
        await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        // pg_terminate_backend only signals: until the session has ended it still holds the
        // lock, and the process would look present without ever having come back.
        await waitFor(async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [rows[0]!.pid])).rowCount === 0, 10_000, 'the broken session to end');
      } finally {
        await admin.end();
      }
    },
  });
});

describePostgres('instance presence on PostgreSQL: the lock still held by the old session', postgres, () => {
  it('a connection opened again never waits for the lock its old session still holds, and close leaves no connection behind', async () => {
    const schema = randomSchemaName();
    const instanceId = `${schema.slice(-8)}-reopen`;
    const name = `vigil-presence ${instanceId}`;
    const logs = captureLogs('warn');
    const presence = await PostgresInstancePresence.open({ connectionString: postgres.url, schema, logger: logs.logger, retryMs: 50, instanceId });
    const admin = new pg.Client({ connectionString: postgres.url });
    const holder = new pg.Client({ connectionString: postgres.url, application_name: `${name} holder` });
    await Promise.all([admin.connect(), holder.connect()]);
    const connectionsOf = async (application: string) => (await admin.query<{ pid: number; wait_event_type: string | null }>('SELECT pid, wait_event_type FROM pg_stat_activity WHERE application_name = $1', [application])).rows;
    try {
      // Another session queues for the process's presence lock, as the process's old session
      // would still hold it when only the client saw the connection break: once the process's
      // session ends it has the lock, and every new connection of the process finds it taken.
      const [held] = await connectionsOf(name);
      const queued = holder.query('SELECT pg_advisory_lock($1, hashtext($2))', [PRESENCE_NAMESPACE, `${schema}:${presence.id}`]);
      await waitFor(async () => (await connectionsOf(`${name} holder`)).some((connection) => connection.wait_event_type === 'Lock'), 10_000, 'the other session to queue for the lock');
      await admin.query('SELECT pg_terminate_backend($1)', [held!.pid]);
      await queued;
      // Tried again (and refused), or, blocking, waiting for the lock.
      const reopening = async () => logs.lines.some((line) => line.msg.startsWith('could not open the presence connection again')) || (await connectionsOf(name)).some((connection) => connection.wait_event_type === 'Lock');
      await waitFor(reopening, 10_000, 'the presence connection to be opened again');

      await presence.close();
      await waitFor(async () => (await connectionsOf(name)).length === 0, 5_000, 'no presence connection left once the presence is closed');
    } finally {
      await holder.end().catch(() => undefined);
      await presence.close();
      await admin.end();
    }
  });
});
