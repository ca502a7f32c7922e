import type { RunTrigger } from '../run-context.js';
import { buildEnvelope, type EnvelopeStage } from './build-envelope.js';

/**
 * Whether the model sees the envelope, per trigger:
 * - cron, webhook, channel, heartbeat: yes. Nobody is in the conversation to explain why
 *   the run happens; the envelope is how the model learns it (be concise on a schedule,
 *   treat a webhook as an outside event, a Telegram group as a group).
 * - user: no. A person is talking, their message is the context; an envelope on every
 *   turn would cost tokens and tell the model nothing it needs.
 * - autonomy: no. Idle follow-ups keep seed 000's natural prompts, so that no
 *   meta-commentary ("as a scheduled follow-up…") leaks into a reply a person reads.
 * The run record keeps the meta of every run, shown or not.
 */
export const ENVELOPE_VISIBILITY: Readonly<Record<RunTrigger, boolean>> = Object.freeze({
  user: false,
  autonomy: false,
  cron: true,
  webhook: true,
  channel: true,
  heartbeat: true,
  // The agent set it itself: the envelope tells it why and when (its prompt stays internal).
  check_in: true,
});

/**
 * The run's nonce is never stored (it only has to outlive the run). A rebuilt envelope
 * carries this stand-in of the same length (16 random bytes in base64url are 22
 * characters), so its size and truncation stage are those of the one the model read.
 */
export const NONCE_PLACEHOLDER = 'nonce-not-stored______';

export interface RecordedEnvelope {
  /** Whether this run's model calls carried an envelope (its trigger's policy). */
  shown: boolean;
  /** The envelope message (ENVELOPE_KEY and the meta) as the model read it, the nonce replaced; null when not shown. */
  json: string | null;
  bytes: number;
  stage: EnvelopeStage | null;
}

/**
 * The envelope a recorded run's model calls received, rebuilt from the run record's meta
 * (redacted when the run started, and the only input the envelope is built from): what
 * the inspector shows for "what did the model see, and why".
 */
export function recordedEnvelope(trigger: RunTrigger, meta: Record<string, unknown>): RecordedEnvelope {
  if (!ENVELOPE_VISIBILITY[trigger] || typeof meta.trigger !== 'string') return { shown: false, json: null, bytes: 0, stage: null };
  const envelope = buildEnvelope(meta, { nonce: NONCE_PLACEHOLDER });
  return { shown: true, json: envelope.json, bytes: envelope.bytes, stage: envelope.stage };
}
