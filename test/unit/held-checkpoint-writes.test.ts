/**
 * The edges of holding superseded writes (src/adapters/sql/held-checkpoint-writes.ts), on
 * the holder alone with a writer that records what it is asked to store, so that a store
 * can be made to fail at one exact call. The saver itself is checked on both databases in
 * test/contract/held-checkpoint-writes.suite.ts.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import { emptyCheckpoint, type ChannelVersions, type Checkpoint, type CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { HeldCheckpointWrites, MAX_THREADS, type DirectCheckpointWrites, type HeldPut, type HeldWrites } from '../../src/adapters/sql/held-checkpoint-writes.js';
import { HOLD_INPUT_STEP, HOLD_SUPERSEDED_WRITES } from '../../src/app/ports.js';

const INPUT: CheckpointMetadata = { source: 'input', step: -1, parents: {} };
const LOOP: CheckpointMetadata = { source: 'loop', step: 0, parents: {} };

function id(n: number): string {
  return `1f000000-0000-6000-8000-${String(n).padStart(12, '0')}`;
}

function checkpoint(n: number, versions: ChannelVersions = {}): Checkpoint {
  return { ...emptyCheckpoint(), id: id(n), channel_versions: versions };
}

/** A run's config, as RunExecution asks: `inputStep` when its input is a message. */
function asked(threadId: string, checkpointId?: string, options: { inputStep?: boolean; namespace?: string } = {}): RunnableConfig {
  return {
    configurable: {
      thread_id: threadId,
      checkpoint_ns: options.namespace ?? '',
      ...(checkpointId ? { checkpoint_id: checkpointId } : {}),
      [HOLD_SUPERSEDED_WRITES]: true,
      ...(options.inputStep ? { [HOLD_INPUT_STEP]: true } : {}),
    },
  };
}

function notAsked(threadId: string, checkpointId?: string): RunnableConfig {
  return { configurable: { thread_id: threadId, checkpoint_ns: '', ...(checkpointId ? { checkpoint_id: checkpointId } : {}) } };
}

/**
 * What was stored, in order: `put <thread> <id> parent=<id>`, `writes <thread> <task> path=<task path>`
 * and `messages <thread> <id>` (a held checkpoint's rows). `fail` makes a call fail by its entry;
 * `messagesOf: false` gives a writer that cannot store a checkpoint's messages alone.
 */
function recordingWriter(fail: (entry: string) => boolean = () => false, options: { messagesOf?: boolean } = {}) {
  const stored: string[] = [];
  const versions: ChannelVersions[] = [];
  const direct: DirectCheckpointWrites = {
    async putNow(put: HeldPut) {
      const entry = `put ${put.config.configurable?.thread_id} ${put.checkpoint.id} parent=${put.config.configurable?.checkpoint_id ?? '-'}`;
      if (fail(entry)) throw new Error(`storage failed: ${entry}`);
      stored.push(entry);
      versions.push(put.newVersions);
      return { configurable: { ...put.config.configurable, checkpoint_id: put.checkpoint.id } };
    },
    async putWritesNow(writes: HeldWrites) {
      const entry = `writes ${writes.config.configurable?.thread_id} ${writes.taskId} path=${writes.taskPath}`;
      if (fail(entry)) throw new Error(`storage failed: ${entry}`);
      stored.push(entry);
    },
  };
  if (options.messagesOf !== false) {
    direct.storeMessagesOf = async (put: HeldPut) => {
      const entry = `messages ${put.config.configurable?.thread_id} ${put.checkpoint.id}`;
      if (fail(entry)) throw new Error(`storage failed: ${entry}`);
      stored.push(entry);
    };
  }
  return { holder: new HeldCheckpointWrites(direct), stored, versions };
}

