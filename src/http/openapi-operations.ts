/**
 * The API document's operations in one place: each route's operationId and summary, and
 * the error statuses it can answer beyond the ones every route of its shape can (see
 * `documentedStatuses`). The document is completed from this table when it is built, and
 * in strict mode (tests) a response with a status the document does not declare is
 * reported, so the document cannot drift from what the server does.
 */
export interface OperationDoc {
  id: string;
  summary: string;
  /** Error statuses this route can answer besides the automatic ones (e.g. 409). */
  errors?: readonly number[];
  /** Also answers as server-sent events (with Accept: text/event-stream). */
  sse?: boolean;
  /** Needs no bearer token (health, signed deliveries, channel updates). */
  public?: boolean;
}

export const OPERATIONS: Readonly<Record<string, OperationDoc>> = {
  'GET /healthz': { id: 'getHealth', summary: 'Liveness: the process answers', public: true },
  'GET /readyz': { id: 'getReadiness', summary: 'Readiness: the database answers (else 503 DATABASE_UNAVAILABLE); the model in use; this instance (id, database, queue, singleton roles held)', public: true, errors: [503] },
  'GET /metrics': { id: 'getMetrics', summary: 'Prometheus metrics' },
  'POST /api/agents': { id: 'createAgent', summary: 'Create an agent', errors: [409] },
  'GET /api/agents': { id: 'listAgents', summary: 'List your agents' },
  'GET /api/agents/{agentId}': { id: 'getAgent', summary: 'Get an agent' },
  'PATCH /api/agents/{agentId}': { id: 'updateAgent', summary: 'Update an agent' },
  'DELETE /api/agents/{agentId}': { id: 'deleteAgent', summary: 'Delete an agent, with its threads, memories, timers, schedules and hooks', errors: [503] },
  'POST /api/agents/{agentId}/memories': { id: 'addMemory', summary: "Add a memory to an agent's long-term memory" },
  'GET /api/agents/{agentId}/memories': { id: 'listMemories', summary: "List or search an agent's memories" },
  'DELETE /api/memories/{memoryId}': { id: 'deleteMemory', summary: 'Delete a memory' },
  'POST /api/threads': { id: 'createThread', summary: 'Create a thread' },
  'GET /api/threads': { id: 'listThreads', summary: 'List your threads, newest activity first' },
  'GET /api/threads/{threadId}': { id: 'getThread', summary: 'Get a thread' },
  'PATCH /api/threads/{threadId}': { id: 'updateThread', summary: 'Rename a thread' },
  'DELETE /api/threads/{threadId}': { id: 'deleteThread', summary: 'Delete a thread', errors: [503] },
  'GET /api/threads/{threadId}/history': { id: 'getThreadHistory', summary: 'Messages a person sees, newest page first' },
  'GET /api/threads/{threadId}/events': { id: 'streamThreadEvents', summary: "Stream the thread's events from every instance (resumable)", sse: true },
  'GET /api/threads/{threadId}/context': { id: 'getThreadContext', summary: 'What the next model call would receive, with token counts' },
  'POST /api/threads/{threadId}/messages': { id: 'sendMessage', summary: 'Send a message and run the agent', sse: true, errors: [409, 499] },
  'GET /api/threads/{threadId}/runs': { id: 'listThreadRuns', summary: "A thread's runs, newest first" },
  'GET /api/runs/{runId}': { id: 'getRun', summary: 'Get a run' },
  'POST /api/runs/{runId}/cancel': { id: 'cancelRun', summary: 'Cancel a run in progress' },
  'GET /api/agents/{agentId}/context': { id: 'getContextSettings', summary: "An agent's context budget settings" },
  'PUT /api/agents/{agentId}/context': { id: 'replaceContextSettings', summary: "Replace an agent's context budget settings" },
  'GET /api/agents/{agentId}/autonomy': { id: 'getAutonomyPolicy', summary: "An agent's autonomy policy" },
  'PUT /api/agents/{agentId}/autonomy': { id: 'replaceAutonomyPolicy', summary: "Replace an agent's autonomy policy" },
  'GET /api/threads/{threadId}/autonomy': { id: 'getThreadAutonomy', summary: "A thread's follow-up state" },
  'GET /api/threads/{threadId}/timers': { id: 'listThreadTimers', summary: "A thread's follow-up timers" },
  'DELETE /api/threads/{threadId}/timers/{timerId}': { id: 'cancelTimer', summary: 'Cancel a pending follow-up', errors: [409] },
  'POST /api/threads/{threadId}/autonomy/pause': { id: 'pauseThreadAutonomy', summary: 'Pause follow-ups on a thread' },
  'POST /api/threads/{threadId}/autonomy/resume': { id: 'resumeThreadAutonomy', summary: 'Resume follow-ups on a thread' },
  'POST /api/hooks': { id: 'createHook', summary: 'Create a webhook (its secret is shown once)' },
  'GET /api/hooks': { id: 'listHooks', summary: 'List your webhooks' },
  'GET /api/hooks/{hookId}': { id: 'getHook', summary: 'Get a webhook' },
  'GET /api/hooks/{hookId}/deliveries': { id: 'listHookDeliveries', summary: "A webhook's accepted deliveries and their runs" },
  'DELETE /api/hooks/{hookId}': { id: 'deleteHook', summary: 'Delete a webhook' },
  'POST /api/hooks/{hookId}': { id: 'deliverHook', summary: 'A signed webhook delivery', public: true, errors: [401, 409] },
  'GET /api/threads/{threadId}/plans': { id: 'listThreadPlans', summary: "A thread's plans, newest first" },
  'GET /api/plans/{planId}': { id: 'getPlan', summary: 'Get a plan with its steps and tool calls' },
  'POST /api/plans/{planId}/resume': { id: 'resumePlan', summary: 'Continue a stored plan in a new run', sse: true, errors: [409] },
  'GET /api/agents/{agentId}/tools': { id: 'listAgentTools', summary: 'The tools an agent can call now' },
  'GET /api/agents/{agentId}/planner': { id: 'getPlannerSettings', summary: "A planner agent's settings" },
  'PUT /api/agents/{agentId}/planner': { id: 'replacePlannerSettings', summary: "Replace a planner agent's settings" },
  'POST /api/schedules': { id: 'createSchedule', summary: 'Create a cron or one-shot schedule' },
  'GET /api/schedules': { id: 'listSchedules', summary: 'List your schedules' },
  'POST /api/schedules/preview': { id: 'previewSchedule', summary: 'The next fire times of a cron expression or one-shot time' },
  'GET /api/schedules/{scheduleId}': { id: 'getSchedule', summary: 'Get a schedule' },
  'PATCH /api/schedules/{scheduleId}': { id: 'updateSchedule', summary: 'Pause, resume or change a schedule' },
  'DELETE /api/schedules/{scheduleId}': { id: 'deleteSchedule', summary: 'Delete a schedule' },
  'GET /api/schedules/{scheduleId}/fires': { id: 'listScheduleFires', summary: "A schedule's fires and their runs" },
  'GET /api/approvals': { id: 'listApprovals', summary: 'Your tool-call approval requests across threads, newest first' },
  'GET /api/approvals/{approvalId}': { id: 'getApproval', summary: 'Get an approval request' },
  'POST /api/approvals/{approvalId}/decision': { id: 'decideApproval', summary: 'Approve, edit or reject a tool call', errors: [409] },
  'GET /api/threads/{threadId}/check-ins': { id: 'listCheckIns', summary: "The check-ins the agent set on a thread" },
  'DELETE /api/threads/{threadId}/check-ins/{checkInId}': { id: 'cancelCheckIn', summary: 'Cancel a pending check-in', errors: [409] },
  'GET /api/agents/{agentId}/autonomy/report': { id: 'getAutonomyReport', summary: 'Is autonomy welcome: replies and answers per trigger type' },
  'POST /api/agents/{agentId}/webhooks': { id: 'createOutboundWebhook', summary: "Subscribe a URL to an agent's events (secret shown once)" },
  'GET /api/agents/{agentId}/webhooks': { id: 'listOutboundWebhooks', summary: "An agent's outbound webhooks" },
  'DELETE /api/agents/{agentId}/webhooks/{webhookId}': { id: 'deleteOutboundWebhook', summary: 'Delete an outbound webhook' },
  'GET /api/agents/{agentId}/webhooks/{webhookId}/deliveries': { id: 'listOutboundDeliveries', summary: "An outbound webhook's delivery attempts" },
  // The LangGraph Platform API (Agent Protocol), for @langchain/langgraph-sdk clients: see the README.
  'GET /ok': { id: 'langgraphOk', summary: 'LangGraph protocol: the server answers', public: true },
  'GET /info': { id: 'langgraphInfo', summary: 'LangGraph protocol: server version and features', public: true },
  'POST /assistants': { id: 'langgraphCreateAssistant', summary: 'LangGraph protocol: create an assistant (a vigil agent)', errors: [409, 422] },
  'POST /assistants/search': { id: 'langgraphSearchAssistants', summary: 'LangGraph protocol: search your assistants' },
  'GET /assistants/{assistant_id}': { id: 'langgraphGetAssistant', summary: 'LangGraph protocol: get an assistant' },
  'PATCH /assistants/{assistant_id}': { id: 'langgraphUpdateAssistant', summary: 'LangGraph protocol: update an assistant', errors: [422] },
  'DELETE /assistants/{assistant_id}': { id: 'langgraphDeleteAssistant', summary: 'LangGraph protocol: delete an assistant and (delete_threads=true) its threads', errors: [409, 503] },
  'POST /assistants/count': { id: 'langgraphCountAssistants', summary: 'LangGraph protocol: count your assistants' },
  'POST /assistants/{assistant_id}/versions': { id: 'langgraphAssistantVersions', summary: "LangGraph protocol: an assistant's versions (vigil keeps one)" },
  'POST /assistants/{assistant_id}/latest': { id: 'langgraphSetLatestAssistantVersion', summary: 'LangGraph protocol: pick a version (only 1 exists)', errors: [422] },
  'POST /threads/count': { id: 'langgraphCountThreads', summary: 'LangGraph protocol: count your threads', errors: [422] },
  'GET /assistants/{assistant_id}/graph': { id: 'langgraphGetAssistantGraph', summary: "LangGraph protocol: an assistant's graph (nodes and edges)", errors: [422] },
  'GET /assistants/{assistant_id}/schemas': { id: 'langgraphGetAssistantSchemas', summary: "LangGraph protocol: an assistant's input, state and context schemas" },
  'POST /threads': { id: 'langgraphCreateThread', summary: 'LangGraph protocol: create a thread with metadata', errors: [409, 422] },
  'POST /threads/search': { id: 'langgraphSearchThreads', summary: 'LangGraph protocol: search your threads by metadata, ids or status', errors: [422] },
  'GET /threads/{thread_id}': { id: 'langgraphGetThread', summary: 'LangGraph protocol: get a thread with its values' },
  'PATCH /threads/{thread_id}': { id: 'langgraphUpdateThread', summary: "LangGraph protocol: merge into a thread's metadata", errors: [422] },
  'DELETE /threads/{thread_id}': { id: 'langgraphDeleteThread', summary: 'LangGraph protocol: delete a thread', errors: [503] },
  'GET /threads/{thread_id}/state': { id: 'langgraphGetThreadState', summary: "LangGraph protocol: a thread's state (visible messages, I2)" },
  'GET /threads/{thread_id}/state/{checkpoint_id}': { id: 'langgraphGetThreadStateAt', summary: "LangGraph protocol: a thread's state at a history point" },
  'POST /threads/{thread_id}/state': { id: 'langgraphUpdateThreadState', summary: 'LangGraph protocol: update state (refused: vigil writes messages only through runs)', errors: [422] },
  'POST /threads/{thread_id}/history': { id: 'langgraphThreadHistory', summary: "LangGraph protocol: a thread's states, newest first", errors: [422] },
  'POST /threads/{thread_id}/copy': { id: 'langgraphCopyThread', summary: 'LangGraph protocol: copy a thread (refused)', errors: [422] },
  'POST /threads/{thread_id}/runs': { id: 'langgraphCreateRun', summary: 'LangGraph protocol: start a run in the background', errors: [409, 422] },
  'POST /threads/{thread_id}/runs/stream': { id: 'langgraphStreamRun', summary: 'LangGraph protocol: start a run and stream it (SSE)', errors: [409, 422] },
  'POST /threads/{thread_id}/runs/wait': { id: 'langgraphWaitRun', summary: 'LangGraph protocol: start a run and answer its final values', errors: [409, 422] },
  'GET /threads/{thread_id}/runs': { id: 'langgraphListRuns', summary: "LangGraph protocol: a thread's runs (vigil's own included), newest first" },
  'GET /threads/{thread_id}/runs/{run_id}': { id: 'langgraphGetRun', summary: 'LangGraph protocol: get a run' },
  'POST /threads/{thread_id}/runs/{run_id}/cancel': { id: 'langgraphCancelRun', summary: 'LangGraph protocol: cancel a run', errors: [422] },
  'GET /threads/{thread_id}/runs/{run_id}/join': { id: 'langgraphJoinRun', summary: "LangGraph protocol: wait for a run and answer the thread's values" },
  'GET /threads/{thread_id}/runs/{run_id}/stream': { id: 'langgraphJoinRunStream', summary: "LangGraph protocol: join a run's stream (SSE; Last-Event-ID resumes)", errors: [422] },
  'POST /runs': { id: 'langgraphCreateStatelessRun', summary: 'LangGraph protocol: a stateless run in the background', errors: [422] },
  'POST /runs/stream': { id: 'langgraphStreamStatelessRun', summary: 'LangGraph protocol: a stateless run, streamed (SSE)', errors: [422] },
  'POST /runs/wait': { id: 'langgraphWaitStatelessRun', summary: 'LangGraph protocol: a stateless run, answered with its values', errors: [422] },
  'PUT /store/items': { id: 'langgraphPutItem', summary: 'LangGraph store: put a memory (namespace ["memories", assistant_id], value {content})', errors: [409, 422] },
  'GET /store/items': { id: 'langgraphGetItem', summary: 'LangGraph store: get a memory', errors: [404, 422] },
  'DELETE /store/items': { id: 'langgraphDeleteItem', summary: 'LangGraph store: delete a memory', errors: [404, 422] },
  'POST /store/items/search': { id: 'langgraphSearchItems', summary: 'LangGraph store: search memories (full text)', errors: [404, 422] },
  'POST /store/namespaces': { id: 'langgraphListNamespaces', summary: 'LangGraph store: namespaces (one per assistant)' },
  'POST /runs/crons': { id: 'langgraphCreateCron', summary: 'LangGraph crons: a schedule starting a new thread per fire', errors: [422] },
  'POST /threads/{thread_id}/runs/crons': { id: 'langgraphCreateThreadCron', summary: 'LangGraph crons: a schedule running on a thread', errors: [422] },
  'PATCH /runs/crons/{cron_id}': { id: 'langgraphUpdateCron', summary: 'LangGraph crons: change or pause a schedule', errors: [422] },
  'DELETE /runs/crons/{cron_id}': { id: 'langgraphDeleteCron', summary: 'LangGraph crons: delete a schedule' },
  'POST /runs/crons/search': { id: 'langgraphSearchCrons', summary: 'LangGraph crons: search your schedules', errors: [422] },
  'POST /api/channels/telegram/webhook': { id: 'receiveTelegramUpdate', summary: 'A Telegram update (webhook mode)', public: true },
};

