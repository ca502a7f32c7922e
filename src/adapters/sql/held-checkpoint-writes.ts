/**
 * Fewer checkpoint writes per turn, with nothing a crash could need left unwritten.
 *
 * With LangGraph's `durability: 'sync'` a chat turn writes three checkpoints and two sets
 * of pending writes: the input checkpoint (the previous state plus the input, not yet
 * applied), the `__start__` task's writes, the checkpoint after `__start__`, the reply
 * node's writes, and the checkpoint after it. Two of those five exist only for a crash in
 * the moment between a task's end and the next checkpoint, and the next checkpoint holds
 * all they say:
 *
 * - The input checkpoint is superseded a moment later by the checkpoint after
 *   `__start__`, which holds the input applied. Nothing is announced in between (a
 *   person's message is acknowledged only once a checkpoint that holds it is stored, see
 *   RunExecution.onValues), so a crash before that checkpoint loses only an input that
 *   was never acknowledged, as a crash before the input checkpoint always could. The
 *   checkpoint after `__start__` then names the input checkpoint's parent as its own, so
 *   the chain of stored checkpoints has no gap.
 * - A finished task's writes are superseded by the next checkpoint when the task was the
 *   step's only one (every vigil graph runs one node per step). A crash in between re-runs
 *   the task, as `durability: 'async'` or `'exit'` would. A second task's writes on the same
 *   checkpoint (tasks side by side) store what is held with them.
 *
 * So a saver holds those two in memory, and drops them when the checkpoint that supersedes
 * them is stored. Anything else first writes what is held for the thread, then itself: an
 * interrupt, an error, a resume value, a write for another checkpoint, a put outside a run
 * that asked for this. And the run settles the thread when an attempt ends (a cancel or a
 * failure before the next checkpoint), which writes what is held, so a run that stops early
 * leaves exactly what it left before; so does one whose superseding checkpoint cannot be
 * stored (what it superseded is stored instead). A thread's held writes are only ever stored
 * in that thread's own calls: past MAX_THREADS threads holding, a thread holds nothing.
 *
 * A run whose input is a message may ask for one more (`HOLD_INPUT_STEP`): the checkpoint
 * after the step that applied the input (LangGraph's `__start__` task) is superseded too, by
 * the checkpoint after the node that answers. What it adds to the thread's history (the
 * person's message) is written at once (`storeMessagesOf`), before the put is answered, so
 * the message is durable and acknowledged as before; the checkpoint itself is held. A crash
 * before the answer's checkpoint then leaves the message in history and in no checkpoint:
 * the next run of the thread takes it first (ThreadSaver.unappliedMessages). A chat turn
 * stores one checkpoint.
 *
 * Only runs that ask for it (`HOLD_SUPERSEDED_WRITES` in their configurable, set by the run
 * coordinator) are treated so: LangGraph's own conformance suite and any other caller see a
 * saver that writes every call through.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import { WRITES_IDX_MAP, type ChannelVersions, type Checkpoint, type CheckpointMetadata, type PendingWrite } from '@langchain/langgraph-checkpoint';
import { HOLD_INPUT_STEP, HOLD_SUPERSEDED_WRITES } from '../../app/ports.js';

export interface HeldPut {
  config: RunnableConfig;
  checkpoint: Checkpoint;
  metadata: CheckpointMetadata;
  newVersions: ChannelVersions;
}

export interface HeldWrites {
  config: RunnableConfig;
  writes: PendingWrite[];
  taskId: string;
  taskPath: string;
}

export type HeldItem = { put: HeldPut } | { writes: HeldWrites };

/** What to store: first what was held (in the order it was asked), then the call itself unless it is held. */
interface StoreNow<T> {
  flush: HeldItem[];
  call: T | undefined;
  /** What the call supersedes (dropped once the call is stored; stored instead if the call fails). */
  superseded?: Held;
  /** A checkpoint held whose history rows must be written before the put is answered. */
  messagesOf?: HeldPut;
}

