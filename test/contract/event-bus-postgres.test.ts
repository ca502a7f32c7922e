import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PostgresEventBus } from '../../src/adapters/events/postgres-event-bus.js';
import { openPostgresStorage } from '../../src/adapters/sql/postgres-storage.js';
import { PostgresListener } from '../../src/adapters/sql/postgres-listener.js';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import type { VigilEvent } from '../../src/domain/events.js';
import { waitFor } from '../helpers/wait-for.js';
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
  }, { cutListener: true });
});

describePostgres('PostgreSQL event bus: what it keeps in thread_events and thread_event_counters', postgres, () => {
  const schema = randomSchemaName();
  const replayWindowMs = 300;
  let storage: Awaited<ReturnType<typeof openPostgresStorage>>;
  let listener: PostgresListener;
  let bus: PostgresEventBus;
  beforeAll(async () => {
    storage = await openPostgresStorage({ connectionString: postgres.url, schema, logger });
    listener = await PostgresListener.open(postgres.url, logger, `vigil-listener prune ${schema.slice(-8)}`);
    // A short replay window, pruned often: the prune is seen within the test.
    bus = await PostgresEventBus.open({ db: storage.context.db, listener, schema, logger, replayWindowMs, pruneIntervalMs: 100 });
  });
  afterAll(async () => {
    await bus?.close();
    await listener?.close();
    await storage?.close();
    await dropSchema(schema, postgres.url);
  });

  const rowsOf = async (threadId: string) => {
    const { rows } = await sql<{ events: string; counter: string | null }>`
      SELECT (SELECT count(*) FROM thread_events WHERE thread_id = ${threadId}) AS events,
             (SELECT last_id FROM thread_event_counters WHERE thread_id = ${threadId}) AS counter`.execute(storage.context.db);
    return { events: Number(rows[0]!.events), counter: rows[0]!.counter === null ? null : Number(rows[0]!.counter) };
  };
  const newThread = async () => (await storage.threads.create({ id: randomUUID(), userId: 'alice', agentId: 'default', title: null }, new Date().toISOString())).id;
  const tick = (threadId: string, delta: string): VigilEvent => ({ type: 'message.delta', threadId, runId: 'r', at: new Date().toISOString(), messageId: 'm', delta });

  it('forgetting a thread deletes its events and its counter row; another thread keeps both', async () => {
    const gone = await newThread();
    const kept = await newThread();
    for (const threadId of [gone, kept]) for (let index = 0; index < 3; index += 1) bus.publish(tick(threadId, `t${index}`));
    await bus.flush();
    expect(await rowsOf(gone)).toMatchObject({ counter: 3 });
    await bus.forgetThread(gone);
    expect(await rowsOf(gone)).toEqual({ events: 0, counter: null });
    expect((await rowsOf(kept)).counter).toBe(3);
  });

  it('events past the replay window are pruned; a living thread keeps its counter (ids go on growing), a deleted one loses it', async () => {
    const living = await newThread();
    const deleted = await newThread();
    for (const threadId of [living, deleted]) for (let index = 0; index < 3; index += 1) bus.publish(tick(threadId, `t${index}`));
    await bus.flush();
    expect(await rowsOf(living)).toEqual({ events: 3, counter: 3 });
    // Deleted without forgetThread (a deletion before this was kept, or an event published after it): the prune's backstop.
    await storage.threads.delete('alice', deleted);
    await waitFor(async () => (await rowsOf(living)).events === 0 && (await rowsOf(deleted)).counter === null, 30_000, 'the prune');
    expect(await rowsOf(living)).toEqual({ events: 0, counter: 3 });
    expect(await rowsOf(deleted)).toEqual({ events: 0, counter: null });
    // A client that saw id 3 before the prune resumes after it and gets the next event, numbered 4.
    const seen: Array<{ id: number | undefined; event: VigilEvent }> = [];
    const stop = bus.subscribe(living, (event, id) => seen.push({ id, event }), { afterEventId: 3 });
    bus.publish(tick(living, 'after the prune'));
    await bus.flush();
    await waitFor(() => seen.length >= 1, 30_000, 'the event after the prune');
    expect(seen.map((entry) => entry.id)).toEqual([4]);
    stop();
  });
});
