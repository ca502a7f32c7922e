import type { Iso } from '../ports.js';

/** A webhook: who owns it, where its deliveries run, and how a delivery becomes a task. */
export interface HookRecord {
  id: string;
  userId: string;
  agentId: string;
  /** A fixed thread every delivery runs on; null = a new thread per delivery. */
  threadId: string | null;
  name: string;
  /** The task text template (see hook-template.ts). */
  taskTemplate: string;
  /** Payload paths exposed to meta and template; null = the first fields of the payload. */
  payloadFields: string[] | null;
  createdAt: Iso;
}

/** A hook with its encrypted secret: only the delivery path ever reads this. */
export interface HookWithSecret extends HookRecord {
  secretCiphertext: string;
}

export type NewHook = Omit<HookWithSecret, 'createdAt'>;

export interface HookDelivery {
  hookId: string;
  deliveryId: string;
  runId: string;
  receivedAt: Iso;
  /**
   * The thread that held the delivery's task was deleted. The record stays: the delivery
   * was accepted, and a replay of it is refused as before (its task's message, the
   * evidence takeOver looks for, went with the thread).
   */
  threadDeleted: boolean;
}

export type NewHookDelivery = Omit<HookDelivery, 'threadDeleted'>;

/** Storage of hooks and their deliveries (adapters/sql/hook-repository.ts). */
export interface HookStore {
  create(hook: NewHook, now: Iso): Promise<HookRecord>;
  /** Only the owner's hook (I12): another user's id answers undefined. */
  get(userId: string, hookId: string): Promise<HookRecord | undefined>;
  list(userId: string, options: { limit: number }): Promise<HookRecord[]>;
  /** False when the user has no such hook. Its deliveries go with it. */
  delete(userId: string, hookId: string): Promise<boolean>;
  /** Any owner's hook, with its secret: the delivery route is authenticated by the signature. */
  getForDelivery(hookId: string): Promise<HookWithSecret | undefined>;
  /**
   * Record a delivery atomically; false when (hookId, deliveryId) was already recorded (a
   * replay). Exactly one of several concurrent identical deliveries gets true.
   */
  recordDelivery(delivery: NewHookDelivery): Promise<boolean>;
  /**
   * Hand a recorded delivery to a new attempt (the first died before its task was stored):
   * true for exactly one caller, and only while the record still names `fromRunId`.
   */
  takeOverDelivery(hookId: string, deliveryId: string, fromRunId: string, to: { runId: string; receivedAt: Iso }): Promise<boolean>;
  /**
   * Undo recordDelivery when the run could not be set up, so the sender may retry; only
   * while the record still names `runId`: a retry that took the delivery over meanwhile
   * keeps it (erased, a third attempt would run the delivery again).
   */
  forgetDelivery(hookId: string, deliveryId: string, runId: string): Promise<void>;
  getDelivery(hookId: string, deliveryId: string): Promise<HookDelivery | undefined>;
  /** A hook's recorded deliveries, newest first (the caller checks the hook is the user's). */
  listDeliveries(hookId: string, options: { limit: number }): Promise<HookDelivery[]>;
}
