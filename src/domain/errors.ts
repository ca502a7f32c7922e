/**
 * One error type for the whole server. Each error carries a stable UPPER_SNAKE code and
 * an HTTP status; callers recognise it by a marker property, not `instanceof`, so an
 * error that crossed a package or realm boundary is still recognised.
 */
export const ERROR_CODES = {
  VALIDATION_FAILED: { status: 400, description: 'The request body, query or params failed validation (wrong type, missing or unknown field).' },
  OUTBOUND_ADDRESS_REFUSED: { status: 400, description: 'The webhook URL is not http(s), or points to a private or loopback address (VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE allows those).' },
  APPROVAL_ARGUMENTS_INVALID: { status: 400, description: "The edited arguments do not fit the tool's schema." },
  MALFORMED_JSON: { status: 400, description: 'The request body is not valid JSON.' },
  UNAUTHORIZED: { status: 401, description: 'No bearer token, or one that is not configured.' },
  HOOK_SIGNATURE_INVALID: { status: 401, description: "The webhook delivery's webhook-signature is missing or does not match its id, timestamp and body." },
  HOOK_TIMESTAMP_STALE: { status: 401, description: "The webhook delivery's webhook-timestamp is missing or more than 5 minutes from the server's clock." },
  TELEGRAM_SECRET_INVALID: { status: 401, description: 'The Telegram update did not carry the configured X-Telegram-Bot-Api-Secret-Token.' },
  NOT_FOUND: { status: 404, description: 'No such route.' },
  AGENT_NOT_FOUND: { status: 404, description: 'No agent with this id belongs to you.' },
  THREAD_NOT_FOUND: { status: 404, description: 'No thread with this id belongs to you.' },
  CHECKPOINT_NOT_FOUND: { status: 404, description: 'Your thread has no checkpoint with this id (LangGraph protocol: `vigil-<n>`, the thread after its first n messages).' },
  RUN_NOT_FOUND: { status: 404, description: 'No run with this id belongs to you.' },
  MEMORY_NOT_FOUND: { status: 404, description: 'No memory with this id belongs to you.' },
  PLAN_NOT_FOUND: { status: 404, description: 'No plan with this id belongs to you.' },
  SCHEDULE_NOT_FOUND: { status: 404, description: 'No schedule with this id belongs to you.' },
  HOOK_NOT_FOUND: { status: 404, description: 'No webhook with this id (for management: none that belongs to you).' },
  TIMER_NOT_FOUND: { status: 404, description: 'No follow-up timer (or check-in) with this id on this thread belongs to you.' },
  OUTBOUND_WEBHOOK_NOT_FOUND: { status: 404, description: "No outbound webhook with this id belongs to you and this agent." },
  APPROVAL_NOT_FOUND: { status: 404, description: 'No approval request with this id belongs to you.' },
  APPROVAL_ALREADY_DECIDED: { status: 409, description: 'The approval request was already decided (or expired, or superseded) differently; the first decision stands.' },
  THREAD_AWAITING_APPROVAL: { status: 409, description: 'The thread waits for a decision on a tool call; autonomous runs on it are skipped, and its plan is not resumed, until then.' },
  AGENT_EXISTS: { status: 409, description: 'An agent with this id already exists.' },
  PLAN_NOT_RESUMABLE: { status: 409, description: 'The plan is completed or superseded; there is nothing to resume.' },
  PLAN_BUSY: { status: 409, description: "A run is already working on the plan's thread; resume it when that run has ended." },
  HOOK_DELIVERY_REPLAYED: { status: 409, description: 'This webhook-id was already received by this webhook; nothing was started.' },
  HOOK_DELIVERY_PENDING: { status: 409, description: 'An earlier attempt of this webhook-id may still be storing its task; nothing was started. Retry later: once that attempt is known to have died, a retry is accepted.' },
  TIMER_NOT_PENDING: { status: 409, description: 'The follow-up timer (or check-in) has already fired, or was cancelled, dropped or skipped.' },
  THREAD_BUSY: { status: 409, description: 'A run is in progress or waiting on the thread, and the multitask strategy is `reject`.' },
  RUN_NOT_CANCELLABLE: { status: 409, description: 'The run resumes tool calls whose decisions are already recorded, and a decision is final (I16): it was not cancelled, and the run that carries the decisions out starts anyway (LangGraph protocol).' },
  THREAD_EXISTS: { status: 409, description: 'A thread with this id already exists (LangGraph protocol, if_exists=raise).' },
  MEMORY_EXISTS: { status: 409, description: "A memory with this id already exists in another namespace (LangGraph store: the key is another agent's or another user's); choose another key." },
  ASSISTANT_MISMATCH: { status: 409, description: "The thread already holds messages of another assistant; vigil binds a thread to one agent." },
  ASSISTANT_HAS_THREADS: { status: 409, description: 'Deleting this assistant (a vigil agent) would delete its threads; ask for that with delete_threads=true.' },
  UNSUPPORTED_OPTION: { status: 422, description: 'A LangGraph protocol option vigil understands but cannot honour; it is refused rather than ignored.' },
  BODY_TOO_LARGE: { status: 413, description: 'The request body, or WebSocket frame, exceeds the configured limit (VIGIL_BODY_LIMIT).' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, description: 'The request body is not application/json.' },
  HOOK_TASK_NOT_STORED: { status: 503, description: "The webhook delivery's run ended before its task was stored (storage failed, or the thread could not be run); nothing was accepted. Retry." },
  RUN_CANCELLED: { status: 499, description: 'The run was cancelled before it finished.' },
  DATABASE_UNAVAILABLE: { status: 503, description: 'The database does not answer: this instance is not ready (GET /readyz). It recovers on its own once the database is back.' },
  SERVER_STOPPING: { status: 503, description: 'The server stopped before this request was done. Send it again (another instance, or this one once it is back).' },
  INTERNAL: { status: 500, description: 'An unexpected server error; the log has the details.' },
  MODEL_ERROR: { status: 502, description: 'The model provider failed or returned an unusable answer.' },
  MODEL_RATE_LIMITED: { status: 503, description: "The model provider kept answering 429 (rate limited), or asked to wait longer than the server's retry bound." },
  MODEL_TIMEOUT: { status: 504, description: 'The model provider did not answer within VIGIL_MODEL_TIMEOUT_MS.' },
  MODEL_STREAM_CUT: { status: 502, description: "The model provider's stream broke off before the reply was complete." },
  CONFIG_INVALID: { status: 500, description: 'A setting is invalid; the server refuses to start.' },
  INTEGRITY_CHECK_FAILED: { status: 500, description: 'Message metadata did not survive a checkpoint round trip (I3); the server refuses to start.' },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

const MARKER = Symbol.for('vigil.error');

export class VigilError extends Error {
  readonly [MARKER] = true;
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; details?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'VigilError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.details = options.details;
  }
}

export function isVigilError(value: unknown): value is VigilError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
}
