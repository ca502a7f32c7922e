import { InProcessInstancePresence } from '../../src/app/instance-presence.js';
import { instancePresenceContract } from './instance-presence.contract.js';

// One process serves a SQLite database: only this process is alive; a record without an owner was written by an earlier one.
instancePresenceContract('in-process (SQLite)', { open: async () => new InProcessInstancePresence(), concurrent: false, ownerlessAlive: false });
