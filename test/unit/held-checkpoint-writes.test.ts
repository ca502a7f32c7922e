/**
 * The edges of holding superseded writes (src/adapters/sql/held-checkpoint-writes.ts), on
 * the holder alone with a writer that records what it is asked to store, so that a store
 * can be made to fail at one exact call. The savers themselves are checked on both
 * databases in test/contract/held-checkpoint-writes.suite.ts.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import { emptyCheckpoint, type CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { HeldCheckpointWrites, MAX_THREADS, type HeldPut, type HeldWrites } from '../../src/adapters/sql/held-checkpoint-writes.js';
import { HOLD_SUPERSEDED_WRITES } from '../../src/app/ports.js';

const INPUT: CheckpointMetadata = { source: 'input', step: -1, parents: {} };
const LOOP: CheckpointMetadata = { source: 'loop', step: 0, parents: {} };

function id(n: number): string {
  return `1f000000-0000-6000-8000-${String(n).padStart(12, '0')}`;
}

function asked(threadId: string, checkpointId?: string): RunnableConfig {
  return { configurable: { thread_id: threadId, checkpoint_ns: '', ...(checkpointId ? { checkpoint_id: checkpointId } : {}), [HOLD_SUPERSEDED_WRITES]: true } };
}

/** What was stored, in order: `put <thread> <id> parent=<id>` and `writes <thread> <task>`. */
function recordingWriter(fail: (entry: string) => boolean = () => false) {
  const stored: string[] = [];
  const holder = new HeldCheckpointWrites({
    async putNow(put: HeldPut) {
      const entry = `put ${put.config.configurable?.thread_id} ${put.checkpoint.id} parent=${put.config.configurable?.checkpoint_id ?? '-'}`;
      if (fail(entry)) throw new Error(`storage failed: ${entry}`);
      stored.push(entry);
      return { configurable: { ...put.config.configurable, checkpoint_id: put.checkpoint.id } };
    },
    async putWritesNow(writes: HeldWrites) {
      const entry = `writes ${writes.config.configurable?.thread_id} ${writes.taskId}`;
      if (fail(entry)) throw new Error(`storage failed: ${entry}`);
      stored.push(entry);
    },
  });
  return { holder, stored };
}

describe('held checkpoint writes, at their edges', () => {
  it('a superseding checkpoint that cannot be stored leaves the input checkpoint and the task\'s writes, as a saver holding nothing does', async () => {
    const { holder, stored } = recordingWriter((entry) => entry.startsWith(`put t ${id(2)}`));
    await holder.put(asked('t', id(0)), { ...emptyCheckpoint(), id: id(1) }, INPUT, {});
    await holder.putWrites(asked('t', id(1)), [['messages', []]], 'start-task');
    expect(stored).toEqual([]);
    await expect(holder.put(asked('t', id(1)), { ...emptyCheckpoint(), id: id(2) }, LOOP, {})).rejects.toThrow('storage failed');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, 'writes t start-task']);
    await holder.settle('t');
    expect(stored).toHaveLength(2);
  });

  it('the superseding checkpoint stored, what it superseded is dropped and it names the input\'s parent', async () => {
    const { holder, stored } = recordingWriter();
    await holder.put(asked('t', id(0)), { ...emptyCheckpoint(), id: id(1) }, INPUT, {});
    await holder.putWrites(asked('t', id(1)), [['messages', []]], 'start-task');
    await holder.put(asked('t', id(1)), { ...emptyCheckpoint(), id: id(2) }, LOOP, {});
    await holder.settle('t');
    expect(stored).toEqual([`put t ${id(2)} parent=${id(0)}`]);
  });

  it('tasks side by side on one checkpoint: the second task\'s writes store the first\'s with them (a crash must not re-run a finished task)', async () => {
    const { holder, stored } = recordingWriter();
    await holder.put(asked('t', id(0)), { ...emptyCheckpoint(), id: id(1) }, LOOP, {});
    await holder.putWrites(asked('t', id(1)), [['notes', ['fast']]], 'fast');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`]);
    await holder.putWrites(asked('t', id(1)), [['notes', ['slow']]], 'slow');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, 'writes t fast', 'writes t slow']);
  });

  it(`past ${MAX_THREADS} threads holding, a thread's writes go straight through, and no thread's writes are stored in another's call`, async () => {
    const victim = 'victim';
    const { holder, stored } = recordingWriter((entry) => entry.startsWith(`put ${victim} `));
    await holder.put(asked(victim, id(0)), { ...emptyCheckpoint(), id: id(1) }, INPUT, {});
    for (let index = 1; index < MAX_THREADS; index++) await holder.put(asked(`t${index}`, id(0)), { ...emptyCheckpoint(), id: id(1) }, INPUT, {});
    expect(stored).toEqual([]);
    // One more thread: stored at once, alone (the victim's failing write is not its business).
    await holder.put(asked('one-more', id(0)), { ...emptyCheckpoint(), id: id(1) }, INPUT, {});
    expect(stored).toEqual([`put one-more ${id(1)} parent=${id(0)}`]);
    // The victim still holds its input; its own settle is where its failure surfaces.
    await expect(holder.settle(victim)).rejects.toThrow('storage failed');
  });
});
