/**
 * Ports: what the application needs from the outside world. Adapters under
 * src/adapters implement them; one contract suite (test/contract) runs every adapter
 * against the same cases, on SQLite and on PostgreSQL.
 */
import type { BaseMessage } from '@langchain/core/messages';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import type { Visibility } from '../domain/message-metadata.js';
import type { RunStatus, RunTrigger } from '../domain/run-context.js';
import type { VigilEvent } from '../domain/events.js';
import type { ModelInputRecord } from '../domain/context/context-report.js';
import type { StorageTransaction } from './job-queue.js';

export type Iso = string; // ISO 8601 UTC timestamp

// ---------- agents ----------
export type AgentKind = 'chat' | 'planner';

export interface AgentRecord {
  id: string;
  userId: string;
  name: string;
  kind: AgentKind;
  systemPrompt: string;
  /** `demo`, `openai:<model>`, `anthropic:<model>`; null = the server's configured default. */
  model: string | null;
  /** Agent policies (autonomy, memory, …) as validated JSON; each feature owns its key. */
  settings: Record<string, unknown>;
  createdAt: Iso;
  updatedAt: Iso;
}

export type NewAgent = Omit<AgentRecord, 'createdAt' | 'updatedAt'>;

export interface AgentRepository {
  /** Fails with AGENT_EXISTS when (userId, id) is taken. */
  create(agent: NewAgent, now: Iso): Promise<AgentRecord>;
  get(userId: string, id: string): Promise<AgentRecord | undefined>;
  list(userId: string): Promise<AgentRecord[]>;
  /** Set one key of an agent's settings (others untouched); undefined when the agent is not the user's. */
  updateSetting(userId: string, id: string, key: string, value: unknown, now: Iso): Promise<AgentRecord | undefined>;
  /** Change an agent's own fields; undefined when the agent is not the user's. */
  update(userId: string, id: string, changes: AgentChanges, now: Iso): Promise<AgentRecord | undefined>;
  /** False when the agent is not the user's. */
  delete(userId: string, id: string): Promise<boolean>;
}

export type AgentChanges = Partial<Pick<AgentRecord, 'name' | 'systemPrompt' | 'model'>>;

// ---------- threads and their history ----------
export interface ThreadRecord {
  id: string;
  userId: string;
  agentId: string;
  title: string | null;
  createdAt: Iso;
  updatedAt: Iso;
  /** Time of the last real user message (I2: internal messages never move it). */
  lastUserActivityAt: Iso | null;
  /** Messages a person sees (I2), and the preview of the last one. */
  visibleCount: number;
  lastVisiblePreview: string | null;
  lastVisibleAt: Iso | null;
  /** Every projected message, visible or not. */
  messageCount: number;
}

export interface NewThread {
  id: string;
  userId: string;
  agentId: string;
  title: string | null;
}

/** A message as history returns it: the LangChain message's serialisable fields, tool calls as their redacted view. */
export interface StoredMessage {
  threadId: string;
  seq: number; // its number in the thread's store: increasing in thread order, with gaps
  id: string; // LangChain message id
  type: string; // 'human' | 'ai' | 'system' | 'tool'
  content: unknown; // string or array of content blocks, stored as JSON
  additionalKwargs: Record<string, unknown>;
  responseMetadata: Record<string, unknown>;
  visibility: Visibility;
  runId: string | null;
  createdAt: Iso;
}

export type NewStoredMessage = Omit<StoredMessage, 'threadId' | 'seq'> & {
  /** Plain-text preview (textOf) used for the thread list when visible. */
  preview: string;
  /** True for a real person's message: moves lastUserActivityAt (I2). */
  isRealUserMessage: boolean;
};

export interface ThreadPage {
  threads: ThreadRecord[];
  nextCursor: string | null;
}

export interface MessagePage {
  /** Oldest first within the page. */
  messages: StoredMessage[];
  /** Cursor for the next older page, or null at the start of the thread. */
  nextCursor: string | null;
}

export interface HistoryOptions {
  visibility: 'user' | 'all' | 'internal';
  limit: number;
  cursor?: string | undefined;
  fromSeq?: number | undefined;
}

/** What is written beside a new thread, in the transaction that inserts it: both are made, or neither. */
export type AlsoWithinThread = (transaction: StorageTransaction, thread: ThreadRecord) => Promise<void>;

