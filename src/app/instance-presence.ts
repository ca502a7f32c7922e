/**
 * Which server processes are still running, for records a process owns without holding any
 * lock for them: a LangGraph protocol run queued behind another run on its thread holds
 * nothing durable (its message is in the process's memory), so when its process dies nothing
 * says so. Each process has an id of its own, new at every start (a restarted process is
 * another one, even with the same VIGIL_INSTANCE_ID), and another process can ask whether
 * the one with a given id is still there.
 *
 * Two adapters: in-process below (SQLite: one process serves a database — its thread locks
 * are in-process — so only this process is alive), and a PostgreSQL advisory lock each
 * process holds for its lifetime on a connection of its own (adapters/locks), which
 * PostgreSQL releases when the process dies.
 */
import { randomUUID } from 'node:crypto';

export interface InstancePresence {
  /** This process's id: new at every start, never reused. */
  readonly id: string;
  /**
   * Whether the process with this id is still running. `null`: a record written before
   * owners were recorded. An answer that cannot be had (the database does not answer) is
   * `true`: a live owner is never judged gone for want of an answer.
   */
  isAlive(id: string | null): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * One process per database (SQLite): alive is this process only. A record without an owner
 * was written by a server before this one (it always names its owner), so its process is gone.
 */
export class InProcessInstancePresence implements InstancePresence {
  readonly id = randomUUID();

  async isAlive(id: string | null): Promise<boolean> {
    return id === this.id;
  }

  async close(): Promise<void> {}
}
