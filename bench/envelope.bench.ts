import { buildEnvelope } from '../src/domain/envelope/build-envelope.js';

/**
 * What building one run's envelope costs (redaction included, as in a real run), for a
 * few metas that reach each truncation stage. Every run with a model-visible trigger pays
 * this once per model call, so it should stay far below a millisecond for ordinary metas.
 */

const nonce = 'Qm9vdHN0cmFwTm9uY2UxMjM';
const core = { run_id: 'run_01HZX3K9', requested_at_utc: '2026-02-03T09:00:02Z', correlation_id: 'corr-4b3a0f59' };

const cases: Array<{ name: string; meta: Record<string, unknown> }> = [
  {
    name: 'cron',
    meta: { trigger: 'cron', ...core, schedule_id: '4b3a0f59-b6c2-4c8c-9b2c-0d9d68bd9a10', fire_id: 'c6d9f1a6-0f1b-4f9b-a3a8-1d6e7a2e9c01', scheduled_for_utc: '2026-02-03T09:00:00Z' },
  },
  {
    name: 'telegram channel',
    meta: { trigger: 'channel', ...core, channel: 'telegram', chat_id: -1001234567890, message_id: 8812, chat_type: 'supergroup', from_user_id: 28036192 },
  },
  {
    name: 'webhook with secrets and a long body',
    meta: {
      trigger: 'webhook',
      ...core,
      hook_id: 'hook_github',
      delivery_id: '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      payload: {
        event: 'pull_request',
        repository: 'acme/api',
        title: 'Fix retry loop in the scheduler 🚀',
        body: 'Long description with Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0 and details. '.repeat(80),
        api_key: 'sk-abcdefghijklmnopqrstuvwxyz0123456789',
      },
    },
  },
  {
    name: 'many unknown keys',
    meta: { trigger: 'heartbeat', ...core, plan_id: 'plan_9', idle_ms: 300_000, priority: 'high', ...Object.fromEntries(Array.from({ length: 400 }, (_, index) => [`label_${index}`, index])) },
  },
  {
    name: 'oversized core key',
    meta: { trigger: 'cron', ...core, run_id: 'r'.repeat(5000), schedule_id: 's', fire_id: 'f', scheduled_for_utc: '2026-02-03T09:00:00Z' },
  },
];

function measure(run: () => void, durationMs: number): { operations: number; elapsedMs: number } {
  const warmUpEnd = performance.now() + durationMs / 4;
  while (performance.now() < warmUpEnd) run();
  let operations = 0;
  const start = performance.now();
  let now = start;
  // Check the clock every 32 runs: reading it costs about as much as a small envelope.
  while (now - start < durationMs) {
    for (let index = 0; index < 32; index++) run();
    operations += 32;
    now = performance.now();
  }
  return { operations, elapsedMs: now - start };
}

interface EnvelopeBenchRow {
  group: string;
  name: string;
  value: number;
  unit: string;
  note: string;
  dims: Record<string, string>;
}

/** `quick` (the runner's smoke mode) measures each case for 100 ms instead of 400 ms. */
export async function benchEnvelope(options: { quick?: boolean } = {}): Promise<EnvelopeBenchRow[]> {
  const durationMs = options.quick === true ? 100 : 400;
  const results: EnvelopeBenchRow[] = [];
  for (const { name, meta } of cases) {
    const envelope = buildEnvelope(meta, { nonce });
    const { operations, elapsedMs } = measure(() => buildEnvelope(meta, { nonce }), durationMs);
    const microsecondsPerOperation = (elapsedMs * 1000) / operations;
    const row = { group: 'envelope', note: `${envelope.bytes} bytes, stage ${envelope.stage}`, dims: { case: name, stage: envelope.stage } };
    results.push({ ...row, name: `build ${name} ops/s`, value: Math.round(operations / (elapsedMs / 1000)), unit: 'ops/s' });
    results.push({ ...row, name: `build ${name} µs/op`, value: Number(microsecondsPerOperation.toFixed(2)), unit: 'µs/op' });
    await new Promise((resolve) => setImmediate(resolve)); // let other work breathe between cases
  }
  return results;
}