export interface ThreadRepository {
  /** With `alsoWithin`: its writes commit with the thread, and its failure leaves no thread. */
  create(thread: NewThread, now: Iso, alsoWithin?: AlsoWithinThread): Promise<ThreadRecord>;
  /** Only the owner's thread: another user's id answers undefined (I12). */
  get(userId: string, threadId: string): Promise<ThreadRecord | undefined>;
  /** Indexed by user, newest activity first; never a scan of checkpoints. */
  list(userId: string, options: { limit: number; cursor?: string | undefined }): Promise<ThreadPage>;
  /**
   * A page of the thread's history, newest page first (history is written by the checkpoint
   * saver, with the checkpoint holding its messages and the thread's counters); `visibility: 'user'` hides internal ones
   * (I2), `'internal'` lists only them. Only the owner's thread answers (I12): another
   * user gets an empty page. `fromSeq` bounds the page below (inclusive).
   */
  history(userId: string, threadId: string, options: HistoryOptions): Promise<MessagePage>;
  /** Whether the thread's history holds a message that this run added; false for another user's thread (I12). */
  hasMessagesOfRun(userId: string, threadId: string, runId: string): Promise<boolean>;
  /** The messages this run added to the thread's history, in order; none for another user's thread (I12). */
  messagesOfRun(userId: string, threadId: string, runId: string): Promise<StoredMessage[]>;
  /** Set the title; undefined when the thread is not the user's (I12). */
  rename(userId: string, threadId: string, title: string | null): Promise<ThreadRecord | undefined>;
  /**
   * Delete the thread, its projected messages and, in the same transaction, what other
   * features keep of it or would start on it (its follow-ups, bound schedules and
   * webhooks, plans, approvals…): all of it goes, or none. False when it is not the user's (I12).
   */
  delete(userId: string, threadId: string): Promise<boolean>;
  /** Ids of the user's threads with this agent (for deleting an agent). */
  listIdsByAgent(userId: string, agentId: string): Promise<string[]>;
}

// ---------- runs ----------
export interface RunRecord {
  id: string;
  threadId: string;
  userId: string;
  agentId: string;
  trigger: RunTrigger;
  meta: Record<string, unknown>;
  correlationId: string;
  status: RunStatus;
  /** Why it ended the way it did (a bound, a cancel, an error code). */
  reason: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  model: string;
  requestedAt: Iso;
  startedAt: Iso;
  endedAt: Iso | null;
  /** What each model call of the run received, in order (empty until the run ended, or for runs before this was kept). */
  modelInputs: ModelInputRecord[];
  /** Its thread was deleted: the record stays, but no thread of the same id lists it as its own. */
  threadDeleted?: boolean;
}

export type NewRun = Omit<RunRecord, 'status' | 'reason' | 'errorCode' | 'errorMessage' | 'endedAt' | 'modelInputs' | 'threadDeleted'>;

export interface RunEnd {
  status: Exclude<RunStatus, 'running'>;
  /** What the run's model calls received (parts and token counts, the window's first and last message). */
  modelInputs?: ModelInputRecord[];
  reason?: string | null;
  errorCode?: string | null;
  errorMessage?: string | null;
  endedAt: Iso;
}

export interface RunRepository {
  create(run: NewRun): Promise<RunRecord>;
  finish(runId: string, end: RunEnd): Promise<RunRecord>;
  get(userId: string, runId: string): Promise<RunRecord | undefined>;
  listByThread(userId: string, threadId: string, options: { limit: number }): Promise<RunRecord[]>;
  /** Runs of every user still marked running that started before `startedBefore`, oldest first. */
  listRunning(options: { startedBefore: Iso; limit: number }): Promise<RunRecord[]>;
}

// ---------- long-term memory ----------
export interface MemoryNamespace {
  userId: string;
  agentId: string;
}

/**
 * Who wrote a memory: the person (or their app) through the API, or the agent's
 * memory_write tool in a run. Recalled memories are data either way (never instructions);
 * the origin tells a person which are their own words and which the agent's notes.
 */
/** The agent's: the run and thread it wrote in (the thread null once deleted; the run's record stays). */
export type MemoryOrigin = { by: 'api' } | { by: 'agent'; runId: string; threadId: string | null };

export interface MemoryRecord {
  id: string;
  userId: string;
  agentId: string;
  content: string;
  createdAt: Iso;
  /** When its text was last written: its creation, or the latest replace (which keeps createdAt). */
  updatedAt: Iso;
  /** Null for memories written before origins were recorded. */
  origin: MemoryOrigin | null;
}

export interface MemoryHit extends MemoryRecord {
  /** Higher is more relevant; comparable only within one search. */
  score: number;
}

export interface MemoryPage {
  /** Newest first (by creation: a replace keeps a memory's place). */
  memories: MemoryRecord[];
  /** Cursor for the next older page, or null when these reach back to the namespace's first memory. */
  nextCursor: string | null;
}

export interface MemoryStore {
  add(namespace: MemoryNamespace, memory: { id: string; content: string; origin: MemoryOrigin }, now: Iso): Promise<MemoryRecord>;
  /** Real full-text search (SQLite FTS5, PostgreSQL tsvector), only within the namespace. */
  search(namespace: MemoryNamespace, query: string, options: { limit: number }): Promise<MemoryHit[]>;
  /** The namespace's memories, newest first, from after the cursor's when given; a cursor vigil did not give is VALIDATION_FAILED. */
  list(namespace: MemoryNamespace, options: { limit: number; cursor?: string | undefined }): Promise<MemoryPage>;
  /**
   * Add a memory, or replace the namespace's memory with this id (its content, time and
   * origin), in one statement: a reader finds the old memory or the new one, never none.
   * Undefined when the id is another namespace's memory (another agent's or user's), which
   * stays untouched.
   */
  put(namespace: MemoryNamespace, memory: { id: string; content: string; origin: MemoryOrigin }, now: Iso): Promise<MemoryRecord | undefined>;
  /** The namespace's memory with this id, however old; undefined for none (another agent's or user's included, I12). */
  get(namespace: MemoryNamespace, memoryId: string): Promise<MemoryRecord | undefined>;
  /** Deletes only the user's own memory; false when there is none. */
  delete(userId: string, memoryId: string): Promise<boolean>;
}

