/** Kysely type of `vigil_jobs` (SQLite only, migration 0002): the embedded scheduler's jobs. */
export interface JobsTable {
  id: string;
  queue: string;
  key: string;
  /** ISO 8601 UTC text: SQLite compares these as text, and every one has the same shape. */
  due_at: string;
  payload: string;
  state: 'pending' | 'active' | 'failed';
  /** Deliveries so far (1 while the first delivery runs). */
  attempt: number;
  lease_until: string | null;
  claimed_by: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export type JobTables = {
  vigil_jobs: JobsTable;
};