/** The saver's own writes, straight to its tables. */
export interface DirectCheckpointWrites {
  putNow(put: HeldPut): Promise<RunnableConfig>;
  putWritesNow(writes: HeldWrites): Promise<void>;
  /** The rows a checkpoint adds to the thread's messages, without the checkpoint. */
  storeMessagesOf?(put: HeldPut): Promise<void>;
}

interface Held {
  /** The checkpoint the held items belong to (the last held checkpoint's id, or the last one stored). */
  checkpointId: string;
  /** Held checkpoints, as they were asked, oldest first: an input checkpoint, then the step that applied it. */
  chain: HeldPut[];
  /** Writes of tasks on the last checkpoint of the chain (or the last stored one). */
  writes: HeldWrites[];
}

/** Threads with something held at most; past it, a thread's writes are stored as they come. */
export const MAX_THREADS = 10_000;

export class HeldCheckpointWrites {
  /** By thread and namespace. */
  readonly #held = new Map<string, Held>();

  constructor(private readonly direct: DirectCheckpointWrites) {}

  /** BaseCheckpointSaver.put: stored, or held (then answered as if stored). */
  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const { flush, call, superseded, messagesOf } = this.onPut(config, checkpoint, metadata, newVersions);
    await this.#store(flush);
    if (call === undefined) {
      if (messagesOf !== undefined) await this.#storeMessagesOf(messagesOf);
      return { configurable: { thread_id: config.configurable?.thread_id, checkpoint_ns: config.configurable?.checkpoint_ns ?? '', checkpoint_id: checkpoint.id } };
    }
    try {
      return await this.direct.putNow(call);
    } catch (error) {
      // The superseding checkpoint was not stored: store what it superseded, so that a run
      // that fails here leaves what it would have left with nothing held.
      if (superseded !== undefined) await this.#store(itemsOf(superseded)).catch(() => undefined);
      throw error;
    }
  }

  /** BaseCheckpointSaver.putWrites: stored, or held. */
  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ''): Promise<void> {
    const { flush, call } = this.onPutWrites(config, writes, taskId, taskPath);
    await this.#store(flush);
    if (call !== undefined) await this.direct.putWritesNow(call);
  }

  /** A run's attempt on the thread ended: what is still held is stored now. */
  async settle(threadId: string): Promise<void> {
    await this.#store(this.take(threadId));
  }

  async #store(items: readonly HeldItem[]): Promise<void> {
    for (const item of items) {
      if ('put' in item) await this.direct.putNow(item.put);
      else await this.direct.putWritesNow(item.writes);
    }
  }

  /** The held checkpoint's rows now; if they cannot be written, the checkpoint is stored instead (nothing held). */
  async #storeMessagesOf(put: HeldPut): Promise<void> {
    const key = keyOf(put.config);
    try {
      if (this.direct.storeMessagesOf === undefined) throw new Error('this saver cannot store a held checkpoint\'s messages alone');
      await this.direct.storeMessagesOf(put);
    } catch (error) {
      const held = key === undefined ? undefined : this.#held.get(key);
      if (key !== undefined) this.#held.delete(key);
      if (held !== undefined) await this.#store(itemsOf(held));
      else throw error;
    }
  }

  /** A put: held (an input checkpoint of a run that asked, or the step that applied it), or stored now with a parent and versions that skip what was held. */
  private onPut(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): StoreNow<HeldPut> {
    const put: HeldPut = { config, checkpoint, metadata, newVersions };
    const key = keyOf(config);
    if (key === undefined) return { flush: [], call: put };
    const held = this.#held.get(key);
    this.#held.delete(key);
    // Past the bound (threads with an attempt in progress here), a thread's writes go straight
    // through: no thread's writes are ever stored inside another thread's call.
    const asked = config.configurable?.[HOLD_SUPERSEDED_WRITES] === true && this.#held.size < MAX_THREADS;
    const flush: Held[] = [];
    let superseded: Held | undefined;
    let stored = put;
    if (held !== undefined) {
      if (asked && config.configurable?.checkpoint_id === held.checkpointId) {
        // Superseded: the held writes are applied in this checkpoint, and the first held
        // checkpoint's parent becomes this one's.
        superseded = held;
        const first = held.chain[0];
        if (first !== undefined) {
          stored = {
            ...put,
            config: withParent(config, first.config.configurable?.checkpoint_id as string | undefined),
            newVersions: held.chain.reduceRight((versions, skipped) => unchangedSince(skipped.newVersions, versions, checkpoint), newVersions),
          };
        }
      } else {
        flush.push(held);
      }
    }
    if (!asked) return { flush: flush.flatMap(itemsOf), call: put };
    const input = metadata.source === 'input';
    // The step that applied a held input: held too when the run asked, its messages written now.
    const inputStep = !input && superseded !== undefined && superseded.chain.length === 1 && superseded.chain[0]!.metadata.source === 'input' && config.configurable?.[HOLD_INPUT_STEP] === true;
    if (inputStep) {
      this.#held.set(key, { checkpointId: checkpoint.id, chain: [...superseded!.chain, put], writes: [] });
      return { flush: flush.flatMap(itemsOf), call: undefined, messagesOf: put };
    }
    this.#held.set(key, { checkpointId: checkpoint.id, chain: input ? [put] : [], writes: [] });
    return { flush: flush.flatMap(itemsOf), call: input ? undefined : stored, ...(superseded ? { superseded } : {}) };
  }

  /** Writes: held when a run that asked finished a task on the checkpoint the held state names; else stored now, after what was held. */
  private onPutWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath: string): StoreNow<HeldWrites> {
    const key = keyOf(config);
    const call: HeldWrites = { config, writes, taskId, taskPath };
    if (key === undefined) return { flush: [], call };
    const held = this.#held.get(key);
    if (held === undefined) return { flush: [], call };
    const ordinary = writes.length > 0 && writes.every(([channel]) => !(channel in WRITES_IDX_MAP));
    // A second task on the same checkpoint is a step with tasks side by side: none of their
    // writes is superseded by the next checkpoint alone (a crash would re-run a finished
    // task), so what is held is stored with it.
    const sibling = held.writes.some((other) => other.taskId !== taskId);
    if (config.configurable?.[HOLD_SUPERSEDED_WRITES] === true && ordinary && !sibling && config.configurable.checkpoint_id === held.checkpointId) {
      held.writes.push(call);
      return { flush: [], call: undefined };
    }
    this.#held.delete(key);
    return { flush: itemsOf(held), call };
  }

  /** What is held for a thread (every namespace), to be stored now: a run's attempt ended. */
  private take(threadId: string): HeldItem[] {
    const items: HeldItem[] = [];
    for (const [key, held] of this.#held) {
      if (!key.startsWith(`${threadId}\u0000`)) continue;
      this.#held.delete(key);
      items.push(...itemsOf(held));
    }
    return items;
  }

  /** The thread is being deleted: nothing held for it may be written afterwards. */
  forgetThread(threadId: string): void {
    this.take(threadId);
  }
}

