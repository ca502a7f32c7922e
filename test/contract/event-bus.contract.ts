/**
 * One contract for every EventBus (I15): a subscriber gets every event of its thread, in
 * order, once, with ids that grow; it resumes after an id; a large event arrives whole.
 * `a` and `b` are two instances of the bus (two server processes on PostgreSQL; the same
 * bus in-process, where there is one process).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../src/app/ports.js';
import type { VigilEvent } from '../../src/domain/events.js';
import { waitFor } from '../helpers/wait-for.js';

export interface EventBusFixture {
  a: EventBus;
  b: EventBus;
  /** PostgreSQL only: cut `b`'s listening connection (it reconnects on its own). */
  cutListener?: () => Promise<void>;
  close(): Promise<void>;
}

interface Seen {
  id: number | undefined;
  event: VigilEvent;
}

export function collect(bus: EventBus, threadId: string, afterEventId?: number): { seen: Seen[]; stop: () => void } {
  const seen: Seen[] = [];
  const stop = bus.subscribe(threadId, (event, id) => seen.push({ id, event }), { afterEventId });
  return { seen, stop };
}

function delta(threadId: string, index: number, text = `t${index}`): VigilEvent {
  return { type: 'message.delta', threadId, runId: 'r', at: new Date().toISOString(), messageId: 'm', delta: text };
}

const texts = (seen: Seen[]) => seen.map((entry) => (entry.event.type === 'message.delta' ? entry.event.delta : entry.event.type));
const increasing = (seen: Seen[]) => seen.every((entry, index) => entry.id !== undefined && (index === 0 || entry.id > seen[index - 1]!.id!));

/** What the buses under test can do, known when the tests are declared (a test a bus cannot take is not declared, rather than skipped). */
export interface EventBusCapabilities {
  /** Its listening connection can be cut (PostgreSQL): the fixture has `cutListener`. */
  cutListener: boolean;
}

