import pg from 'pg';
import { pino } from 'pino';
import { PostgresEventBus } from '../../src/adapters/events/postgres-event-bus.js';
import { openPostgresStorage } from '../../src/adapters/sql/postgres-storage.js';
import { PostgresListener } from '../../src/adapters/sql/postgres-listener.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { eventBusContract } from './event-bus.contract.js';

const logger = pino({ level: 'silent' });
const postgres = await postgresTarget();

describePostgres('PostgreSQL event bus (LISTEN/NOTIFY, thread_events)', postgres, () => {
  eventBusContract('PostgreSQL, two instances', async () => {
    const schema = randomSchemaName();
    // Two instances: each its own storage pool, listener and bus, as two processes would have.
    const tag = schema.slice(-8);
    const open = async (name: string) => {
      const storage = await openPostgresStorage({ connectionString: postgres.url, schema, logger });
      const listener = await PostgresListener.open(postgres.url, logger, `vigil-listener ${name} ${tag}`);
      const bus = await PostgresEventBus.open({ db: storage.context.db, listener, schema, logger });
      return { storage, listener, bus };
    };
    const a = await open('a');
    const b = await open('b');
    return {
      a: a.bus,
      b: b.bus,
      cutListener: async () => {
        const admin = new pg.Client({ connectionString: postgres.url });
        await admin.connect();
        try {
          // b's listening session, and only b's (named for this fixture).
          const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [`vigil-listener b ${tag}`]);
          if (rows.length !== 1) throw new Error(`expected one listener to cut, found ${rows.length}`);
          await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        } finally {
          await admin.end();
        }
        // Wait until b's listener noticed and came back.
        const started = Date.now();
        while (b.listener.connected && Date.now() - started < 5_000) await new Promise((resolve) => setTimeout(resolve, 10));
      },
      close: async () => {
        for (const instance of [a, b]) {
          await instance.bus.close();
          await instance.listener.close();
          await instance.storage.close();
        }
        await dropSchema(schema, postgres.url);
      },
    };
  });
});