function keyOf(config: RunnableConfig): string | undefined {
  const threadId = config.configurable?.thread_id as string | undefined;
  if (threadId === undefined) return undefined;
  return `${threadId}\u0000${(config.configurable?.checkpoint_ns as string | undefined) ?? ''}`;
}

/** Held items in the order they were asked: each checkpoint of the chain as it was asked (each names the one before), then the writes. */
function itemsOf(held: Held): HeldItem[] {
  return [...held.chain.map((put) => ({ put })), ...held.writes.map((writes) => ({ writes }))];
}

function withParent(config: RunnableConfig, parentId: string | undefined): RunnableConfig {
  const configurable = { ...config.configurable };
  if (parentId === undefined) delete configurable.checkpoint_id;
  else configurable.checkpoint_id = parentId;
  return { ...config, configurable };
}

/**
 * The versions a put must store values for: its own, and those a skipped checkpoint
 * introduced that this checkpoint still holds unchanged (a saver that stores a channel's
 * value once per version stores it on the put that introduced it).
 */
function unchangedSince(skipped: ChannelVersions, own: ChannelVersions, checkpoint: Checkpoint): ChannelVersions {
  const merged: ChannelVersions = { ...own };
  for (const [channel, version] of Object.entries(skipped)) {
    if (!(channel in merged) && checkpoint.channel_versions[channel] === version) merged[channel] = version;
  }
  return merged;
}
