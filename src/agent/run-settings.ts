import type { RunnableConfig } from '@langchain/core/runnables';
import { z } from 'zod';
import { runTriggerSchema } from '../domain/run-context.js';

/**
 * What a graph node needs to know about its run, carried in
 * `config.configurable.vigil` as plain strings: never in thread state, and never a
 * function or a client (I10).
 */
export const runSettingsSchema = z.object({
  runId: z.string(),
  threadId: z.string(),
  userId: z.string(),
  agentId: z.string(),
  trigger: runTriggerSchema,
  model: z.string(),
  systemPrompt: z.string(),
});
export type RunSettings = z.infer<typeof runSettingsSchema>;

export function runSettingsOf(config: RunnableConfig): RunSettings {
  return runSettingsSchema.parse(config.configurable?.vigil);
}

export function runConfig(settings: RunSettings, signal?: AbortSignal): RunnableConfig {
  return {
    configurable: { thread_id: settings.threadId, vigil: settings },
    ...(signal ? { signal } : {}),
  };
}
