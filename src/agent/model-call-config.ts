import { mergeConfigs, type RunnableConfig } from '@langchain/core/runnables';
import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';

/**
 * Where a run hands its graph the callbacks meant for model calls only (vigil's token
 * stream, see app/runs/reply-token-handler.ts), in `config.configurable`.
 *
 * Why not the graph's `callbacks`: a handler there is inherited by every runnable of every
 * step (nodes, channel writes, branches), and LangChain then builds a callback manager and
 * a run tree for each of them, start and end: about 1 ms of a turn on a short thread, a
 * third of it, for tokens that only model calls give. Here the handlers join the config of
 * the model calls a node makes (`modelCallConfig`), nothing else. A run's own graph-wide
 * callbacks (a tracer) stay in `callbacks`.
 */
export const MODEL_CALL_CALLBACKS = 'vigil_model_call_callbacks';

/** The configurable entry that gives model calls `handlers`. */
export function withModelCallCallbacks(config: RunnableConfig, handlers: readonly BaseCallbackHandler[]): RunnableConfig {
  return { ...config, configurable: { ...config.configurable, [MODEL_CALL_CALLBACKS]: handlers } };
}

/** The config a node passes to a model call: its own, with the run's model-call callbacks added. */
export function modelCallConfig(config: RunnableConfig): RunnableConfig {
  const handlers = config.configurable?.[MODEL_CALL_CALLBACKS] as readonly BaseCallbackHandler[] | undefined;
  if (handlers === undefined || handlers.length === 0) return config;
  return mergeConfigs(config, { callbacks: [...handlers] });
}
