import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApprovalService } from '../../app/approvals/approval-service.js';
import { APPROVAL_STATUSES, approvalDecisionBodySchema, type ApprovalRecord } from '../../domain/tools/approval.js';
import { redact } from '../../domain/redaction.js';
import { errorBody, idParam } from '../schemas.js';

const approvalParams = z.object({ approvalId: idParam }).strict();
const listApprovalsQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(200).default(50),
    status: z.enum(APPROVAL_STATUSES).optional(),
    threadId: idParam.optional(),
  })
  .strict();

export const approvalDto = z.object({
  id: z.string(),
  status: z.enum(APPROVAL_STATUSES),
  threadId: z.string(),
  agentId: z.string(),
  runId: z.string(),
  toolCallId: z.string(),
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()).describe('redacted'),
  argumentsHash: z.string().describe('sha256 of the real arguments'),
  editedArguments: z.record(z.string(), z.unknown()).nullable().describe('redacted'),
  attended: z.boolean(),
  requestedAt: z.string(),
  expiresAt: z.string(),
  decidedBy: z.string().nullable(),
  channel: z.string().nullable(),
  decidedAt: z.string().nullable(),
  message: z.string().nullable(),
  executed: z.boolean(),
  outcome: z
    .enum(['succeeded', 'failed'])
    .nullable()
    .describe('whether the call worked once it ran (its tool returned, or threw); null before it finished, and for a call that finished before outcomes were recorded (unknown)'),
});

export function toApprovalDto(record: ApprovalRecord): z.infer<typeof approvalDto> {
  return {
    id: record.id,
    status: record.status,
    threadId: record.threadId,
    agentId: record.agentId,
    runId: record.runId,
    toolCallId: record.toolCallId,
    tool: record.tool,
    arguments: record.arguments,
    argumentsHash: record.argumentsHash,
    editedArguments: record.editedArguments === null ? null : (redact(record.editedArguments) as Record<string, unknown>),
    attended: record.attended,
    requestedAt: record.requestedAt,
    expiresAt: record.expiresAt,
    decidedBy: record.decidedBy,
    channel: record.channel,
    decidedAt: record.decidedAt,
    message: record.message,
    executed: record.execution === 'done',
    outcome: record.execution === 'done' ? record.outcome : null,
  };
}

/** Tool calls waiting for a person (I16): the inbox across threads, one request, a decision. */
export function approvalRoutes(approvals: ApprovalService): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/api/approvals',
      { schema: { tags: ['approvals'], description: "The caller's approval requests across threads, newest first.", querystring: listApprovalsQuery, response: { 200: z.object({ approvals: z.array(approvalDto) }) } } },
      async (request) => ({ approvals: (await approvals.list(request.userId, request.query)).map(toApprovalDto) }),
    );

    app.get('/api/approvals/:approvalId', { schema: { tags: ['approvals'], params: approvalParams, response: { 200: approvalDto, 404: errorBody } } }, async (request) =>
      toApprovalDto(await approvals.get(request.userId, request.params.approvalId)),
    );

    app.post(
      '/api/approvals/:approvalId/decision',
      {
        schema: {
          tags: ['approvals'],
          description: 'Approve, edit (new arguments, checked against the tool schema) or reject (with a message for the model). The first decision wins; a different second one is 409.',
          params: approvalParams,
          body: approvalDecisionBodySchema,
          response: { 200: approvalDto, 400: errorBody, 404: errorBody, 409: errorBody },
        },
      },
      async (request) => toApprovalDto(await approvals.decide(request.userId, request.params.approvalId, request.body, 'api')),
    );
  };
}
