import pg from 'pg';
import { pino } from 'pino';
import { PostgresInstancePresence } from '../../src/adapters/locks/postgres-instance-presence.js';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
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
        const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [names.get(presence.id)]);
        if (rowCount !== 1) throw new Error(`expected one presence connection, found ${rowCount}`);
      } finally {
        await admin.end();
      }
    },
  });
});
