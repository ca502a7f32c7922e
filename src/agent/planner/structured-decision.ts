import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import { toJsonSchema } from '@langchain/core/utils/json_schema';
import { z } from 'zod';
import { textOf } from '../../domain/message-content.js';
import { modelCallConfig } from '../model-call-config.js';

/**
 * A decision's messages: sent as they are, or a function that fits them to the agent's
 * context budget (I14) together with what a retry sends after them — the corrections so
 * far — called before every attempt, so a retry fits as the first call does.
 */
export type DecisionMessages = readonly BaseMessage[] | ((corrections: readonly BaseMessage[]) => Promise<BaseMessage[]>);

export type DecisionOutcome<T> =
  | { ok: true; value: T; tokens: number; attempts: number }
  | { ok: false; error: string; tokens: number; attempts: number };

/**
 * Ask the model for one structured answer and validate it with zod; a malformed answer is
 * retried `retries` times with the validation error, then reported (never thrown), so the
 * caller can end the run with a stated reason.
 *
 * Models with tool calling answer through `withStructuredOutput` (provider-native
 * structured output). A model without it — the offline demo model — is asked for bare
 * JSON, which is parsed and validated the same way.
 *
 * The messages of these calls (and of retries) exist only for the call: nothing here is
 * written to thread state, so the planner's internal reasoning never becomes a message.
 */
export async function decide<T>(
  model: BaseChatModel,
  schema: z.ZodType<T>,
  name: string,
  messages: DecisionMessages,
  options: { retries: number; config?: RunnableConfig; maxTokens?: number },
): Promise<DecisionOutcome<T>> {
  const ask = structuredRunnable(model, schema, name);
  let tokens = 0;
  let error = 'no answer';
  const corrections: BaseMessage[] = [];
  for (let attempt = 1; attempt <= options.retries + 1; attempt++) {
    const conversation = typeof messages === 'function' ? await messages(corrections) : [...messages, ...corrections];
    const { raw, parsed } = await ask(conversation, options.config);
    tokens += tokensOf(raw, conversation);
    const result = parsed === undefined ? null : schema.safeParse(parsed);
    if (result?.success) return { ok: true, value: result.data, tokens, attempts: attempt };
    error = result ? z.prettifyError(result.error).replace(/\s+/g, ' ').slice(0, 500) : `no ${name} answer in the reply`;
    if (options.maxTokens !== undefined && tokens >= options.maxTokens) return { ok: false, error: `${error} (token budget of the call spent)`, tokens, attempts: attempt };
    corrections.push(new HumanMessage(`That answer was not a valid ${name}: ${error}. Answer again with exactly the requested structure.`));
  }
  return { ok: false, error, tokens, attempts: options.retries + 1 };
}

type Ask = (messages: BaseMessage[], config?: RunnableConfig) => Promise<{ raw: BaseMessage; parsed: unknown }>;

function structuredRunnable<T>(model: BaseChatModel, schema: z.ZodType<T>, name: string): Ask {
  let structured: ReturnType<BaseChatModel['withStructuredOutput']> | undefined;
  try {
    structured = model.withStructuredOutput(schema as z.ZodType<Record<string, unknown>>, { name, includeRaw: true });
  } catch {
    structured = undefined; // no tool calling: ask for JSON instead
  }
  if (structured) {
    const runnable = structured;
    return async (messages, config) => {
      const output = (await runnable.invoke(messages, config && modelCallConfig(config))) as unknown as { raw: BaseMessage; parsed: unknown };
      return { raw: output.raw, parsed: output.parsed ?? undefined };
    };
  }
  const instruction = new SystemMessage(
    `Answer with one JSON object only (no prose, no code fence) for "${name}", matching this JSON schema:\n${JSON.stringify(toJsonSchema(schema))}`,
  );
  return async (messages, config) => {
    const raw = await model.invoke([...messages, instruction], config && modelCallConfig(config));
    return { raw, parsed: parseJsonObject(textOf(raw.content)) };
  };
}

/** The first JSON object in a text (models like to wrap JSON in a code fence). */
export function parseJsonObject(text: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text)?.[1] ?? text;
  const start = fenced.indexOf('{');
  const end = fenced.lastIndexOf('}');
  if (start < 0 || end <= start) return undefined;
  try {
    return JSON.parse(fenced.slice(start, end + 1)) as unknown;
  } catch {
    return undefined;
  }
}

/** Reported usage when the provider gives it; else a rough estimate (4 characters a token). */
export function tokensOf(raw: BaseMessage, input: readonly BaseMessage[]): number {
  const usage = AIMessage.isInstance(raw) ? raw.usage_metadata : undefined;
  if (usage && Number.isFinite(usage.total_tokens)) return usage.total_tokens;
  const characters = input.reduce((sum, message) => sum + textOf(message.content).length, 0) + textOf(raw.content).length + JSON.stringify((raw as AIMessage).tool_calls ?? []).length;
  return Math.ceil(characters / 4);
}
