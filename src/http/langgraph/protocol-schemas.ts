import { z } from 'zod';
import { newAgentIdSchema } from '../schemas.js';

/**
 * Request bodies of the LangGraph Platform API, as the official SDK sends them. Objects
 * are strict: a field vigil does not know is refused (400), and a known field vigil
 * cannot honour is refused by the route with 422 UNSUPPORTED_OPTION — never ignored.
 */
const json = z.record(z.string(), z.unknown());
const id = z.string().min(1).max(128);
const limit = (fallback: number) => z.coerce.number().int().min(1).max(1000).default(fallback);
const offset = z.coerce.number().int().min(0).max(100_000).default(0);
/** LangGraph Platform's thread ids (and vigil's store keys) are UUIDs, in either case of their hex digits. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const uuid = (message: string) => z.string().regex(UUID_PATTERN, message);
/**
 * A thread id the client chooses: a UUID, as LangGraph Platform's are. Thread ids are one
 * namespace across users, so a free-form id could be squatted before its user makes it.
 */
export const THREAD_ID_MESSAGE = 'a thread id chosen by the client is a UUID (as LangGraph Platform\'s thread ids are)';
const newThreadId = uuid(THREAD_ID_MESSAGE);

export const threadIdParams = z.object({ thread_id: id }).strict();
export const assistantIdParams = z.object({ assistant_id: id }).strict();
export const threadRunParams = z.object({ thread_id: id, run_id: id }).strict();
export const checkpointParams = z.object({ thread_id: id, checkpoint_id: z.string().min(1).max(200) }).strict();

export const createAssistantBody = z
  .object({
    graph_id: z.string().min(1).max(64),
    /** An assistant is a vigil agent: its id follows the agent id rules, and is not an alias of the default agent. */
    assistant_id: newAgentIdSchema.optional(),
    if_exists: z.enum(['raise', 'do_nothing']).optional(),
    name: z.string().trim().min(1).max(200).optional(),
    description: z.string().max(2000).nullable().optional(),
    metadata: json.optional(),
    config: json.optional(),
    context: json.optional(),
  })
  .strict();
export const updateAssistantBody = createAssistantBody.omit({ assistant_id: true, if_exists: true }).partial().strict();
export const searchAssistantsBody = z
  .object({
    graph_id: z.string().max(64).optional(),
    name: z.string().max(200).optional(),
    metadata: json.optional(),
    limit: limit(10),
    offset,
    sort_by: z.enum(['assistant_id', 'graph_id', 'name', 'created_at', 'updated_at']).optional(),
    sort_order: z.enum(['asc', 'desc']).optional(),
    select: z.array(z.string()).optional(),
  })
  .strict();
export const deleteAssistantQuery = z.object({ delete_threads: z.enum(['true', 'false']).optional() }).strict();
export const graphQuery = z.object({ xray: z.union([z.enum(['true', 'false']), z.coerce.number().int()]).optional() }).strict();

export const createThreadBody = z
  .object({
    thread_id: newThreadId.optional(),
    metadata: json.optional(),
    if_exists: z.enum(['raise', 'do_nothing']).optional(),
    supersteps: z.array(z.unknown()).optional(),
    ttl: z.unknown().optional(),
  })
  .strict();
export const updateThreadBody = z.object({ metadata: json.optional(), ttl: z.unknown().optional() }).strict();
export const searchThreadsBody = z
  .object({
    metadata: json.optional(),
    ids: z.array(id).max(1000).optional(),
    values: json.optional(),
    status: z.enum(['idle', 'busy', 'interrupted', 'error']).optional(),
    limit: limit(10),
    offset,
    sort_by: z.enum(['thread_id', 'status', 'created_at', 'updated_at']).optional(),
    sort_order: z.enum(['asc', 'desc']).optional(),
    select: z.array(z.string()).optional(),
    extract: z.unknown().optional(),
  })
  .strict();
export const getThreadQuery = z.object({ include: z.union([z.string(), z.array(z.string())]).optional() }).strict();
export const stateQuery = z.object({ subgraphs: z.enum(['true', 'false']).optional(), select: z.union([z.string(), z.array(z.string())]).optional() }).strict();
export const historyBody = z
  .object({
    limit: limit(10),
    before: z.union([z.string(), json]).optional(),
    metadata: json.optional(),
    checkpoint: json.optional(),
    select: z.array(z.string()).optional(),
  })
  .strict();

export const STREAM_MODES = ['values', 'updates', 'messages', 'messages-tuple', 'custom', 'events', 'debug', 'tasks', 'checkpoints', 'tools', 'lifecycle'] as const;
export type StreamMode = (typeof STREAM_MODES)[number];
const streamMode = z.union([z.enum(STREAM_MODES), z.array(z.enum(STREAM_MODES))]);

export const runBody = z
  .object({
    assistant_id: id,
    input: z.unknown().optional(),
    command: z.unknown().optional(),
    config: json.optional(),
    context: json.optional(),
    metadata: json.optional(),
    stream_mode: streamMode.optional(),
    stream_subgraphs: z.boolean().optional(),
    stream_resumable: z.boolean().optional(),
    feedback_keys: z.array(z.string()).optional(),
    interrupt_before: z.unknown().optional(),
    interrupt_after: z.unknown().optional(),
    checkpoint: z.unknown().optional(),
    checkpoint_id: z.string().optional(),
    webhook: z.string().optional(),
    strict_resume: z.boolean().optional(),
    multitask_strategy: z.enum(['reject', 'enqueue', 'interrupt', 'rollback']).optional(),
    on_completion: z.enum(['delete', 'keep']).optional(),
    on_disconnect: z.enum(['cancel', 'continue']).optional(),
    after_seconds: z.number().optional(),
    if_not_exists: z.enum(['create', 'reject']).optional(),
    checkpoint_during: z.boolean().optional(),
    durability: z.enum(['sync', 'async', 'exit']).optional(),
    langsmith_tracer: z.unknown().optional(),
  })
  .strict();
export type RunBody = z.infer<typeof runBody>;

export const listRunsQuery = z
  .object({ limit: limit(10), offset, status: z.enum(['pending', 'running', 'error', 'success', 'timeout', 'interrupted']).optional(), select: z.union([z.string(), z.array(z.string())]).optional() })
  .strict();
export const cancelRunQuery = z.object({ wait: z.enum(['0', '1', 'true', 'false']).optional(), action: z.enum(['interrupt', 'rollback']).optional(), reason: z.string().max(500).optional() }).strict();
export const joinQuery = z.object({ cancel_on_disconnect: z.enum(['0', '1', 'true', 'false']).optional() }).strict();
export const joinStreamQuery = z
  .object({
    cancel_on_disconnect: z.enum(['0', '1', 'true', 'false']).optional(),
    stream_mode: streamMode.optional(),
    namespace: z.unknown().optional(),
    checkpoint_id: z.string().optional(),
  })
  .strict();
export const streamNamespaceQuery = z.object({ namespace: z.unknown().optional() }).strict();

export const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }) });
export const anyObject = json;
