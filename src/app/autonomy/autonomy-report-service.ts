import { buildAutonomyReport, type ReportMessage, type ReportRun, type ReportTimer, type TriggerReport } from '../../domain/autonomy/autonomy-report.js';
import type { AgentService } from '../agent-service.js';

export interface AutonomyReportSource {
  rows(userId: string, agentId: string): Promise<{ runs: ReportRun[]; replies: ReportMessage[]; personMessages: ReportMessage[]; timers: ReportTimer[] }>;
}

/** GET /api/agents/{id}/autonomy/report: per trigger type, is autonomy welcome? */
export class AutonomyReportService {
  constructor(private readonly source: AutonomyReportSource, private readonly agents: AgentService) {}

  async report(userId: string, agentId: string): Promise<{ agentId: string; triggers: TriggerReport[] }> {
    await this.agents.get(userId, agentId); // AGENT_NOT_FOUND for another user's agent (I12)
    const rows = await this.source.rows(userId, agentId);
    return { agentId, triggers: buildAutonomyReport(rows.runs, rows.replies, rows.personMessages, rows.timers) };
  }
}
