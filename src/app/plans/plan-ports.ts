/**
 * The stored plan: what a planner run decided and did, outside the thread's checkpoint,
 * so that it can be listed, inspected, and resumed by a later run (I10: the checkpoint
 * holds plain data; this is the durable, queryable record of the same plan).
 */
import type { Iso } from '../ports.js';
import type { KnowledgeResult, TacticalStepState } from '../../domain/planner/planner-state.js';

export type PlanStatus = 'planning' | 'active' | 'stopped' | 'completed' | 'superseded';
export type MilestoneStatus = 'pending' | 'active' | 'completed';
export type PlanPriority = 'low' | 'medium' | 'high';

export interface MilestoneRecord {
  id: string;
  planId: string;
  orderIndex: number;
  title: string;
  description: string;
  successCriteria: string;
  status: MilestoneStatus;
  /** Tactical revisions so far (the cap auto-approves). */
  revisionCount: number;
  criticDecision: string | null;
  criticReason: string | null;
  /** The tactical plan's steps, with their status and result. */
  steps: TacticalStepState[];
  currentStep: number;
  completedAt: Iso | null;
}

export interface KnowledgeRecord {
  queries: Array<{ question: string; sources: string[]; priority: number }>;
  results: KnowledgeResult[];
}

export interface HeartbeatRecord {
  /** `armed`: a check is scheduled; `ended`: the overlord (or the plan's end) stopped them. */
  status: 'armed' | 'ended';
  wakes: number;
  lastDecision: 'plan' | 'wait' | 'end' | null;
  lastReason: string | null;
  nextCheckAt: Iso | null;
}

export interface PlanRecord {
  id: string;
  userId: string;
  agentId: string;
  threadId: string;
  status: PlanStatus;
  /** The person's request the plan answers. */
  request: string;
  /** The id of the message that asked for it: a retried run finds its plan again instead of starting over. */
  sourceMessageId: string | null;
  goal: string | null;
  priority: PlanPriority;
  /** Why the plan stopped (a bound, a cancel, an error), or why it ended. */
  reason: string | null;
  knowledge: KnowledgeRecord | null;
  heartbeat: HeartbeatRecord | null;
  strategicRevisionCount: number;
  finalCriticReason: string | null;
  lastRunId: string | null;
  createdAt: Iso;
  updatedAt: Iso;
  endedAt: Iso | null;
  milestones: MilestoneRecord[];
}

export type ToolCallStatus = 'succeeded' | 'failed' | 'refused';

export interface ToolCallRecord {
  id: string;
  planId: string;
  runId: string;
  /** Null for a knowledge-gathering call made before any milestone. */
  milestoneId: string | null;
  stepIndex: number | null;
  seq: number;
  tool: string;
  args: Record<string, unknown>;
  status: ToolCallStatus;
  output: string | null;
  error: string | null;
  startedAt: Iso;
  endedAt: Iso;
}

export type NewToolCall = Omit<ToolCallRecord, 'seq'>;

export interface NewPlan {
  id: string;
  userId: string;
  agentId: string;
  threadId: string;
  request: string;
  sourceMessageId: string | null;
  runId: string;
}

export interface NewMilestone {
  id: string;
  title: string;
  description: string;
  successCriteria: string;
}

export interface MilestonePatch {
  status?: MilestoneStatus;
  revisionCount?: number;
  criticDecision?: string | null;
  criticReason?: string | null;
  steps?: TacticalStepState[];
  currentStep?: number;
  completedAt?: Iso | null;
}

export interface PlanPatch {
  status?: PlanStatus;
  goal?: string | null;
  priority?: PlanPriority;
  reason?: string | null;
  knowledge?: KnowledgeRecord | null;
  heartbeat?: HeartbeatRecord | null;
  strategicRevisionCount?: number;
  finalCriticReason?: string | null;
  lastRunId?: string | null;
  endedAt?: Iso | null;
}

export interface PlanRepository {
  create(plan: NewPlan, now: Iso): Promise<PlanRecord>;
  /** Only the owner's plan (I12): another user's id answers undefined. */
  get(userId: string, planId: string): Promise<PlanRecord | undefined>;
  /** The owner's plans of a thread, newest first. */
  listByThread(userId: string, threadId: string, options: { limit: number }): Promise<PlanRecord[]>;
  /** The thread's newest plan that is not completed or superseded, if any. */
  findOpen(userId: string, threadId: string): Promise<PlanRecord | undefined>;
  update(planId: string, patch: PlanPatch, now: Iso): Promise<void>;
  /**
   * Mark the plan stopped only if it is still open and this run was the last to work on it
   * (a cancel's late write must not undo what a newer run did). True when it changed.
   */
  markStopped(planId: string, input: { runId: string; reason: string }, now: Iso): Promise<boolean>;
  /**
   * Replace the plan's pending milestones with these, after the completed ones (a first
   * plan, or a strategic revision that keeps finished work), atomically.
   */
  replacePendingMilestones(planId: string, milestones: NewMilestone[], now: Iso): Promise<MilestoneRecord[]>;
  updateMilestone(planId: string, milestoneId: string, patch: MilestonePatch, now: Iso): Promise<void>;
  recordToolCall(call: NewToolCall): Promise<ToolCallRecord>;
  /** The plan's latest tool calls (before the cursor's, when given), oldest first within the page; none for another user's plan (I12). */
  listToolCalls(userId: string, planId: string, options: { limit: number; cursor?: string | undefined }): Promise<ToolCallPage>;
}

export interface ToolCallPage {
  /** Oldest first within the page. */
  toolCalls: ToolCallRecord[];
  /** Cursor for the next older page, or null at the plan's first tool call. */
  nextCursor: string | null;
}

/**
 * The overlord's per-thread heartbeat timer, as the planner graph needs it: arm a check
 * when a plan is left unfinished, disarm when it completes. Implemented over the JobQueue
 * port (queue `overlord`, key = thread id).
 */
export interface PlanHeartbeats {
  arm(input: { userId: string; threadId: string; planId: string; agentId: string; delayMs: number }): Promise<void>;
  disarm(threadId: string): Promise<void>;
}
