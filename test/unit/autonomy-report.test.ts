import { describe, expect, it } from 'vitest';
import { buildAutonomyReport } from '../../src/domain/autonomy/autonomy-report.js';

const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 12, 0) + minutes * 60_000).toISOString();

describe('autonomy report', () => {
  it('counts answers within 1 h and 24 h after each autonomous reply, cancels and caps per trigger type', () => {
    const runs = [
      { id: 'r1', threadId: 't1', triggerType: 'autonomy:question_unanswered', status: 'succeeded' },
      { id: 'r2', threadId: 't2', triggerType: 'autonomy:question_unanswered', status: 'succeeded' },
      { id: 'r3', threadId: 't3', triggerType: 'cron', status: 'succeeded' },
      { id: 'r4', threadId: 't1', triggerType: 'check_in', status: 'cancelled' },
    ];
    const replies = [
      { threadId: 't1', seq: 2, createdAt: at(0), runId: 'r1' },
      { threadId: 't2', seq: 5, createdAt: at(0), runId: 'r2' },
      { threadId: 't3', seq: 1, createdAt: at(0), runId: 'r3' },
    ];
    const person = [
      { threadId: 't1', seq: 0, createdAt: at(-100), runId: 'x' }, // before the reply: not an answer
      { threadId: 't1', seq: 3, createdAt: at(30), runId: 'y' },
      { threadId: 't2', seq: 6, createdAt: at(300), runId: 'z' },
    ];
    const timers = [
      { triggerType: 'question_unanswered', state: 'skipped', stateReason: 'cap_per_day' },
      { triggerType: 'question_unanswered', state: 'skipped', stateReason: 'evaluator_declined' },
      { triggerType: 'task_incomplete', state: 'cancelled', stateReason: 'a person sent a message' },
    ];
    const report = buildAutonomyReport(runs, replies, person, timers);
    expect(report).toEqual([
      { triggerType: 'autonomy:question_unanswered', runs: 2, replies: 2, answeredWithin1h: 1, answeredWithin24h: 2, cancelled: 0, capped: 1 },
      { triggerType: 'autonomy:task_incomplete', runs: 0, replies: 0, answeredWithin1h: 0, answeredWithin24h: 0, cancelled: 1, capped: 0 },
      { triggerType: 'check_in', runs: 1, replies: 0, answeredWithin1h: 0, answeredWithin24h: 0, cancelled: 1, capped: 0 },
      { triggerType: 'cron', runs: 1, replies: 1, answeredWithin1h: 0, answeredWithin24h: 0, cancelled: 0, capped: 0 },
    ]);
  });
});
