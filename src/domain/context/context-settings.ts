import { z } from 'zod';

/**
 * An agent's context policy, kept under `agents.settings.context` and validated whenever
 * it is read or written (like `autonomy` and `planner`). Every field is optional: what
 * is missing comes from the server (VIGIL_CONTEXT_TOKENS), the model's profile, or the
 * defaults below.
 */
export const contextSettingsSchema = z
  .object({
    /** The context budget of every model call of this agent, in tokens (I14). */
    maxTokens: z.number().int().min(1000).max(10_000_000).optional(),
    /** Room kept for the answer; default: a fifth of the budget, at most 4,096. */
    answerTokens: z.number().int().min(64).max(200_000).optional(),
    /** Fold older messages into the summary once the thread's unsummarised messages exceed this share of their room. */
    foldAt: z.number().min(0.3).max(1).default(0.75),
    /** After a fold, at most this share of the messages' room stays as recent messages. */
    keepRecent: z.number().min(0.1).max(0.9).default(0.4),
    /** A cheaper model that writes the summary (`demo`, `openai:…`, `anthropic:…`); the agent's own by default. */
    summaryModel: z
      .string()
      .regex(/^(demo|openai:.+|anthropic:.+)$/, 'must be "demo", "openai:<model>" or "anthropic:<model>"')
      .optional(),
  })
  .strict()
  .refine((value) => value.keepRecent < value.foldAt, { message: 'keepRecent must be below foldAt', path: ['keepRecent'] })
  .refine((value) => value.answerTokens === undefined || value.maxTokens === undefined || value.answerTokens <= value.maxTokens / 2, {
    message: 'answerTokens must be at most half of maxTokens',
    path: ['answerTokens'],
  });

export type ContextSettings = z.infer<typeof contextSettingsSchema>;

/** The context settings of an agent's settings record (`settings.context`), defaults filled in. */
export function contextSettingsOf(agentSettings: Record<string, unknown>): ContextSettings {
  return contextSettingsSchema.parse(agentSettings.context ?? {});
}

/** The budget when neither the agent, the server nor the model's profile names one. */
export const DEFAULT_CONTEXT_TOKENS = 32_000;

export type BudgetSource = 'agent' | 'server' | 'model_profile' | 'default';

/** How the tokens of one model call are shared out. */
export interface ContextBudget {
  maxTokens: number;
  source: BudgetSource;
  /** Kept free for the answer. */
  answerTokens: number;
  /** The most a conversation summary may take. */
  summaryTokens: number;
  foldAt: number;
  keepRecent: number;
  summaryModel: string | undefined;
}

export interface BudgetSources {
  settings: ContextSettings;
  /** VIGIL_CONTEXT_TOKENS. */
  serverMaxTokens?: number | undefined;
  /** The model's input window, where LangChain's model profile knows it. */
  modelWindow?: number | undefined;
}

/** agent setting → server setting → the model's window → 32,000. */
export function resolveContextBudget({ settings, serverMaxTokens, modelWindow }: BudgetSources): ContextBudget {
  const [maxTokens, source]: [number, BudgetSource] =
    settings.maxTokens !== undefined
      ? [settings.maxTokens, 'agent']
      : serverMaxTokens !== undefined
        ? [serverMaxTokens, 'server']
        : modelWindow !== undefined && Number.isFinite(modelWindow) && modelWindow >= 1000
          ? [Math.floor(modelWindow), 'model_profile']
          : [DEFAULT_CONTEXT_TOKENS, 'default'];
  const answerTokens = Math.min(settings.answerTokens ?? Math.min(4096, Math.floor(maxTokens / 5)), Math.floor(maxTokens / 2));
  // A summary that could fill the window would leave nothing for the conversation itself.
  const summaryTokens = Math.max(200, Math.min(2000, Math.floor(maxTokens * 0.15)));
  return { maxTokens, source, answerTokens, summaryTokens, foldAt: settings.foldAt, keepRecent: settings.keepRecent, summaryModel: settings.summaryModel };
}

/** The most of a call's input the agent's system prompt may take: a longer one is cut at run time, and refused at the API where the agent's own budget is known. */
export const SYSTEM_PROMPT_SHARE = 0.5;

/**
 * Why an agent's system prompt cannot be accepted under its own context budget (I14):
 * it takes more than its share of the input (context.maxTokens less the answer's room);
 * null when it fits, or the agent sets no budget of its own (the server's, or the
 * model's window, is checked at run time, where the prompt is cut to fit).
 */
export function systemPromptOverBudget(systemPrompt: string, agentSettings: Record<string, unknown>, countTokens: (text: string) => number): string | null {
  const parsed = contextSettingsSchema.safeParse(agentSettings.context ?? {});
  if (!parsed.success || parsed.data.maxTokens === undefined) return null;
  const budget = resolveContextBudget({ settings: parsed.data });
  const input = budget.maxTokens - budget.answerTokens;
  const limit = Math.floor(input * SYSTEM_PROMPT_SHARE);
  const tokens = countTokens(systemPrompt);
  if (tokens <= limit) return null;
  return `the system prompt takes ${tokens} tokens, more than half of the agent's input budget (${limit} of ${input}: context.maxTokens ${budget.maxTokens} less ${budget.answerTokens} for the answer); shorten the prompt or raise context.maxTokens`;
}
