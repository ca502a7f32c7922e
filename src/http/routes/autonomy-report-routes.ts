import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AutonomyReportService } from '../../app/autonomy/autonomy-report-service.js';
import { agentParams, errorBody } from '../schemas.js';

const triggerReportDto = z.object({
  triggerType: z.string().describe('autonomy:<follow-up type>, or the run trigger (cron, webhook, check_in, heartbeat)'),
  runs: z.number().int(),
  replies: z.number().int(),
  answeredWithin1h: z.number().int(),
  answeredWithin24h: z.number().int(),
  cancelled: z.number().int(),
  capped: z.number().int(),
});

export function autonomyReportRoutes(reports: AutonomyReportService): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/api/agents/:agentId/autonomy/report',
      {
        schema: {
          tags: ['autonomy'],
          description: 'Is autonomy welcome? Per trigger type: runs, replies, replies the person answered within 1 h / 24 h, cancelled, capped.',
          params: agentParams,
          response: { 200: z.object({ agentId: z.string(), triggers: z.array(triggerReportDto) }), 404: errorBody },
        },
      },
      async (request) => reports.report(request.userId, request.params.agentId),
    );
  };
}
