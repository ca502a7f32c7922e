import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { Serialized } from '@langchain/core/load/serializable';
import type { LLMResult } from '@langchain/core/outputs';
import { SpanStatusCode, context as otelContext, trace, type Span, type Tracer } from '@opentelemetry/api';

/**
 * One OpenTelemetry trace per vigil run, from LangChain's callbacks: the graph run is the
 * root span (`vigil.run`, with the run id, thread, agent and trigger from the run config's
 * metadata), each graph node and each model call a child. A model span records its first
 * token as an event and ends with its last, so a trace shows time to first token and to
 * the end of the reply. A handler per run: no state shared between runs.
 */
export class OtelRunTracer extends BaseCallbackHandler {
  override name = 'vigil-otel-run-tracer';
  override awaitHandlers = false;
  readonly #spans = new Map<string, Span>();
  readonly #firstToken = new Set<string>();

  constructor(private readonly tracer: Tracer) {
    super();
  }

  override handleChainStart(chain: Serialized, _inputs: unknown, runId: string, parentRunId?: string, _tags?: string[], metadata?: Record<string, unknown>, _runType?: string, runName?: string): void {
    if (parentRunId === undefined) {
      this.#start(runId, undefined, 'vigil.run', {
        'vigil.run_id': stringOf(metadata?.vigil_run_id),
        'vigil.thread_id': stringOf(metadata?.thread_id),
        'vigil.agent_id': stringOf(metadata?.agent_id),
        'vigil.trigger': stringOf(metadata?.trigger),
        'vigil.run_name': runName ?? '',
      });
      return;
    }
    // Only graph nodes (LangGraph sets langgraph_node), not every inner runnable.
    const node = metadata?.langgraph_node;
    if (typeof node === 'string' && runName === node) this.#start(runId, parentRunId, `langgraph.node ${node}`, { 'langgraph.node': node });
    else void chain;
  }

  override handleChainEnd(_outputs: unknown, runId: string): void {
    this.#end(runId);
  }

  override handleChainError(error: unknown, runId: string): void {
    this.#end(runId, error);
  }

  override handleChatModelStart(llm: Serialized, _messages: unknown, runId: string, parentRunId?: string, extraParams?: Record<string, unknown>, _tags?: string[], metadata?: Record<string, unknown>): void {
    const model = stringOf((extraParams?.invocation_params as Record<string, unknown> | undefined)?.model) || stringOf(metadata?.ls_model_name) || llm.id.at(-1) || 'model';
    this.#start(runId, parentRunId, `gen_ai.chat ${model}`, { 'gen_ai.request.model': model, 'gen_ai.system': stringOf(metadata?.ls_provider) });
  }

  override handleLLMNewToken(_token: string, _index: unknown, runId: string): void {
    if (this.#firstToken.has(runId)) return;
    this.#firstToken.add(runId);
    this.#spans.get(runId)?.addEvent('gen_ai.first_token');
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const span = this.#spans.get(runId);
    const generation = output.generations[0]?.[0] as { message?: { usage_metadata?: { input_tokens?: number; output_tokens?: number } } } | undefined;
    const usage = generation?.message?.usage_metadata;
    if (span && usage) span.setAttributes({ 'gen_ai.usage.input_tokens': usage.input_tokens ?? 0, 'gen_ai.usage.output_tokens': usage.output_tokens ?? 0 });
    this.#firstToken.delete(runId);
    this.#end(runId);
  }

  override handleLLMError(error: unknown, runId: string): void {
    this.#firstToken.delete(runId);
    this.#end(runId, error);
  }

  #start(runId: string, parentRunId: string | undefined, name: string, attributes: Record<string, string>): void {
    const parent = parentRunId === undefined ? undefined : this.#nearestSpan(parentRunId);
    const parentContext = parent ? trace.setSpan(otelContext.active(), parent) : otelContext.active();
    const span = this.tracer.startSpan(name, { attributes }, parentRunId === undefined ? trace.deleteSpan(parentContext) : parentContext);
    this.#spans.set(runId, span);
    this.#parents.set(runId, parentRunId);
  }

  readonly #parents = new Map<string, string | undefined>();

  /** The span of the run, or of its nearest traced ancestor (inner runnables have none). */
  #nearestSpan(runId: string): Span | undefined {
    let current: string | undefined = runId;
    for (let depth = 0; current !== undefined && depth < 64; depth += 1) {
      const span = this.#spans.get(current);
      if (span) return span;
      current = this.#parents.get(current);
    }
    return this.#root();
  }

  #root(): Span | undefined {
    for (const [runId, parent] of this.#parents) if (parent === undefined) return this.#spans.get(runId);
    return undefined;
  }

  #end(runId: string, error?: unknown): void {
    const span = this.#spans.get(runId);
    if (!span) return;
    if (error !== undefined) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    }
    span.end();
    this.#spans.delete(runId);
  }
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
