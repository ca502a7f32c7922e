import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { Annotation, END, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import type { BaseCheckpointSaver, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { VigilError } from '../domain/errors.js';
import { syntheticMetadata } from '../domain/message-metadata.js';

const ProbeState = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
});

/** The probe messages: string and multimodal content, nested and unicode metadata. */
function probeMessages(): HumanMessage[] {
  return [
    new HumanMessage({
      id: randomUUID(),
      content: 'Continue our conversation naturally.',
      additional_kwargs: { ...syntheticMetadata('check_in', 'start-up integrity check'), nested: { list: [1, 'two', { three: true }], emoji: '✓ ünïcödé 🙂' } },
    }),
    new HumanMessage({
      id: randomUUID(),
      content: [{ type: 'text', text: 'multimodal probe' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }],
      additional_kwargs: { synthetic: true, trigger_type: 'question_unanswered', trigger_reason: 'probe', synthetic_flags: [false, null, 0] },
    }),
  ];
}

/**
 * I3 at start-up: write synthetic messages through the real checkpointer with a real
 * graph, read them back through a fresh read, and compare `additional_kwargs` and
 * content exactly. On a mismatch the server must not start: every later decision about
 * who said what would be wrong.
 */
export async function checkMetadataIntegrity(
  checkpointer: BaseCheckpointSaver,
  logger: Logger,
  // A caching checkpointer answers a read of what it just wrote from memory: the check
  // must read past the cache, from the database itself.
  readBack: (config: RunnableConfig) => Promise<CheckpointTuple | undefined> = (config) => checkpointer.getTuple(config),
): Promise<void> {
  const threadId = `vigil-integrity-${randomUUID()}`;
  const config = { configurable: { thread_id: threadId } };
  const written = probeMessages();
  const graph = new StateGraph(ProbeState).addNode('noop', () => ({})).addEdge(START, 'noop').addEdge('noop', END).compile({ checkpointer });
  try {
    await graph.invoke({ messages: written }, config);
    const tuple = await readBack(config);
    const restored = (tuple?.checkpoint.channel_values.messages ?? []) as BaseMessage[];
    const problems: string[] = [];
    for (const original of written) {
      const match = restored.find((message) => message.id === original.id);
      if (!match) problems.push(`message ${original.id} missing after restore`);
      else {
        if (!isDeepStrictEqual(match.additional_kwargs, original.additional_kwargs)) problems.push(`additional_kwargs of ${original.id} changed: ${JSON.stringify(match.additional_kwargs)}`);
        if (!isDeepStrictEqual(match.content, original.content)) problems.push(`content of ${original.id} changed`);
        if (!HumanMessage.isInstance(match)) problems.push(`message ${original.id} is no longer a HumanMessage`);
      }
    }
    if (problems.length > 0) {
      logger.error({ problems }, 'Checkpoint metadata integrity test failed - metadata not preserved');
      throw new VigilError('INTEGRITY_CHECK_FAILED', `checkpoint metadata integrity check failed: ${problems.join('; ')}`);
    }
    logger.info('Checkpoint metadata integrity check passed');
  } finally {
    await checkpointer.deleteThread(threadId).catch((error: unknown) => logger.warn({ err: error }, 'could not delete the integrity probe thread'));
  }
}
