import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';
import type { CheckInRecord } from '../../app/check-ins/check-in-ports.js';

/** What the check-in tools need: the app's check-in use cases. */
export interface CheckInPort {
  schedule(run: { userId: string; agentId: string; threadId: string; runId: string }, input: { at?: string | undefined; inSeconds?: number | undefined; reason: string }): Promise<CheckInRecord>;
  list(userId: string, threadId: string): Promise<CheckInRecord[]>;
  cancel(userId: string, threadId: string, id: string, by: 'person' | 'agent'): Promise<CheckInRecord>;
}

export const CHECK_IN_TOOL_NAMES = ['schedule_check_in', 'list_check_ins', 'cancel_check_in'] as const;

const view = (record: CheckInRecord) => ({ id: record.id, due_at: record.dueAt, reason: record.reason, set_at: record.setAt, state: record.state });

/** The agent's own check-ins on the run's thread: built per run, closing over it (never in state, I10). */
export function createCheckInTools(port: CheckInPort, run: { userId: string; agentId: string; threadId: string; runId: string }): StructuredToolInterface[] {
  return [
    tool(
      async ({ at, in_seconds, reason }) => JSON.stringify({ scheduled: true, ...view(await port.schedule(run, { at, inSeconds: in_seconds, reason })) }),
      {
        name: 'schedule_check_in',
        description:
          'Set yourself a one-time check-in on this conversation: at that time you get a turn to continue it, with your reason. Give "at" (ISO 8601 UTC) or "in_seconds". The person\'s messages do not cancel it.',
        schema: z.object({
          at: z.string().max(64).optional(),
          in_seconds: z.number().int().min(1).max(30 * 86_400).optional(),
          reason: z.string().trim().min(1).max(500),
        }),
      },
    ),
    tool(async () => JSON.stringify((await port.list(run.userId, run.threadId)).map(view)), {
      name: 'list_check_ins',
      description: 'The check-ins you set on this conversation that have not happened yet.',
      schema: z.object({}),
    }),
    tool(async ({ id }) => JSON.stringify({ cancelled: true, ...view(await port.cancel(run.userId, run.threadId, id, 'agent')) }), {
      name: 'cancel_check_in',
      description: 'Cancel one of your pending check-ins on this conversation, by its id.',
      schema: z.object({ id: z.string().min(1).max(128) }),
    }),
  ];
}
