/**
 * Singleton roles: one holder at a time; a second instance waits and takes the role once
 * the first lets go (or, on PostgreSQL, once its connection dies: `loseHolder`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SingletonRoles } from '../../src/app/singleton-role.js';
import { waitFor } from '../helpers/wait-for.js';

export interface SingletonRolesFixture {
  /** Two instances (the same one in-process, where there is one process). */
  a: SingletonRoles;
  b: SingletonRoles;
  /** PostgreSQL only: end the session of `a`'s role connection, as a kill -9 would. */
  loseHolder?: (role: string) => Promise<void>;
  close(): Promise<void>;
}

/** Whether a holder can die apart from the test's process (PostgreSQL: its session ends): the fixture then has `loseHolder`. Known when the tests are declared, so a test that cannot apply is not declared, rather than skipped. */
export function singletonRolesContract(name: string, open: () => Promise<SingletonRolesFixture>, capabilities: { loseHolder: boolean }): void {
  describe(`singleton roles: ${name}`, () => {
    let fixture: SingletonRolesFixture;
    beforeAll(async () => {
      fixture = await open();
    });
    afterAll(async () => {
      await fixture?.close();
    });

    it('one holder at a time: the second waits, and gets the role when the first releases it', async () => {
      const stop = new AbortController();
      const first = await fixture.a.acquire('role-one', stop.signal);
      expect(first).toBeDefined();
      expect(fixture.a.held()).toContain('role-one');
      let second: Awaited<ReturnType<SingletonRoles['acquire']>>;
      const waiting = fixture.b.acquire('role-one', stop.signal).then((lease) => (second = lease));
      await new Promise((resolve) => setImmediate(resolve));
      expect(second).toBeUndefined();
      await first!.release();
      await waiting;
      expect(second).toBeDefined();
      expect(fixture.b.held()).toContain('role-one');
      await second!.release();
      expect(fixture.b.held()).not.toContain('role-one');
    });

    it('a waiter gives up when told to stop', async () => {
      const first = await fixture.a.acquire('role-two', new AbortController().signal);
      const stop = new AbortController();
      const waiting = fixture.b.acquire('role-two', stop.signal);
      stop.abort();
      expect(await waiting).toBeUndefined();
      await first!.release();
    });

    // Only where a holder can die apart from this process (PostgreSQL).
    if (capabilities.loseHolder) {
      it('a holder that dies loses the role, is told so, and another instance takes it over', async () => {
        const first = await fixture.a.acquire('role-three', new AbortController().signal);
        const taken = fixture.b.acquire('role-three', new AbortController().signal);
        await fixture.loseHolder!('role-three');
        await waitFor(() => first!.lost.aborted, 10_000, 'the holder to learn it lost the role');
        expect(fixture.a.held()).not.toContain('role-three');
        const second = await taken;
        expect(second).toBeDefined();
        expect(fixture.b.held()).toContain('role-three');
        await second!.release();
        await first!.release();
      });
    }
  });
}
