/**
 * Cancelling a run that another instance runs. A cancel reaches the run coordinator of the
 * instance it arrives at; when that instance does not run it, the request goes to every
 * instance (PostgreSQL NOTIFY), and the one that runs it stops it.
 */
export interface RunCancelRequest {
  runId: string;
  /** Whose run: the instance that runs it cancels it for this user only (I12). */
  userId: string;
}

export interface RunCancellations {
  /** Ask every instance to cancel the run (answered by none when it has ended meanwhile). */
  request(cancel: RunCancelRequest): Promise<void>;
  /** Hear the requests of every instance; returns the stop function. */
  listen(handler: (cancel: RunCancelRequest) => void): Promise<() => void>;
}
