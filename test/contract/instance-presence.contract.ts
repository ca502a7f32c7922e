/**
 * Instance presence: whether the server process with a given id still runs. A process is
 * alive to itself and, on PostgreSQL, to every other process while it runs; once it stopped
 * (or died: its session ended) it is gone for good, to whichever process asks.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { InstancePresence } from '../../src/app/instance-presence.js';
import { waitFor } from '../helpers/wait-for.js';

export interface InstancePresenceFixture {
  /** Start a process's presence (on PostgreSQL, on a shared schema). */
  open(): Promise<InstancePresence>;
  /** Several processes at once on one database (PostgreSQL): each sees the others. */
  concurrent: boolean;
  /** What a record without an owner (written before owners were recorded) is taken for. */
  ownerlessAlive: boolean;
  /** PostgreSQL: end the session of the process's presence connection (a broken connection, the process alive). */
  breakConnection?: (presence: InstancePresence) => Promise<void>;
}

export function instancePresenceContract(name: string, fixture: InstancePresenceFixture): void {
  describe(`instance presence: ${name}`, () => {
    const opened: InstancePresence[] = [];
    const open = async () => {
      const presence = await fixture.open();
      opened.push(presence);
      return presence;
    };
    afterAll(async () => {
      await Promise.all(opened.map((presence) => presence.close()));
    });

    it('a process is alive to itself; an id no process had is not; a record without an owner is taken as the adapter says', async () => {
      const presence = await open();
      expect(await presence.isAlive(presence.id)).toBe(true);
      expect(await presence.isAlive(randomUUID())).toBe(false);
      expect(await presence.isAlive(null)).toBe(fixture.ownerlessAlive);
    });

    it('a process that stopped is gone to the process that runs after it (a restart), and stays gone', async () => {
      const before = await open();
      const id = before.id;
      await before.close();
      const after = await open();
      expect(after.id).not.toBe(id);
      expect(await after.isAlive(id)).toBe(false);
      expect(await after.isAlive(id)).toBe(false);
      expect(await after.isAlive(after.id)).toBe(true);
    });

    // Only where several processes can share a database (PostgreSQL): not declared elsewhere, rather than skipped.
    if (fixture.concurrent) {
      it('processes running at once see each other alive, however often asked (asking takes nothing from the owner)', async () => {
        const [a, b] = [await open(), await open()];
        for (let round = 0; round < 3; round++) {
          expect(await b.isAlive(a.id)).toBe(true);
          expect(await a.isAlive(b.id)).toBe(true);
        }
        await a.close();
        expect(await b.isAlive(a.id)).toBe(false);
      });
    }

    const breakConnection = fixture.breakConnection;
    if (breakConnection !== undefined) {
      it('a process whose connection broke is present again once it is back', async () => {
        const [a, b] = [await open(), await open()];
        await breakConnection(a);
        await waitFor(async () => (await b.isAlive(a.id)) && (await a.isAlive(b.id)), 10_000, 'the presence connection to be back');
      });
    }
  });
}
