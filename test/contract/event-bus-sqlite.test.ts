import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { InProcessEventBus } from '../../src/adapters/events/in-process-event-bus.js';
import { waitFor } from '../helpers/wait-for.js';
import { eventBusContract } from './event-bus.contract.js';

// One process: `a` and `b` are the same bus.
eventBusContract('in-process (SQLite, one instance)', async () => {
  const bus = new InProcessEventBus(pino({ level: 'silent' }));
  return { a: bus, b: bus, close: async () => bus.close() };
}, { cutListener: false });

describe('in-process bus: replay buffers', () => {
  const event = (threadId: string, text: string) => ({ type: 'message.delta' as const, threadId, runId: 'run', at: new Date().toISOString(), messageId: 'm', delta: text });
  const replayed = (bus: InProcessEventBus, threadId: string) => {
    const seen: string[] = [];
    bus.subscribe(threadId, (kept) => void seen.push((kept as { delta: string }).delta), { afterEventId: 0 })();
    return seen;
  };

  it('I15: a thread quiet for the whole window loses its buffer when any thread publishes; a recent one keeps it', async () => {
    const bus = new InProcessEventBus(pino({ level: 'silent' }), { replayWindowMs: 40 });
    bus.publish(event('quiet', 'old'));
    const published = Date.now();
    await waitFor(() => Date.now() - published > 60, 5_000, 'the window to pass');
    bus.publish(event('recent', 'a'));
    bus.publish(event('busy', 'b'));
    expect(replayed(bus, 'quiet')).toEqual([]);
    expect(replayed(bus, 'recent')).toEqual(['a']);
    expect(replayed(bus, 'busy')).toEqual(['b']);
  });

  it('past its total, the threads quiet the longest lose their buffers first', () => {
    const bus = new InProcessEventBus(pino({ level: 'silent' }), { totalLimit: 4 });
    for (const threadId of ['first', 'second', 'third']) {
      bus.publish(event(threadId, `${threadId}-1`));
      bus.publish(event(threadId, `${threadId}-2`));
    }
    expect(replayed(bus, 'first')).toEqual([]);
    expect(replayed(bus, 'second')).toEqual(['second-1', 'second-2']);
    expect(replayed(bus, 'third')).toEqual(['third-1', 'third-2']);
  });
});