describe('held checkpoint writes, at their edges', () => {
  it('the superseding checkpoint stored, what it superseded is dropped and it names the input\'s parent', async () => {
    const { holder, stored } = recordingWriter();
    await holder.put(asked('t', id(0)), checkpoint(1), INPUT, {});
    await holder.putWrites(asked('t', id(1)), [['messages', []]], 'start-task', '~__start__');
    expect(stored).toEqual([]);
    await holder.put(asked('t', id(1)), checkpoint(2), LOOP, {});
    await holder.settle('t');
    expect(stored).toEqual([`put t ${id(2)} parent=${id(0)}`]);
  });

  it('a superseding checkpoint that cannot be stored leaves the input checkpoint and the task\'s writes (with its task path), as a saver holding nothing does', async () => {
    const { holder, stored } = recordingWriter((entry) => entry.startsWith(`put t ${id(2)}`));
    await holder.put(asked('t', id(0)), checkpoint(1), INPUT, {});
    await holder.putWrites(asked('t', id(1)), [['messages', []]], 'start-task', '~__start__');
    expect(stored).toEqual([]);
    await expect(holder.put(asked('t', id(1)), checkpoint(2), LOOP, {})).rejects.toThrow('storage failed');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, 'writes t start-task path=~__start__']);
    await holder.settle('t');
    expect(stored).toHaveLength(2);
  });

  it('HOLD_INPUT_STEP: the step that applied the input is held too, its messages stored before its put is answered; the answer\'s checkpoint is stored alone, naming the input\'s parent, with the versions the skipped checkpoints introduced', async () => {
    const { holder, stored, versions } = recordingWriter();
    const step = { inputStep: true };
    await holder.put(asked('t', id(0), step), checkpoint(1, { __start__: 2, messages: 1 }), INPUT, { __start__: 2 });
    expect(stored).toEqual([]);
    const answer = await holder.put(asked('t', id(1), step), checkpoint(2, { __start__: 2, messages: 3, 'branch:to:respond': 3 }), LOOP, { messages: 3, 'branch:to:respond': 3 });
    expect(answer.configurable?.checkpoint_id).toBe(id(2));
    expect(stored).toEqual([`messages t ${id(2)}`]);
    await holder.putWrites(asked('t', id(2), step), [['messages', []]], 'respond-task', '~respond');
    expect(stored).toEqual([`messages t ${id(2)}`]);
    await holder.put(asked('t', id(2), step), checkpoint(3, { __start__: 2, messages: 4, 'branch:to:respond': 3 }), { ...LOOP, step: 1 }, { messages: 4 });
    await holder.settle('t');
    expect(stored).toEqual([`messages t ${id(2)}`, `put t ${id(3)} parent=${id(0)}`]);
    // Its own versions, and those a skipped checkpoint introduced that it still holds unchanged.
    expect(versions).toEqual([{ messages: 4, __start__: 2, 'branch:to:respond': 3 }]);
  });

  it('HOLD_INPUT_STEP, the answer\'s checkpoint not stored: the held chain is stored as it was asked (input, then its step), then the writes', async () => {
    const { holder, stored } = recordingWriter((entry) => entry.startsWith(`put t ${id(3)}`));
    const step = { inputStep: true };
    await holder.put(asked('t', id(0), step), checkpoint(1), INPUT, {});
    await holder.put(asked('t', id(1), step), checkpoint(2), LOOP, {});
    await holder.putWrites(asked('t', id(2), step), [['messages', []]], 'respond-task', '~respond');
    await expect(holder.put(asked('t', id(2), step), checkpoint(3), LOOP, {})).rejects.toThrow('storage failed');
    expect(stored).toEqual([`messages t ${id(2)}`, `put t ${id(1)} parent=${id(0)}`, `put t ${id(2)} parent=${id(1)}`, 'writes t respond-task path=~respond']);
  });

  for (const [how, writer] of [
    ['failing', () => recordingWriter((entry) => entry.startsWith('messages '))],
    ['missing (a saver that cannot)', () => recordingWriter(() => false, { messagesOf: false })],
  ] as const) {
    it(`storeMessagesOf ${how}: the held chain is stored instead, the put still answers, and what follows is stored as it comes, naming the step as its parent (no gap)`, async () => {
      const { holder, stored } = writer();
      const step = { inputStep: true };
      await holder.put(asked('t', id(0), step), checkpoint(1), INPUT, {});
      const answer = await holder.put(asked('t', id(1), step), checkpoint(2), LOOP, {});
      expect(answer.configurable?.checkpoint_id).toBe(id(2));
      expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, `put t ${id(2)} parent=${id(1)}`]);
      await holder.putWrites(asked('t', id(2), step), [['messages', []]], 'respond-task', '~respond');
      await holder.put(asked('t', id(2), step), checkpoint(3), LOOP, {});
      await holder.settle('t');
      expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, `put t ${id(2)} parent=${id(1)}`, 'writes t respond-task path=~respond', `put t ${id(3)} parent=${id(2)}`]);
    });
  }

  it('without HOLD_INPUT_STEP (a resume), the step after the input checkpoint is stored, naming the input\'s parent', async () => {
    const { holder, stored } = recordingWriter();
    await holder.put(asked('t', id(0)), checkpoint(1), INPUT, {});
    await holder.put(asked('t', id(1)), checkpoint(2), LOOP, {});
    expect(stored).toEqual([`put t ${id(2)} parent=${id(0)}`]);
  });

  it('tasks side by side on one checkpoint: the second task\'s writes store the first\'s with them (a crash must not re-run a finished task)', async () => {
    const { holder, stored } = recordingWriter();
    await holder.put(asked('t', id(0)), checkpoint(1), LOOP, {});
    await holder.putWrites(asked('t', id(1)), [['notes', ['fast']]], 'fast', '~fast');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`]);
    await holder.putWrites(asked('t', id(1)), [['notes', ['slow']]], 'slow', '~slow');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, 'writes t fast path=~fast', 'writes t slow path=~slow']);
  });

  it('I16: an interrupt (a special channel) is never held: what is held is stored first, then it', async () => {
    const { holder, stored } = recordingWriter();
    await holder.put(asked('t', id(0)), checkpoint(1), INPUT, {});
    await holder.putWrites(asked('t', id(1)), [['messages', []]], 'start-task', '~__start__');
    await holder.putWrites(asked('t', id(1)), [['__interrupt__', [{ value: 'may I?' }]]], 'start-task', '~__start__');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, 'writes t start-task path=~__start__', 'writes t start-task path=~__start__']);
  });

  it('a put or writes outside a run that asked, or for another checkpoint, store what is held first', async () => {
    const { holder, stored } = recordingWriter();
    await holder.put(asked('t', id(0)), checkpoint(1), INPUT, {});
    await holder.putWrites(notAsked('t', id(1)), [['notes', ['elsewhere']]], 'other');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, 'writes t other path=']);
    await holder.put(asked('t', id(1)), checkpoint(2), LOOP, {});
    await holder.putWrites(asked('t', id(9)), [['notes', ['stale']]], 'stale');
    expect(stored.slice(2)).toEqual([`put t ${id(2)} parent=${id(1)}`, 'writes t stale path=']);
    await holder.put(asked('t', id(2)), checkpoint(3), INPUT, {});
    await holder.put(notAsked('t', id(3)), checkpoint(4), LOOP, {});
    expect(stored.slice(4)).toEqual([`put t ${id(3)} parent=${id(2)}`, `put t ${id(4)} parent=${id(3)}`]);
  });

  it('settle stores what the thread holds in every namespace, and nothing of another thread; a thread being deleted has nothing stored afterwards', async () => {
    const { holder, stored } = recordingWriter();
    await holder.put(asked('t', id(0)), checkpoint(1), INPUT, {});
    await holder.put(asked('t', id(0), { namespace: 'sub:1' }), checkpoint(2), INPUT, {});
    await holder.put(asked('u', id(0)), checkpoint(3), INPUT, {});
    await holder.settle('t');
    expect(stored).toEqual([`put t ${id(1)} parent=${id(0)}`, `put t ${id(2)} parent=${id(0)}`]);
    holder.forgetThread('u');
    await holder.settle('u');
    expect(stored).toHaveLength(2);
  });

  it(`past ${MAX_THREADS} threads holding, a thread's writes go straight through, and no thread's writes are stored in another's call`, async () => {
    const victim = 'victim';
    const { holder, stored } = recordingWriter((entry) => entry.startsWith(`put ${victim} `));
    await holder.put(asked(victim, id(0)), checkpoint(1), INPUT, {});
    for (let index = 1; index < MAX_THREADS; index++) await holder.put(asked(`t${index}`, id(0)), checkpoint(1), INPUT, {});
    expect(stored).toEqual([]);
    // One more thread: stored at once, alone (the victim's failing write is not its business).
    await holder.put(asked('one-more', id(0)), checkpoint(1), INPUT, {});
    expect(stored).toEqual([`put one-more ${id(1)} parent=${id(0)}`]);
    // The victim still holds its input; its own settle is where its failure surfaces.
    await expect(holder.settle(victim)).rejects.toThrow('storage failed');
  });
});
