import { describe, expect, it } from 'vitest';
import { isVigilError } from '../../src/domain/errors.js';
import { coreRunMeta, parseRunMeta, runMetaSchema } from '../../src/domain/envelope/run-meta.js';
import { RUN_TRIGGERS } from '../../src/domain/run-context.js';
import type { RunTrigger } from '../../src/domain/run-context.js';

const core = {
  run_id: 'run_01HZX',
  requested_at_utc: '2026-02-03T09:00:02Z',
  correlation_id: 'corr-7f3a',
};

const valid: Record<RunTrigger, Record<string, unknown>> = {
  user: { trigger: 'user', ...core },
  autonomy: { trigger: 'autonomy', ...core, trigger_type: 'question_unanswered', trigger_reason: 'asked about the invoice, no reply', timer_id: 'tmr_1' },
  cron: { trigger: 'cron', ...core, schedule_id: 'sch_daily', fire_id: 'fire_42', scheduled_for_utc: '2026-02-03T09:00:00Z' },
  webhook: { trigger: 'webhook', ...core, hook_id: 'hook_github', delivery_id: 'd-123', payload: { event: 'push', repository: 'acme/api', commits: 3, forced: false, ref: null } },
  channel: { trigger: 'channel', ...core, channel: 'telegram', chat_id: -1001234567890, message_id: 8812, chat_type: 'supergroup', from_user_id: 28036192 },
  heartbeat: { trigger: 'heartbeat', ...core, plan_id: 'plan_9', idle_ms: 300_000, priority: 'high' },
  check_in: { trigger: 'check_in', ...core, check_in_id: 'chk_1', reason: 'see whether the invoice was paid', set_at_utc: '2026-02-02T09:00:00Z' },
};

function validationError(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (isVigilError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a VigilError');
}

describe('run meta schemas', () => {
  it.each(RUN_TRIGGERS)('accepts a valid %s meta and returns it typed', (trigger) => {
    expect(parseRunMeta(trigger, valid[trigger])).toEqual(valid[trigger]);
    expect(runMetaSchema.parse(valid[trigger]).trigger).toBe(trigger);
  });

  it('fills in a missing trigger from the argument', () => {
    const { trigger: _trigger, ...withoutTrigger } = valid.cron;
    expect(parseRunMeta('cron', withoutTrigger).trigger).toBe('cron');
  });

  it('rejects a meta whose trigger disagrees with the argument', () => {
    expect(validationError(() => parseRunMeta('user', valid.cron)).code).toBe('VALIDATION_FAILED');
  });

  it('rejects unknown keys, so nothing is smuggled into the envelope', () => {
    const error = validationError(() => parseRunMeta('cron', { ...valid.cron, note: 'extra' }));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toContain('note');
  });

  it.each([
    ['cron', { schedule_id: undefined }, 'schedule_id'],
    ['cron', { scheduled_for_utc: '2026-02-03 09:00' }, 'scheduled_for_utc'],
    ['cron', { requested_at_utc: '2026-02-03T10:00:00+01:00' }, 'requested_at_utc'],
    ['user', { run_id: '' }, 'run_id'],
    ['user', { correlation_id: 'x'.repeat(129) }, 'correlation_id'],
    ['channel', { channel: 'slack' }, 'channel'],
    ['channel', { chat_id: '42' }, 'chat_id'],
    ['channel', { chat_type: 'dm' }, 'chat_type'],
    ['channel', { message_id: 0 }, 'message_id'],
    ['heartbeat', { idle_ms: -1 }, 'idle_ms'],
    ['heartbeat', { priority: 'urgent' }, 'priority'],
    ['autonomy', { trigger_type: 'nag' }, 'trigger_type'],
    ['autonomy', { timer_id: undefined }, 'timer_id'],
    ['webhook', { payload: { nested: { deep: 1 } } }, 'payload'],
    ['webhook', { payload: { body: 'x'.repeat(1025) } }, 'payload'],
    ['webhook', { payload: Object.fromEntries(Array.from({ length: 33 }, (_, index) => [`f${index}`, index])) }, 'payload'],
  ] as const)('%s: rejects %o', (trigger, change, field) => {
    const error = validationError(() => parseRunMeta(trigger, { ...valid[trigger], ...change }));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.message).toContain(field);
  });

  it('allows a channel post without a sender and an autonomy run without a reason', () => {
    const { from_user_id: _from, ...post } = valid.channel;
    expect(parseRunMeta('channel', post)).toEqual(post);
    const { trigger_reason: _reason, ...silent } = valid.autonomy;
    expect(parseRunMeta('autonomy', silent)).toEqual(silent);
  });

  it('rejects an unknown trigger, including names on Object.prototype', () => {
    for (const trigger of ['daemon', 'toString', '__proto__']) {
      expect(validationError(() => parseRunMeta(trigger as RunTrigger, valid.user)).code).toBe('VALIDATION_FAILED');
    }
  });

  it('rejects non-objects', () => {
    for (const value of [null, 'cron', 42, []]) expect(validationError(() => parseRunMeta('user', value)).code).toBe('VALIDATION_FAILED');
  });

  it('builds the core keys from a run context', () => {
    const meta = coreRunMeta({ trigger: 'cron', runId: 'r1', requestedAt: '2026-02-03T09:00:00Z', correlationId: 'c1' });
    expect(meta).toEqual({ trigger: 'cron', run_id: 'r1', requested_at_utc: '2026-02-03T09:00:00Z', correlation_id: 'c1' });
    expect(parseRunMeta('user', { ...meta, trigger: 'user' })).toBeTruthy();
  });
});
