import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { VigilError } from '../../domain/errors.js';
import { DemoChatModel, DEMO_MODEL_NAME } from './demo-chat-model.js';

export interface ModelFactoryOptions {
  openaiApiKey?: string | undefined;
  openaiBaseUrl?: string | undefined;
  anthropicApiKey?: string | undefined;
  timeoutMs: number;
  /** Streaming pace of the demo model; 0 in tests. */
  demoTokenDelayMs?: number;
  /**
   * Callbacks every call of a spec's model reports to (the metrics' observer). Given at
   * construction, not set on the instance afterwards: ChatOpenAI's bindTools makes a new
   * ChatOpenAI from its constructor fields, so a callback set later was not on the model
   * an agent with tools called.
   */
  callbacks?: (spec: string) => BaseCallbackHandler[];
}

export type ModelFactory = (spec: string) => BaseChatModel;

/**
 * LangChain chat models by spec: `demo`, `openai:<model>` (also any OpenAI-compatible
 * server through OPENAI_BASE_URL: Ollama, vLLM, LM Studio, llama.cpp) and
 * `anthropic:<model>`. Models are cached per spec: they hold HTTP clients.
 */
export function createModelFactory(options: ModelFactoryOptions): ModelFactory {
  // Insertion order is recency: specs are written by users, so the cache keeps the most
  // recently used MODEL_CACHE_SIZE and builds any other again when asked.
  const cache = new Map<string, BaseChatModel>();
  return (spec) => {
    const cached = cache.get(spec);
    if (cached) {
      cache.delete(spec);
      cache.set(spec, cached);
      return cached;
    }
    const model = buildModel(spec, options);
    if (cache.size >= MODEL_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    cache.set(spec, model);
    return model;
  };
}

/** Models kept built (each holds an HTTP client); far more than the models a server's agents use at once. */
export const MODEL_CACHE_SIZE = 64;

function buildModel(spec: string, options: ModelFactoryOptions): BaseChatModel {
  const callbacks = options.callbacks?.(spec);
  if (spec === 'demo') return new DemoChatModel({ tokenDelayMs: options.demoTokenDelayMs ?? 0, ...(callbacks ? { callbacks } : {}) });
  const separator = spec.indexOf(':');
  const provider = spec.slice(0, separator);
  const name = spec.slice(separator + 1);
  if (separator > 0 && name && provider === 'openai') {
    return new ChatOpenAI({
      model: name,
      apiKey: options.openaiApiKey ?? 'not-needed-for-local-servers',
      timeout: options.timeoutMs,
      maxRetries: 0, // the run coordinator owns retries, so a failing model never multiplies calls
      streamUsage: true,
      configuration: options.openaiBaseUrl ? { baseURL: options.openaiBaseUrl } : {},
      ...(callbacks ? { callbacks } : {}),
    });
  }
  if (separator > 0 && name && provider === 'anthropic') {
    if (!options.anthropicApiKey) throw new VigilError('CONFIG_INVALID', 'ANTHROPIC_API_KEY is required for anthropic models');
    return new ChatAnthropic({ model: name, apiKey: options.anthropicApiKey, maxRetries: 0, clientOptions: { timeout: options.timeoutMs }, ...(callbacks ? { callbacks } : {}) });
  }
  throw new VigilError('VALIDATION_FAILED', `unknown model "${spec}": use demo, openai:<model> or anthropic:<model>`);
}

/** The name a reply's metadata and the API show for a model spec. */
export function modelLabel(spec: string): string {
  return spec === 'demo' ? DEMO_MODEL_NAME : spec;
}
