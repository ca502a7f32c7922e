import { pino } from 'pino';
import { InProcessEventBus } from '../../src/adapters/events/in-process-event-bus.js';
import { eventBusContract } from './event-bus.contract.js';

// One process: `a` and `b` are the same bus.
eventBusContract('in-process (SQLite, one instance)', async () => {
  const bus = new InProcessEventBus(pino({ level: 'silent' }));
  return { a: bus, b: bus, close: async () => bus.close() };
});
