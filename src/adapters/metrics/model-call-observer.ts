import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { LLMResult } from '@langchain/core/outputs';
import type { Metrics } from '../../app/metrics.js';

/**
 * Counts model calls, their time, tokens and errors, per provider and model, as a LangChain
 * callback on each model: every call is seen, whichever graph node or tool made it.
 */
export class ModelCallObserver extends BaseCallbackHandler {
  override name = 'vigil-model-metrics';
  readonly #started = new Map<string, number>();

  constructor(private readonly metrics: Metrics, private readonly provider: string, private readonly model: string) {
    super();
  }

  override handleChatModelStart(_llm: unknown, _messages: unknown, runId: string): void {
    this.#started.set(runId, performance.now());
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const usage = usageOf(output);
    this.metrics.modelCall({ provider: this.provider, model: this.model, outcome: 'ok', seconds: this.#elapsed(runId), ...usage });
  }

  override handleLLMError(_error: unknown, runId: string): void {
    this.metrics.modelCall({ provider: this.provider, model: this.model, outcome: 'error', seconds: this.#elapsed(runId) });
  }

  #elapsed(runId: string): number {
    const started = this.#started.get(runId);
    this.#started.delete(runId);
    return started === undefined ? 0 : (performance.now() - started) / 1000;
  }
}

/** The provider's reported usage: on the message (usage_metadata), or in llmOutput (older shape). */
function usageOf(output: LLMResult): { inputTokens?: number; outputTokens?: number } {
  const generation = output.generations[0]?.[0] as { message?: { usage_metadata?: { input_tokens?: number; output_tokens?: number } } } | undefined;
  const usage = generation?.message?.usage_metadata;
  if (usage) return { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens };
  const legacy = (output.llmOutput as { tokenUsage?: { promptTokens?: number; completionTokens?: number } } | undefined)?.tokenUsage;
  return legacy ? { inputTokens: legacy.promptTokens, outputTokens: legacy.completionTokens } : {};
}

/** `openai:gpt-4o` → provider `openai`, model `gpt-4o`; `demo` → demo/demo. */
export function providerOf(spec: string): { provider: string; model: string } {
  const separator = spec.indexOf(':');
  return separator > 0 ? { provider: spec.slice(0, separator), model: spec.slice(separator + 1) } : { provider: spec, model: spec };
}
