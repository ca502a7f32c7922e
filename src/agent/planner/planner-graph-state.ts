import { Annotation } from '@langchain/langgraph';
import { vigilMessagesReducer } from '../message-identity.js';
import type { BaseMessage } from '@langchain/core/messages';
import type { SummaryCoverage } from '../../domain/context/conversation-summary.js';
import { emptyPlannerMetadata, type PlannerMetadata } from '../../domain/planner/planner-state.js';

export const NODES = {
  recall: 'recall_memories',
  knowledge: 'gather_knowledge',
  strategicPlanner: 'strategic_planner',
  tacticalPlanner: 'tactical_planner',
  executor: 'tactical_executor',
  tacticalCritic: 'tactical_critic',
  strategicCritic: 'strategic_critic',
  complete: 'complete',
} as const;
export type PlannerNode = (typeof NODES)[keyof typeof NODES];

/**
 * The planner's thread state: the conversation (`messages`, which only the person's
 * input and the final `complete` reply enter) and the planner metadata of seed 003
 * (plain data, zod-typed in domain/planner/planner-state.ts). A node returns the fields
 * it changes; the reducer merges them.
 */
export const PlannerState = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: vigilMessagesReducer, default: () => [] }),
  planner: Annotation<PlannerMetadata, Partial<PlannerMetadata>>({
    reducer: (previous, next) => ({ ...previous, ...next }),
    default: emptyPlannerMetadata,
  }),
  /** The running conversation summary and what it covers (I14; see agent/context/context-window.ts). */
  summary: Annotation<string | null>({ reducer: (_previous, next) => next, default: () => null }),
  summaryCoverage: Annotation<SummaryCoverage | null>({ reducer: (_previous, next) => next, default: () => null }),
});
export type PlannerStateValue = typeof PlannerState.State;
export type PlannerUpdate = { planner?: Partial<PlannerMetadata>; messages?: BaseMessage[]; summary?: string; summaryCoverage?: SummaryCoverage };
