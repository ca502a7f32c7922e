import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import type { Logger } from 'pino';
import { VigilError, isVigilError } from '../../domain/errors.js';
import type { AgentService } from '../agent-service.js';
import type { ConversationService } from '../conversation-service.js';
import type { Clock, RunRecord } from '../ports.js';
import { runMetaOf } from '../run-meta.js';
import { mapPayload } from './hook-payload.js';
import type { SecretBox } from './hook-secret-box.js';
import { newHookSecret, verifyDelivery, type DeliveryHeaders } from './hook-signature.js';
import type { HookDelivery, HookRecord, HookStore, HookWithSecret } from './hook-store.js';
import { cut, parseTemplate, renderTemplate } from './hook-template.js';

export interface CreateHookInput {
  name: string;
  agentId?: string | undefined;
  threadId?: string | undefined;
  taskTemplate: string;
  payloadFields?: string[] | undefined;
}

export interface AcceptedDelivery {
  runId: string;
  threadId: string;
  deliveryId: string;
}

export interface HookServiceDependencies {
  store: HookStore;
  conversations: ConversationService;
  agents: AgentService;
  /** The box that seals hook secrets; made on first use (it may create a key file). */
  secrets: () => Promise<SecretBox>;
  clock: Clock;
  logger: Logger;
}

/**
 * Signed webhooks: a hook belongs to one user and targets one agent, on a fixed thread
 * or a new thread per delivery. A delivery is authenticated by its signature alone, and
 * refused — with nothing started and nothing written — when the signature is wrong, the
 * timestamp stale, the delivery id seen before, or the payload unusable (I11).
 */
/**
 * How long a recorded delivery with no run yet may still be a live attempt (one waiting
 * for its thread's lock, behind a long run) before a retry of it takes it over.
 */
export const UNRECORDED_RUN_GRACE_MS = 60 * 60_000;

function pending(deliveryId: string): VigilError {
  return new VigilError('HOOK_DELIVERY_PENDING', `delivery "${deliveryId}" is still being received; try again later`);
}

