/**
 * What vigil's checkpoint saver (thread-saver.ts) needs from a database: the few statements
 * over the thread store's tables (migration 25), one implementation per backend
 * (checkpoint-store-sqlite.ts, checkpoint-store-postgres.ts). Everything else (planning
 * rows, packing, memory, holding writes back) is the saver's, the same on both.
 */
import type { Visibility } from '../../domain/message-metadata.js';

export interface StoredMessageRow {
  seq: number;
  messageId: string;
  type: string;
  body: Uint8Array;
  /** Shown in history (a row read back; absent on rows being written). */
  shown?: boolean;
}

/** A row to write. `shown`: in the history channel, so history shows it unless a row of the same message id is shown already. */
export interface NewMessageRow extends StoredMessageRow {
  shown: boolean;
}

/** What history records of a row it shows, and what the thread's counters take from it. */
export interface HistoryFacts {
  visibility: Visibility;
  /** Plain-text preview, for the thread list when visible. */
  preview: string;
  /** A real person's message: moves the thread's last user activity (I2). */
  realUser: boolean;
}

export interface StoredWrite {
  taskId: string;
  idx: number;
  channel: string;
  type: string | null;
  value: Uint8Array | null;
  taskPath: string;
}

export interface StoredCheckpoint {
  threadId: string;
  checkpointNs: string;
  key: number;
  checkpointId: string;
  parentId: string | null;
  lastSeq: number;
  body: Uint8Array;
  writes: StoredWrite[];
}

export interface ThreadRead {
  key: number;
  /** The key's highest message row number (0 for none). */
  maxSeq: number;
  checkpoint: StoredCheckpoint | undefined;
}

export interface CommitRequest {
  key: number;
  /** The thread whose counters (`threads`) new history rows move; undefined outside namespace ''. */
  threadId: string | undefined;
  rows: readonly (NewMessageRow & { facts?: HistoryFacts | undefined })[];
  /** Known rows of the history channel to show, unless a row of the same message id is shown already. */
  marks: readonly { seq: number; messageId: string; facts: HistoryFacts }[];
  /** Who and when, for the rows history shows. */
  runId: string | null;
  at: string;
  values: readonly { hash: string; type: string; value: Uint8Array }[];
  /**
   * Also answer the thread's unapplied history rows (see `unapplied`) as they were before this
   * commit: a run storing its input takes them first, in the same transaction.
   */
  unapplied?: boolean;
  /**
   * Absent: rows only (what a held checkpoint added, made durable before it is stored).
   * `lastSeq`: the highest row the checkpoint refers to; stored is the thread's last row when
   * the checkpoint is, so that a row after it is one no checkpoint was stored since (see `unapplied`).
   */
  checkpoint?: { checkpointId: string; parentId: string | null; lastSeq: number; body: Uint8Array } | undefined;
}

export interface CommitResult {
  /** The row numbers history now shows. */
  shown: number[];
  /** With `unapplied` asked: the thread's unapplied history rows before the commit. */
  unapplied: StoredMessageRow[];
}

/** Thrown by commit when the key's row is gone (its thread was deleted) or a row number is taken: re-read and try again. */
export class StoreConflict extends Error {
  constructor(readonly what: 'key' | 'seq', options?: { cause?: unknown }) {
    super(what === 'key' ? 'the thread key is gone' : 'a message row number is taken', options);
    this.name = 'StoreConflict';
  }
}

export interface ListQuery {
  threadId?: string | undefined;
  checkpointNs?: string | undefined;
  /** Only checkpoints whose id sorts before this one. */
  before?: string | undefined;
  limit?: number | undefined;
}

export interface CheckpointStore {
  /** The key of (thread, namespace); made when missing and `create`. */
  key(threadId: string, checkpointNs: string, create: boolean): Promise<number | undefined>;
  /** The latest checkpoint of (thread, namespace), or the one with this id, with its pending writes; undefined when the key does not exist. */
  read(threadId: string, checkpointNs: string, checkpointId?: string): Promise<ThreadRead | undefined>;
  /** Newest first. */
  list(query: ListQuery): Promise<StoredCheckpoint[]>;
  /** The pending writes of one checkpoint of the key (a parent's sends, for a checkpoint older than format 4). */
  writes(key: number, checkpointId: string): Promise<StoredWrite[]>;
  /** Rows whose number falls in the ranges (`[lo, hi, …]`, inclusive). */
  messages(key: number, ranges: readonly number[]): Promise<StoredMessageRow[]>;
  values(key: number, hashes: readonly string[]): Promise<Map<string, { type: string; value: Uint8Array }>>;
  maxSeq(key: number): Promise<number>;
  /** One transaction: rows, marks, values, the checkpoint and the thread's counters. */
  commit(request: CommitRequest): Promise<CommitResult>;
  /** `replace`: a write of a special channel (an error, an interrupt) replaces one stored for the same task and index. */
  putWrites(key: number, checkpointId: string, writes: readonly StoredWrite[], replace: boolean): Promise<void>;
  /** The thread's rows of every namespace, history included. */
  deleteThread(threadId: string): Promise<void>;
  /**
   * History rows of (thread, '') written after its latest checkpoint was stored: accepted by a
   * run whose checkpoint never came (its process ended), never part of a stored state. A row a
   * later checkpoint removed (or a fork left out) is not among them: it was there when that
   * checkpoint was stored.
   */
  unapplied(threadId: string): Promise<StoredMessageRow[]>;
}
