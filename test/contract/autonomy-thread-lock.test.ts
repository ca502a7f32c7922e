/**
 * The thread lock (I8): one run per thread, within a process (FIFO) and across
 * instances on one PostgreSQL database (advisory locks), and yield requests that reach
 * the holder wherever it runs.
 */
import { pino } from 'pino';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresThreadLocks } from '../../src/adapters/locks/postgres-thread-locks.js';
import { InProcessThreadLocks, type ThreadLockService } from '../../src/app/thread-lock.js';
import { describePostgres, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait-for.js';

const logger = pino({ level: 'silent' });
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));
const postgres = await postgresTarget();

async function waitUntil(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out');
    await sleep(10);
  }
}

describe('in-process thread lock', () => {
  it('I8: hands the lock out in arrival order; tryAcquire gives up while it is held or waited for', async () => {
    const locks = new InProcessThreadLocks();
    const order: string[] = [];
    const first = await locks.acquire('t');
    const second = locks.acquire('t').then(async (lease) => {
      order.push('second');
      await lease.release();
    });
    const third = locks.acquire('t').then(async (lease) => {
      order.push('third');
      await lease.release();
    });
    expect(await locks.tryAcquire('t')).toBeUndefined();
    expect(await locks.tryAcquire('other')).toBeDefined();
    order.push('first');
    await first.release();
    await Promise.all([second, third]);
    expect(order).toEqual(['first', 'second', 'third']);
    const free = await locks.tryAcquire('t');
    expect(free).toBeDefined();
    await free!.release();
  });

  it('I8: a wait called off ends at once and keeps nobody waiting; the lock passes to the next in line', async () => {
    const locks = new InProcessThreadLocks();
    const first = await locks.acquire('t');
    const calledOff = new AbortController();
    const abandoned = locks.acquire('t', calledOff.signal);
    const order: string[] = [];
    const third = locks.acquire('t').then(async (lease) => {
      order.push('third');
      await lease.release();
    });
    calledOff.abort(new Error('called off'));
    await expect(abandoned).rejects.toThrow('called off');
    await first.release();
    await third;
    expect(order).toEqual(['third']);
    // Nothing is left holding the lock: the abandoned place released what it was given.
    const free = await locks.tryAcquire('t');
    expect(free).toBeDefined();
    await free!.release();
    // Already called off: refused without queueing.
    await expect(locks.acquire('t', calledOff.signal)).rejects.toThrow('called off');
    expect(locks.isLocked('t')).toBe(false);
  });

  it('I8: a yield request reaches the holder, and not a lease granted after it', async () => {
    const locks = new InProcessThreadLocks();
    const lease = await locks.acquire('t');
    await locks.requestYield('t');
    expect(lease.yieldRequested.aborted).toBe(true);
    await lease.release();
    const next = await locks.acquire('t');
    expect(next.yieldRequested.aborted).toBe(false);
    await next.release();
  });
});

describePostgres('PostgreSQL thread lock across instances', postgres, () => {
  const schema = randomSchemaName();
  let a: ThreadLockService;
  let b: ThreadLockService;

  beforeAll(async () => {
    a = await PostgresThreadLocks.open({ connectionString: postgres.url, schema, logger });
    b = await PostgresThreadLocks.open({ connectionString: postgres.url, schema, logger });
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it('I8: one holder per thread across instances; the other waits, then gets it', async () => {
    const lease = await a.acquire('thread-1');
    expect(await b.tryAcquire('thread-1')).toBeUndefined();
    const other = await b.tryAcquire('thread-2');
    expect(other).toBeDefined();
    await other!.release();
    let acquired = false;
    const waiting = b.acquire('thread-1').then((next) => {
      acquired = true;
      return next;
    });
    await sleep(200);
    expect(acquired).toBe(false);
    await lease.release();
    const next = await waiting;
    expect(acquired).toBe(true);
    expect(await a.tryAcquire('thread-1')).toBeUndefined();
    await next.release();
  });

  it('I8: a yield request from another instance reaches the holder (LISTEN/NOTIFY)', async () => {
    const lease = await a.acquire('thread-3');
    await b.requestYield('thread-3');
    await waitUntil(() => lease.yieldRequested.aborted);
    await lease.release();
  });

  it('keeps deployments apart: another schema locks the same thread id independently', async () => {
    const elsewhere = await PostgresThreadLocks.open({ connectionString: postgres.url, schema: randomSchemaName(), logger });
    try {
      const lease = await a.acquire('thread-4');
      const there = await elsewhere.tryAcquire('thread-4');
      expect(there).toBeDefined();
      await elsewhere.requestYield('thread-4');
      await sleep(300);
      expect(lease.yieldRequested.aborted).toBe(false);
      await there!.release();
      await lease.release();
    } finally {
      await elsewhere.close();
    }
  });

  it('I8: a wait for a thread another instance holds, called off, ends at once and is cancelled in PostgreSQL', async () => {
    const lease = await a.acquire('thread-6');
    const calledOff = new AbortController();
    const waiting = b.acquire('thread-6', calledOff.signal);
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    try {
      // b's connection waits in PostgreSQL for a's advisory lock.
      const lockWaits = async () =>
        (
          await admin.query(`SELECT count(*)::int AS waits FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock%'`, [
            (b as PostgresThreadLocks).applicationName,
          ])
        ).rows[0].waits as number;
      await waitFor(async () => (await lockWaits()) === 1, 5_000, "b's lock wait in PostgreSQL");
      calledOff.abort(new Error('called off'));
      await expect(waiting).rejects.toThrow('called off');
      await waitFor(async () => (await lockWaits()) === 0, 5_000, "b's lock wait to be cancelled");
      // a still holds the thread: calling off b's wait did not touch it.
      expect(await b.tryAcquire('thread-6')).toBeUndefined();
      await lease.release();
      // And b's abandoned place does not hold it either: its wait answered at once, and what
      // it had taken in this process (its place in the local queue) is let go right after.
      let next: Awaited<ReturnType<typeof b.tryAcquire>>;
      await waitFor(async () => (next = await b.tryAcquire('thread-6')) !== undefined, 5_000, 'b to take the thread a released');
      await next!.release();
    } finally {
      await admin.end();
      await lease.release();
    }
  });

  it('I8: a holder whose connection dies (its process was killed) no longer holds the lock', async () => {
    const lease = await a.acquire('thread-5');
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    try {
      // The session holding the advisory lock, as if its process had died.
      const { rows } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::oid AND objid = (hashtext($2)::bigint & 4294967295)::oid`,
        [0x76676c31, `${schema}:thread-5`],
      );
      expect(rows).toHaveLength(1);
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      let taken: Awaited<ReturnType<ThreadLockService['tryAcquire']>>;
      const start = Date.now();
      while (!(taken = await b.tryAcquire('thread-5'))) {
        if (Date.now() - start > 5_000) throw new Error('the lock was not released');
        await sleep(50);
      }
      await taken.release();
    } finally {
      await admin.end();
      await lease.release(); // its connection is gone: released by dropping it, without error
    }
  });
});
