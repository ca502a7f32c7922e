import { describe, expect, it } from 'vitest';
import { MemorySaver, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { BaseMessage } from '@langchain/core/messages';
import { pino } from 'pino';
import { openSqliteStorage } from '../../src/adapters/storage-factory.js';
import { checkMetadataIntegrity } from '../../src/app/integrity-check.js';
import { captureLogs } from '../helpers/log-capture.js';

/** A checkpointer that loses what LangChain keeps in additional_kwargs on the way back. */
class LossySaver extends MemorySaver {
  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const tuple = await super.getTuple(config);
    const messages = tuple?.checkpoint.channel_values.messages as BaseMessage[] | undefined;
    for (const message of messages ?? []) message.additional_kwargs = { ...message.additional_kwargs, synthetic: 'true' as unknown as boolean };
    return tuple;
  }
}

describe('start-up integrity check', () => {
  it('I3: passes on the real SQLite checkpointer and leaves no probe thread behind', async () => {
    // The saver exactly as openStorage builds it.
    const storage = await openSqliteStorage({ file: ':memory:', logger: pino({ level: 'silent' }) });
    try {
      const saver = storage.checkpointer;
      const { logger, lines } = captureLogs('info');
      await checkMetadataIntegrity(saver, logger);
      expect(lines.some((line) => line.msg === 'Checkpoint metadata integrity check passed')).toBe(true);
      const leftovers = [];
      for await (const tuple of saver.list({})) leftovers.push(tuple);
      expect(leftovers).toEqual([]);
    } finally {
      await storage.close();
    }
  });

  it('I3: a checkpointer that changes metadata stops start-up with INTEGRITY_CHECK_FAILED and an ERROR log', async () => {
    const { logger, lines } = captureLogs('info');
    await expect(checkMetadataIntegrity(new LossySaver(), logger)).rejects.toMatchObject({ code: 'INTEGRITY_CHECK_FAILED' });
    const error = lines.find((line) => line.level === 50);
    expect(error?.msg).toBe('Checkpoint metadata integrity test failed - metadata not preserved');
  });
});
