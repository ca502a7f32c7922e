import pg from 'pg';
import { pino } from 'pino';
import { PostgresSingletonRoles } from '../../src/adapters/locks/postgres-singleton-roles.js';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { singletonRolesContract } from './singleton-roles.contract.js';

const postgres = await postgresTarget();
const logger = pino({ level: 'silent' });

describePostgres('singleton roles on PostgreSQL (advisory locks)', postgres, () => {
  singletonRolesContract('PostgreSQL, two instances', async () => {
    const schema = randomSchemaName();
    const tag = schema.slice(-8);
    const a = new PostgresSingletonRoles({ connectionString: postgres.url, schema, logger, retryMs: 100, instanceId: `a-${tag}` });
    const b = new PostgresSingletonRoles({ connectionString: postgres.url, schema, logger, retryMs: 100, instanceId: `b-${tag}` });
    return {
      a,
      b,
      loseHolder: async (role) => {
        const admin = new pg.Client({ connectionString: postgres.url });
        await admin.connect();
        try {
          const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [`vigil-role ${role} a-${tag}`]);
          if (rowCount !== 1) throw new Error(`expected one role connection of a, found ${rowCount}`);
        } finally {
          await admin.end();
        }
      },
      close: async () => {
        await a.close();
        await b.close();
      },
    };
  }, { loseHolder: true });
});
