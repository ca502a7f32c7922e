/**
 * An agent's model is written by its user (`openai:<any name>`): what the server keeps per
 * model name is bounded, so users cannot grow it without end.
 */
import { describe, expect, it } from 'vitest';
import { MODEL_CACHE_SIZE, createModelFactory } from '../../src/adapters/llm/model-factory.js';
import { MAX_MODEL_SERIES, OTHER_MODEL, PrometheusMetrics } from '../../src/adapters/metrics/prometheus-metrics.js';
import { createAgentBody } from '../../src/http/schemas.js';

describe('what the server keeps per model name is bounded', () => {
  it('metrics keep MAX_MODEL_SERIES (provider, model) series; calls of further models are counted as "other"', async () => {
    const metrics = new PrometheusMetrics();
    for (let index = 0; index < MAX_MODEL_SERIES + 40; index++) metrics.modelCall({ provider: 'openai', model: `model-${index}`, outcome: 'ok', seconds: 0.1, inputTokens: 3 });
    metrics.modelCall({ provider: 'openai', model: 'model-0', outcome: 'error', seconds: 0.1 });
    const text = await metrics.registry.metrics();
    const models = new Set([...text.matchAll(/vigil_model_tokens_total\{[^}]*model="([^"]+)"/g)].map((match) => match[1]));
    expect(models.size).toBe(MAX_MODEL_SERIES + 1);
    expect(models.has(OTHER_MODEL)).toBe(true);
    expect(models.has(`model-${MAX_MODEL_SERIES + 1}`)).toBe(false);
    // The 40 calls past the bound are all there, under "other"; a model seen early keeps its own series.
    expect(text).toContain(`vigil_model_tokens_total{provider="openai",model="${OTHER_MODEL}",direction="input"} 120`);
    expect(text).toContain('vigil_model_errors_total{provider="openai",model="model-0"} 1');
  });

  it('the model factory keeps the MODEL_CACHE_SIZE most recently used models built, and builds any other again', () => {
    const factory = createModelFactory({ openaiApiKey: 'sk-test', openaiBaseUrl: 'http://127.0.0.1:9/v1', timeoutMs: 1_000 });
    const first = factory('openai:first');
    const kept = factory('openai:kept');
    for (let index = 0; index < MODEL_CACHE_SIZE - 2; index++) factory(`openai:m-${index}`);
    expect(factory('openai:kept')).toBe(kept); // used again: the most recent now
    factory('openai:one-more');
    expect(factory('openai:kept')).toBe(kept);
    expect(factory('openai:first')).not.toBe(first); // the least recently used went
  });

  it('an agent\'s model name longer than 200 characters is refused', () => {
    const base = { id: 'a', name: 'A', systemPrompt: 'p' };
    expect(createAgentBody.safeParse({ ...base, model: `openai:${'x'.repeat(193)}` }).success).toBe(true);
    expect(createAgentBody.safeParse({ ...base, model: `openai:${'x'.repeat(194)}` }).success).toBe(false);
  });
});
