import type { RunnableConfig } from '@langchain/core/runnables';
import { z } from 'zod';
import { newRunNonce } from '../domain/envelope/envelope-marker.js';
import { VigilError } from '../domain/errors.js';
import { runTriggerSchema } from '../domain/run-context.js';

/**
 * What a graph node needs to know about its run, carried in
 * `config.configurable.vigil` as plain data: never in thread state, and never a
 * function or a client (I10).
 *
 * `nonce` is the run's fresh envelope nonce (I4): the only envelope the model is told to
 * trust is the one carrying it. `meta` is the run's validated, redacted meta (see
 * app/run-meta.ts), from which the envelope is built at model-call time; it is absent
 * for callers that have none (the envelope is then simply not shown).
 */
export const runSettingsSchema = z.object({
  runId: z.string(),
  threadId: z.string(),
  userId: z.string(),
  agentId: z.string(),
  trigger: runTriggerSchema,
  model: z.string(),
  systemPrompt: z.string(),
  nonce: z.string().regex(/^[A-Za-z0-9_-]+$/, 'a run nonce is base64url').optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
});
/** What a caller gives `runConfig`; the nonce is minted there when the caller has none. */
export type RunSettings = z.infer<typeof runSettingsSchema>;
/** What a graph node sees: a config built by `runConfig` always carries the nonce. */
export type ActiveRunSettings = RunSettings & { nonce: string };

export function runSettingsOf(config: RunnableConfig): ActiveRunSettings {
  const settings = runSettingsSchema.parse(config.configurable?.vigil);
  if (settings.nonce === undefined) throw new VigilError('INTERNAL', 'a run config without a nonce: build run configs with runConfig()');
  return { ...settings, nonce: settings.nonce };
}

/**
 * The config of one run. A nonce is minted here when the caller brings none, once per
 * config, so every node of the run (and every model call in it) sees the same nonce and
 * no run can ever go without one: the system-prompt rule is appended to every run.
 */
export function runConfig(settings: RunSettings, signal?: AbortSignal): RunnableConfig {
  const vigil: ActiveRunSettings = { ...settings, nonce: settings.nonce ?? newRunNonce() };
  if (vigil.meta === undefined) delete vigil.meta;
  return {
    configurable: { thread_id: settings.threadId, vigil },
    // What a tracer (LangSmith with LANGSMITH_TRACING=true, or any LangChain callback) shows
    // for the run and every model call in it, so a trace links to vigil's run record.
    runName: `vigil ${settings.trigger} run`,
    tags: ['vigil', `trigger:${settings.trigger}`, `agent:${settings.agentId}`],
    metadata: { vigil_run_id: settings.runId, thread_id: settings.threadId, agent_id: settings.agentId, trigger: settings.trigger },
    ...(signal ? { signal } : {}),
  };
}
