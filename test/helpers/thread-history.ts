/**
 * A thread's history is written by the checkpoint saver, with the checkpoint holding its
 * messages (thread-saver.ts): these helpers add messages to a thread the way a run does, a
 * checkpoint whose message list is the thread's plus the new ones, stored through the
 * storage's own saver with the run's id and time.
 */
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { randomUUID } from 'node:crypto';
import { HISTORY_SINK, type HistorySink, type Storage, type StoredMessage } from '../../src/app/ports.js';

/** Add messages to the thread's state and history; answers what history now shows of them. */
export async function appendToHistory(storage: Storage, threadId: string, messages: readonly BaseMessage[], options: { at: string; runId?: string | null }): Promise<StoredMessage[]> {
  const saver = storage.checkpointer;
  const config = { configurable: { thread_id: threadId, checkpoint_ns: '' } };
  const latest = await saver.getTuple(config);
  const previous = (latest?.checkpoint.channel_values.messages as BaseMessage[] | undefined) ?? [];
  const version = Number(latest?.checkpoint.channel_versions.messages ?? 0) + 1;
  const checkpoint = {
    ...emptyCheckpoint(),
    id: uuid6(-1),
    ts: options.at,
    channel_values: { messages: [...previous, ...messages] },
    channel_versions: { messages: version },
  };
  const stored: StoredMessage[] = [];
  const sink: HistorySink = { runId: options.runId ?? null, now: () => options.at, onStored: (added) => stored.push(...added) };
  const parent = latest?.config.configurable?.checkpoint_id as string | undefined;
  await saver.put({ configurable: { ...config.configurable, ...(parent ? { checkpoint_id: parent } : {}), [HISTORY_SINK]: sink } }, checkpoint, { source: 'loop', step: version, parents: {} }, { messages: version });
  return stored;
}

/** A person's message. */
export function personSays(content: HumanMessage['content'] = 'hello', additionalKwargs: Record<string, unknown> = {}): HumanMessage {
  return new HumanMessage({ id: randomUUID(), content, additional_kwargs: additionalKwargs });
}

/** An agent reply: visible, but not user activity. */
export function agentSays(content: AIMessage['content']): AIMessage {
  return new AIMessage({ id: randomUUID(), content });
}

/** A system-written message in a person's role (I1): internal, never user activity. */
export function systemSays(content: string, triggerType = 'check_in'): HumanMessage {
  return new HumanMessage({ id: randomUUID(), content, additional_kwargs: { synthetic: true, trigger_type: triggerType } });
}