// ---------- checkpoints ----------
/**
 * Set (true) in the configurable of a run whose graph takes one node per step and whose
 * attempts end with `settle`: the saver may then hold an input checkpoint and a finished
 * task's writes until the checkpoint that supersedes them (see held-checkpoint-writes.ts).
 */
export const HOLD_SUPERSEDED_WRITES = 'vigil_hold_superseded_writes';

/**
 * Set (true) with HOLD_SUPERSEDED_WRITES by a run whose input is a message: the checkpoint
 * after the step that applied the input is held too, its messages written at once (see
 * held-checkpoint-writes.ts). The run must first take the thread's unapplied messages.
 */
export const HOLD_INPUT_STEP = 'vigil_hold_input_step';

/**
 * Set in a run's configurable: what the saver records with the messages the run adds to the
 * thread's history, and who it tells once they are stored (in the transaction that stores
 * the checkpoint holding them).
 */
export const HISTORY_SINK = 'vigil_history_sink';

export interface HistorySink {
  runId: string | null;
  /** The time recorded for the messages history shows from now (ISO). */
  now(): Iso;
  /** The messages history now shows, in order, as history returns them. */
  onStored?(messages: StoredMessage[]): void;
}

export interface CheckpointSettling {
  /** A run's attempt on the thread ended: store what the saver still holds for it. */
  settle?(threadId: string): Promise<void>;
  /**
   * Messages the thread's history shows that no stored checkpoint holds: accepted by a run
   * whose process ended before the checkpoint holding them was stored (HOLD_INPUT_STEP).
   */
  unappliedMessages?(threadId: string): Promise<BaseMessage[]>;
  /**
   * A run's input written to the thread's history (durable, told to the sink) before its
   * graph starts, answering in the same transaction the thread's unapplied messages, which
   * the run takes first.
   */
  storeInput?(threadId: string, messages: readonly BaseMessage[], sink: HistorySink | undefined): Promise<BaseMessage[]>;
}

// ---------- storage as a whole ----------
export interface Storage {
  readonly kind: 'sqlite' | 'postgres';
  readonly agents: AgentRepository;
  readonly threads: ThreadRepository;
  readonly runs: RunRepository;
  readonly memories: MemoryStore;
  /** The LangGraph checkpointer for thread state, on the same backend. */
  readonly checkpointer: BaseCheckpointSaver & CheckpointSettling;
  /** Liveness of the database, for /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

// ---------- events ----------
/**
 * A thread's events carry an id, increasing within the thread (I15): a client that
 * reconnects names the last id it saw and gets the rest, in order, once. Observers
 * (metrics, outbound webhooks) see this process's events before they are numbered.
 */
export type EventHandler = (event: VigilEvent, eventId?: number) => void;

export interface SubscribeOptions {
  /** Replay the thread's events after this id (within the bus's window) before live ones. */
  afterEventId?: number | undefined;
  /**
   * Called once, after subscribe returns, when the events after `afterEventId` still in the
   * bus's window have been handed to the handler (at once when there was nothing to replay):
   * what follows is live. A follower of an ended run learns here whether any of it is left.
   */
  onReplayed?: (() => void) | undefined;
}

export interface EventBus {
  publish(event: VigilEvent): void;
  /** Subscribe to one thread's events, wherever they were published; returns the unsubscribe function. */
  subscribe(threadId: string, handler: EventHandler, options?: SubscribeOptions): () => void;
  /** Every event this process publishes, whatever the thread (metrics); returns the stop function. */
  observe(handler: EventHandler): () => void;
  /**
   * The thread was deleted: its replay window and its numbering go (on PostgreSQL its
   * thread_events rows, which hold what was said, and its counter row).
   */
  forgetThread(threadId: string): Promise<void>;
  /** Resolves once every event published so far is on its way to subscribers (written, for a shared bus). */
  flush?(): Promise<void>;
  close?(): Promise<void>;
}

// ---------- time and ids ----------
export interface Clock {
  now(): Date;
}

export interface IdGenerator {
  next(): string;
}

// ---------- models ----------
/** Resolves a model spec (`demo`, `openai:<model>`, `anthropic:<model>`) to a LangChain chat model. */
export type ChatModelResolver = (spec: string) => import('@langchain/core/language_models/chat_models').BaseChatModel;