/** `GET /api/threads/:threadId` → `GET /api/threads/{threadId}` (the document's spelling). */
export function operationKey(method: string, url: string): string {
  return `${method.toUpperCase()} ${url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;
}

export interface RouteShape {
  key: string;
  /** Statuses the route's own schema declares. */
  declared: readonly number[];
  hasBody: boolean;
  hasParams: boolean;
  hasQuery: boolean;
}

/**
 * Every status a route can answer: what it declares, a success status when it declares
 * none (204 for DELETE, else 200), and the errors every route of its shape can give:
 * 400 for any input, 401 unless public, 404 for a path with ids, 413 and 415 with a body,
 * 500 always, plus the table's own.
 */
export function documentedStatuses(shape: RouteShape): number[] {
  const operation = OPERATIONS[shape.key];
  const statuses = new Set(shape.declared);
  if (![...statuses].some((status) => status >= 200 && status < 300)) statuses.add(shape.key.startsWith('DELETE ') ? 204 : 200);
  if (shape.hasBody || shape.hasParams || shape.hasQuery) statuses.add(400);
  if (!operation?.public) statuses.add(401);
  if (shape.hasParams) statuses.add(404);
  if (shape.hasBody) {
    statuses.add(413);
    statuses.add(415);
  }
  statuses.add(500);
  for (const status of operation?.errors ?? []) statuses.add(status);
  return [...statuses].sort((a, b) => a - b);
}