export function eventBusContract(name: string, open: () => Promise<EventBusFixture>, capabilities: EventBusCapabilities): void {
  describe(`event bus contract: ${name}`, () => {
    let fixture: EventBusFixture;
    beforeAll(async () => {
      fixture = await open();
    });
    afterAll(async () => {
      await fixture?.close();
    });

    it('I15: every event of a thread reaches a subscriber on another instance, in order, once, with growing ids; other threads stay apart', async () => {
      const thread = randomUUID();
      const other = randomUUID();
      const onB = collect(fixture.b, thread);
      const otherOnB = collect(fixture.b, other);
      // Let a subscription settle on the bus's listener: ids are what proves order, not timing.
      for (let index = 0; index < 300; index += 1) {
        fixture.a.publish(delta(thread, index));
        if (index % 3 === 0) fixture.a.publish(delta(other, index));
      }
      await fixture.a.flush?.();
      await waitFor(() => onB.seen.length >= 300 && otherOnB.seen.length >= 100, 30_000, 'every event on the other instance');
      expect(texts(onB.seen)).toEqual(Array.from({ length: 300 }, (_, index) => `t${index}`));
      expect(increasing(onB.seen)).toBe(true);
      expect(otherOnB.seen.every((entry) => entry.event.threadId === other)).toBe(true);
      expect(otherOnB.seen).toHaveLength(100);
      onB.stop();
      otherOnB.stop();
    });

    it('I15: two instances publishing on one thread: both subscribers see one order, the same ids, each event once', async () => {
      const thread = randomUUID();
      const onA = collect(fixture.a, thread);
      const onB = collect(fixture.b, thread);
      for (let index = 0; index < 200; index += 1) (index % 2 === 0 ? fixture.a : fixture.b).publish(delta(thread, index));
      await Promise.all([fixture.a.flush?.(), fixture.b.flush?.()]);
      await waitFor(() => onA.seen.length >= 200 && onB.seen.length >= 200, 30_000, '200 events on both');
      expect(onA.seen).toHaveLength(200);
      expect(new Set(texts(onA.seen)).size).toBe(200);
      expect(increasing(onA.seen)).toBe(true);
      expect(onB.seen.map((entry) => [entry.id, texts([entry])[0]])).toEqual(onA.seen.map((entry) => [entry.id, texts([entry])[0]]));
      // Each publisher's own events keep its order.
      const evens = texts(onA.seen).filter((text) => Number(text.slice(1)) % 2 === 0);
      expect(evens).toEqual(Array.from({ length: 100 }, (_, index) => `t${index * 2}`));
      onA.stop();
      onB.stop();
    });

    it('I15: an event larger than a NOTIFY payload (8,000 bytes) arrives whole', async () => {
      const thread = randomUUID();
      const onB = collect(fixture.b, thread);
      const big = 'x'.repeat(50_000) + 'é'.repeat(3_000);
      fixture.a.publish(delta(thread, 0, 'before'));
      fixture.a.publish({ type: 'message.end', threadId: thread, runId: 'r', at: new Date().toISOString(), message: { id: 'm', role: 'assistant', content: big, createdAt: new Date().toISOString(), metadata: { note: 'large' } } });
      fixture.a.publish(delta(thread, 2, 'after'));
      await fixture.a.flush?.();
      await waitFor(() => onB.seen.length >= 3, 30_000, 'the large event');
      expect(texts(onB.seen)).toEqual(['before', 'message.end', 'after']);
      const end = onB.seen[1]!.event;
      expect(end.type === 'message.end' && end.message.content).toBe(big);
      expect(increasing(onB.seen)).toBe(true);
      onB.stop();
    });

    it('I15: a subscriber that comes back with the last id it saw gets what it missed, in order, then live events, nothing twice', async () => {
      const thread = randomUUID();
      const first = collect(fixture.b, thread);
      for (let index = 0; index < 10; index += 1) fixture.a.publish(delta(thread, index));
      await fixture.a.flush?.();
      await waitFor(() => first.seen.length >= 10, 30_000, 'the first ten');
      first.stop();
      const lastSeen = first.seen[4]!.id!; // it had taken in only five when its connection dropped
      for (let index = 10; index < 20; index += 1) fixture.a.publish(delta(thread, index));
      await fixture.a.flush?.();
      const resumed = collect(fixture.b, thread, lastSeen);
      await waitFor(() => resumed.seen.length >= 15, 30_000, 'the missed events');
      for (let index = 20; index < 25; index += 1) fixture.a.publish(delta(thread, index));
      await fixture.a.flush?.();
      await waitFor(() => resumed.seen.length >= 20, 30_000, 'the live events after the replay');
      expect(texts(resumed.seen)).toEqual(Array.from({ length: 20 }, (_, index) => `t${index + 5}`));
      expect(increasing(resumed.seen)).toBe(true);
      expect(resumed.seen[0]!.id).toBeGreaterThan(lastSeen);
      resumed.stop();
    });

    it('I15: a subscriber resuming after an id is told when the replay is over: every missed event came before, the live ones after, once', async () => {
      const thread = randomUUID();
      for (let index = 0; index < 8; index += 1) fixture.a.publish(delta(thread, index));
      await fixture.a.flush?.();
      const seen: Seen[] = [];
      let seenAtReplayEnd: number | undefined;
      let calls = 0;
      const stop = fixture.b.subscribe(thread, (event, id) => seen.push({ id, event }), {
        afterEventId: 0,
        onReplayed: () => {
          calls += 1;
          seenAtReplayEnd = seen.length;
        },
      });
      await waitFor(() => calls > 0, 30_000, 'the end of the replay');
      expect(seenAtReplayEnd).toBe(8);
      fixture.a.publish(delta(thread, 8));
      await fixture.a.flush?.();
      await waitFor(() => seen.length >= 9, 30_000, 'the live event');
      expect(texts(seen)).toEqual(Array.from({ length: 9 }, (_, index) => `t${index}`));
      expect(calls).toBe(1);
      stop();
      // A thread with nothing to replay: told all the same.
      let told = false;
      const none = fixture.b.subscribe(randomUUID(), () => undefined, { afterEventId: 0, onReplayed: () => void (told = true) });
      await waitFor(() => told, 30_000, 'an empty replay to be over');
      none();
    });

    it('I15: a live subscriber gets only what is published after it subscribed, even as another subscriber of the thread resumes from an old id', async () => {
      const thread = randomUUID();
      // A tab already open on the thread sees five events go by.
      const open = collect(fixture.b, thread);
      for (let index = 0; index < 5; index += 1) fixture.a.publish(delta(thread, index, `old${index}`));
      await fixture.a.flush?.();
      await waitFor(() => open.seen.length >= 5, 30_000, 'the first five');
      // Another tab loads the history and listens live; a third comes back after the first event it saw.
      const live = collect(fixture.b, thread);
      const resumed = collect(fixture.b, thread, open.seen[0]!.id!);
      await waitFor(() => resumed.seen.length >= 4, 30_000, 'the resumed replay');
      fixture.a.publish(delta(thread, 5, 'new'));
      await fixture.a.flush?.();
      await waitFor(() => live.seen.length >= 1 && resumed.seen.length >= 5 && open.seen.length >= 6, 30_000, 'the live event');
      expect(texts(resumed.seen)).toEqual(['old1', 'old2', 'old3', 'old4', 'new']);
      expect(texts(live.seen)).toEqual(['new']);
      expect(texts(open.seen)).toEqual(['old0', 'old1', 'old2', 'old3', 'old4', 'new']);
      for (const subscription of [open, live, resumed]) subscription.stop();
    });

    it('a deleted thread is forgotten: nothing of it is replayed, anywhere; other threads keep theirs', async () => {
      const gone = randomUUID();
      const kept = randomUUID();
      for (let index = 0; index < 5; index += 1) {
        fixture.a.publish(delta(gone, index));
        fixture.a.publish(delta(kept, index));
      }
      await fixture.a.flush?.();
      const before = collect(fixture.b, gone, 0);
      await waitFor(() => before.seen.length >= 5, 30_000, 'the thread\'s events, before it is deleted');
      before.stop();
      await fixture.a.forgetThread(gone);
      const after = collect(fixture.b, gone, 0);
      // A later event (one published as the thread went) is all a resuming subscriber gets: no replay of the old ones.
      fixture.a.publish(delta(gone, 99, 'late'));
      await fixture.a.flush?.();
      await waitFor(() => after.seen.length >= 1, 30_000, 'the late event');
      expect(texts(after.seen)).toEqual(['late']);
      const other = collect(fixture.b, kept, 0);
      await waitFor(() => other.seen.length >= 5, 30_000, 'the other thread\'s events');
      expect(texts(other.seen)).toEqual(['t0', 't1', 't2', 't3', 't4']);
      after.stop();
      other.stop();
    });

    // Only a bus with a listening connection to cut (PostgreSQL).
    if (capabilities.cutListener) {
      it('I15: events published while an instance\'s listening connection was cut still reach its subscribers, in order, once', async () => {
        const thread = randomUUID();
        const onB = collect(fixture.b, thread);
        fixture.a.publish(delta(thread, 0));
        await fixture.a.flush?.();
        await waitFor(() => onB.seen.length >= 1, 30_000, 'the first event');
        await fixture.cutListener!();
        for (let index = 1; index < 30; index += 1) fixture.a.publish(delta(thread, index));
        await fixture.a.flush?.();
        await waitFor(() => onB.seen.length >= 30, 30_000, 'the events sent while the listener was away');
        for (let index = 30; index < 35; index += 1) fixture.a.publish(delta(thread, index));
        await fixture.a.flush?.();
        await waitFor(() => onB.seen.length >= 35, 30_000, 'live events after the reconnect');
        expect(texts(onB.seen)).toEqual(Array.from({ length: 35 }, (_, index) => `t${index}`));
        expect(increasing(onB.seen)).toBe(true);
        onB.stop();
      });
    }
  });
}