export class HookService {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: HookServiceDependencies) {}

  /** Make a hook; the secret is returned here once and never again. */
  async create(userId: string, input: CreateHookInput): Promise<{ hook: HookRecord; secret: string }> {
    const { conversations, agents } = this.deps;
    const payloadFields = input.payloadFields ?? null;
    parseTemplate(input.taskTemplate, payloadFields); // refuse a bad template now, not per delivery
    let agentId: string;
    let threadId: string | null = null;
    if (input.threadId !== undefined) {
      const thread = await conversations.getThread(userId, input.threadId); // I12: 404 for another's thread
      if (input.agentId !== undefined && input.agentId !== thread.agentId) {
        throw new VigilError('VALIDATION_FAILED', `thread "${thread.id}" belongs to agent "${thread.agentId}", not "${input.agentId}"`);
      }
      agentId = thread.agentId;
      threadId = thread.id;
    } else {
      agentId = (input.agentId !== undefined ? await agents.get(userId, input.agentId) : await agents.getOrCreateDefault(userId)).id;
    }
    const id = randomUUID();
    const secret = newHookSecret();
    const secretCiphertext = (await this.deps.secrets()).seal(secret, id);
    const hook = await this.deps.store.create(
      { id, userId, agentId, threadId, name: input.name, taskTemplate: input.taskTemplate, payloadFields, secretCiphertext },
      this.deps.clock.now().toISOString(),
    );
    this.deps.logger.info({ hookId: hook.id, agentId, threadId }, 'webhook created');
    return { hook, secret };
  }

  list(userId: string, limit: number): Promise<HookRecord[]> {
    return this.deps.store.list(userId, { limit });
  }

  async get(userId: string, hookId: string): Promise<HookRecord> {
    const hook = await this.deps.store.get(userId, hookId);
    if (!hook) throw new VigilError('HOOK_NOT_FOUND', `no webhook "${hookId}"`);
    return hook;
  }

  /**
   * The hook's deliveries, newest first, each with its run as it stands (null while the
   * run is not recorded yet). Only the owner's hook (I12): HOOK_NOT_FOUND otherwise.
   */
  async deliveries(userId: string, hookId: string, limit: number): Promise<Array<{ delivery: HookDelivery; run: RunRecord | null }>> {
    await this.get(userId, hookId);
    const deliveries = await this.deps.store.listDeliveries(hookId, { limit });
    return Promise.all(
      deliveries.map(async (delivery) => ({
        delivery,
        run: await this.deps.conversations.getRun(userId, delivery.runId).catch((error: unknown) => {
          if (isVigilError(error) && error.code === 'RUN_NOT_FOUND') return null;
          throw error;
        }),
      })),
    );
  }

  async delete(userId: string, hookId: string): Promise<void> {
    if (!(await this.deps.store.delete(userId, hookId))) throw new VigilError('HOOK_NOT_FOUND', `no webhook "${hookId}"`);
  }

  /**
   * One delivery: verify, map, record, then start the run in the background and answer
   * with its id. Every check that can refuse comes before the delivery is recorded, and
   * the delivery is recorded before anything else is written (a new thread), so a
   * refused delivery leaves nothing behind and a replay starts nothing.
   */
  async receive(hookId: string, delivery: { headers: DeliveryHeaders; rawBody: Buffer; correlationId: string }): Promise<AcceptedDelivery> {
    const { store, conversations, agents, clock, logger } = this.deps;
    const hook = await store.getForDelivery(hookId);
    if (!hook) throw new VigilError('HOOK_NOT_FOUND', `no webhook "${hookId}"`);
    const log = logger.child({ hookId });

    const secret = (await this.deps.secrets()).open(hook.secretCiphertext, hook.id);
    const now = clock.now();
    // The id is signed (Standard Webhooks): a captured request resent under a new id fails here.
    const deliveryId = verifyDelivery(secret, delivery.headers, delivery.rawBody, now);

    let payload: unknown;
    try {
      payload = JSON.parse(delivery.rawBody.toString('utf8'));
    } catch (error) {
      throw new VigilError('MALFORMED_JSON', 'the webhook body is not valid JSON', { cause: error });
    }
    const runId = randomUUID();
    const requestedAt = now.toISOString();
    // Strict here, unlike the coordinator: outside input that does not fit is refused (I11).
    const meta = runMetaOf({
      trigger: 'webhook',
      runId,
      requestedAt,
      correlationId: delivery.correlationId,
      meta: { hook_id: hook.id, delivery_id: deliveryId, payload: mapPayload(payload, hook.payloadFields) },
    });
    // The template sees the redacted fields only: a secret in the payload never reaches the task text.
    const redactedPayload = (meta.payload ?? {}) as Record<string, unknown>;
    const text = renderTemplate(parseTemplate(hook.taskTemplate, hook.payloadFields), {
      payload: redactedPayload,
      hook: { id: hook.id, name: hook.name },
      delivery: { id: deliveryId },
    });
    if (text.length === 0) throw new VigilError('VALIDATION_FAILED', 'the task template rendered empty text for this payload');
    if (hook.threadId !== null) await conversations.getThread(hook.userId, hook.threadId);
    else await agents.get(hook.userId, hook.agentId);

    let earlierThreadId: string | undefined;
    if (!(await store.recordDelivery({ hookId: hook.id, deliveryId, runId, receivedAt: requestedAt }))) {
      earlierThreadId = await this.takeOver(hook, deliveryId, { runId, receivedAt: requestedAt }, log);
    }
    let threadId: string;
    try {
      threadId = hook.threadId ?? earlierThreadId ?? (await conversations.createThread(hook.userId, { agentId: hook.agentId, title: cut(`Webhook: ${hook.name}`, 200) })).id;
    } catch (error) {
      await store.forgetDelivery(hook.id, deliveryId, runId).catch((forgetError: unknown) => log.error({ err: forgetError }, 'could not forget a delivery whose run never started'));
      throw error;
    }

    const input = new HumanMessage({
      id: randomUUID(),
      content: text,
      additional_kwargs: { synthetic: true, trigger_type: 'webhook', trigger_reason: `webhook delivery ${deliveryId}`, hook_id: hook.id, delivery_id: deliveryId },
    });
    // The 202 promises the delivery's task is in the thread: answer once it is stored, not
    // when the run is merely started, so a crash right after the answer loses nothing (the
    // crash-safety e2e test lost such deliveries). The run itself goes on in the background.
    let taskStored = false;
    let stored!: () => void;
    const inputStored = new Promise<void>((resolve) => {
      stored = () => {
        taskStored = true;
        resolve();
      };
    });
    let failure: unknown;
    const running = conversations
      .runTriggered(
        hook.userId,
        threadId,
        {
          trigger: 'webhook',
          input,
          meta: { hook_id: hook.id, delivery_id: deliveryId, ...(meta.payload !== undefined ? { payload: meta.payload } : {}) },
          correlationId: delivery.correlationId,
          runId,
        },
        { onInputStored: stored },
      )
      .then(
        () => undefined,
        (error: unknown) => {
          failure = error;
          log.error({ runId, deliveryId, code: isVigilError(error) ? error.code : 'INTERNAL', err: error }, 'webhook run could not start');
        },
      );
    this.track(running);
    await Promise.race([inputStored, running]);
    // The run ended without storing the task (it could not start, the server is stopping, or
    // storing failed) — unless a failed run's history holds it after all: then nothing was
    // accepted. The delivery is forgotten and the sender told to retry, as a 202 would have
    // lost the delivery for good (the sender never sends it again).
    if (!taskStored && !(await this.runStoredTask(hook.userId, runId))) {
      await store.forgetDelivery(hook.id, deliveryId, runId).catch((forgetError: unknown) => log.error({ err: forgetError }, 'could not forget a delivery whose task was never stored'));
      if (isVigilError(failure) && failure.code !== 'INTERNAL' && failure.code !== 'RUN_CANCELLED') throw failure;
      throw new VigilError('HOOK_TASK_NOT_STORED', `the run of delivery "${deliveryId}" ended before its task was stored; nothing was accepted, retry`);
    }
    log.info({ deliveryId, runId, threadId }, 'webhook delivery accepted');
    return { runId, threadId, deliveryId };
  }

  /**
   * A delivery id this hook has recorded before. The sender retries what it was not
   * answered 202 for, so the earlier attempt either stored its task (a replay: 409
   * HOOK_DELIVERY_REPLAYED), may still be storing it (409 HOOK_DELIVERY_PENDING: try again
   * later), or died first: its run ended without adding a message to the thread (the
   * orphaned-run sweep ended it), or it never recorded a run and was received more than
   * UNRECORDED_RUN_GRACE_MS ago. Then this attempt takes the delivery over, once, and runs
   * on the earlier attempt's thread when it had one and it still exists (returned; else a
   * new thread). Without this, a delivery cut short by a crash before its 202 was refused
   * on every retry and never ran. A delivery whose task was in a thread since deleted is a
   * replay too: the deletion marked its record (threadDeleted), as the message that told
   * went with the thread.
   */
  private async takeOver(hook: HookWithSecret, deliveryId: string, attempt: { runId: string; receivedAt: string }, log: Logger): Promise<string | undefined> {
    const { store, conversations, clock } = this.deps;
    const earlier = await store.getDelivery(hook.id, deliveryId);
    if (earlier === undefined) throw pending(deliveryId); // forgotten meanwhile: the sender's next try records it anew
    const replayed = () => new VigilError('HOOK_DELIVERY_REPLAYED', `delivery "${deliveryId}" was already received by this webhook`);
    if (earlier.threadDeleted) throw replayed();
    const run = await conversations.getRun(hook.userId, earlier.runId).catch(() => undefined);
    if (run === undefined) {
      if (clock.now().getTime() - Date.parse(earlier.receivedAt) <= UNRECORDED_RUN_GRACE_MS) throw pending(deliveryId);
    } else {
      if (await conversations.runAddedMessages(hook.userId, run)) throw replayed();
      if (run.status === 'running') throw pending(deliveryId);
    }
    if (!(await store.takeOverDelivery(hook.id, deliveryId, earlier.runId, attempt))) throw pending(deliveryId);
    log.warn({ deliveryId, earlierRunId: earlier.runId, earlierRunStatus: run?.status ?? null, runId: attempt.runId }, 'a delivery whose earlier attempt never stored its task is received again');
    if (hook.threadId !== null || run === undefined) return undefined;
    // The earlier attempt's thread, unless it was deleted since (it held nothing of this delivery).
    return (await conversations.findThread(hook.userId, run.threadId))?.id;
  }

  /** Whether the delivery's run added its task to the thread (a run that failed after storing it did). */
  private async runStoredTask(userId: string, runId: string): Promise<boolean> {
    const { conversations } = this.deps;
    const run = await conversations.getRun(userId, runId).catch(() => undefined);
    return run !== undefined && (await conversations.runAddedMessages(userId, run));
  }

  /** Wait for the runs deliveries started, for a graceful stop. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }
}
