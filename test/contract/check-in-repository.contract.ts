/**
 * Check-in records, run against every backend (check-in-repository-sqlite and -postgres):
 * a check-in is marked fired and its model call charged together, or neither (I5, I7).
 * Each case uses fresh ids, so cases share one open storage.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlCheckInRepository } from '../../src/adapters/sql/check-in-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlTimerRepository } from '../../src/adapters/sql/timer-repository.js';
import type { NewCheckIn } from '../../src/app/check-ins/check-in-ports.js';
import type { StorageTransaction } from '../../src/app/job-queue.js';

const DAY = '2026-01-01';

function at(minute: number): string {
  return new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString();
}

function newCheckIn(): NewCheckIn {
  return { id: randomUUID(), userId: 'u-' + randomUUID().slice(0, 8), agentId: 'agent', threadId: randomUUID(), dueAt: at(30), reason: 'ask how it went', setAt: at(0), setByRunId: null };
}

export function checkInRepositoryContract(name: string, open: () => Promise<SqlStorage>): void {
  describe(`check-in records on ${name}`, () => {
    let storage: SqlStorage;
    let checkIns: SqlCheckInRepository;
    let timers: SqlTimerRepository;
    beforeAll(async () => {
      storage = await open();
      checkIns = new SqlCheckInRepository(storage.context);
      timers = new SqlTimerRepository(storage.context);
    });
    afterAll(async () => {
      await storage?.close();
    });

    const created = (checkIn: NewCheckIn) => checkIns.create(checkIn, async () => undefined);
    const charge = (checkIn: NewCheckIn, limit: number) => (within: StorageTransaction) => timers.reserveModelCalls(checkIn.userId, checkIn.agentId, DAY, 1, limit, { within });

    it('I5, I7: firing a pending check-in marks it fired and charges its call, together', async () => {
      const checkIn = newCheckIn();
      await created(checkIn);
      const firing = await checkIns.fire(checkIn.id, { runId: 'run-1', firedAt: at(30) }, at(30), charge(checkIn, 5));
      expect(firing).toMatchObject({ outcome: 'fired', checkIn: { id: checkIn.id, state: 'fired', runId: 'run-1', firedAt: at(30), stateReason: null } });
      expect(await checkIns.get(checkIn.id)).toMatchObject({ state: 'fired', runId: 'run-1' });
      expect(await timers.modelCallsUsed(checkIn.userId, checkIn.agentId, DAY)).toBe(1);
      expect(await checkIns.countFiredBetween(checkIn.threadId, at(0), at(60))).toBe(1);
      // A second delivery finds it fired: nothing more is charged.
      expect(await checkIns.fire(checkIn.id, { runId: 'run-2', firedAt: at(31) }, at(31), charge(checkIn, 5))).toEqual({ outcome: 'not_pending' });
      expect(await timers.modelCallsUsed(checkIn.userId, checkIn.agentId, DAY)).toBe(1);
    });

    it('I5: a check-in cancelled before it is fired charges nothing', async () => {
      const checkIn = newCheckIn();
      await created(checkIn);
      expect(await checkIns.transition(checkIn.id, 'pending', 'cancelled', { stateReason: 'cancelled by the person' }, at(29))).toMatchObject({ state: 'cancelled' });
      let charged = false;
      const firing = await checkIns.fire(checkIn.id, { runId: 'run-1', firedAt: at(30) }, at(30), async (within) => (charged = await charge(checkIn, 5)(within)));
      expect(firing).toEqual({ outcome: 'not_pending' });
      expect(charged).toBe(false);
      expect(await checkIns.get(checkIn.id)).toMatchObject({ state: 'cancelled', runId: null, firedAt: null });
      expect(await timers.modelCallsUsed(checkIn.userId, checkIn.agentId, DAY)).toBe(0);
    });

    it('I5: a spent budget refuses the firing: the check-in stays pending, nothing is counted', async () => {
      const checkIn = newCheckIn();
      await created(checkIn);
      expect(await timers.reserveModelCalls(checkIn.userId, checkIn.agentId, DAY, 1, 1)).toBe(true); // the day's one call, spent elsewhere
      expect(await checkIns.fire(checkIn.id, { runId: 'run-1', firedAt: at(30) }, at(30), charge(checkIn, 1))).toEqual({ outcome: 'refused' });
      expect(await checkIns.get(checkIn.id)).toMatchObject({ state: 'pending', runId: null, firedAt: null });
      expect(await timers.modelCallsUsed(checkIn.userId, checkIn.agentId, DAY)).toBe(1);
      // Still pending: the person can cancel it.
      expect(await checkIns.transition(checkIn.id, 'pending', 'cancelled', {}, at(31))).toMatchObject({ state: 'cancelled' });
    });

    it('I5: a refusal after the charge was counted rolls the charge back with the mark (one transaction)', async () => {
      const checkIn = newCheckIn();
      await created(checkIn);
      const firing = await checkIns.fire(checkIn.id, { runId: 'run-1', firedAt: at(30) }, at(30), async (within) => {
        expect(await charge(checkIn, 5)(within)).toBe(true);
        return false;
      });
      expect(firing).toEqual({ outcome: 'refused' });
      expect(await checkIns.get(checkIn.id)).toMatchObject({ state: 'pending', runId: null });
      expect(await timers.modelCallsUsed(checkIn.userId, checkIn.agentId, DAY)).toBe(0);
    });
  });
}
