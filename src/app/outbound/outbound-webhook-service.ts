import { randomBytes, randomUUID } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { VigilError } from '../../domain/errors.js';
import type { VigilEvent } from '../../domain/events.js';
import { textOf } from '../../domain/message-content.js';
import { isPrivateAddress, type OutboundEventType } from '../../domain/outbound/address-policy.js';
import { redact } from '../../domain/redaction.js';
import type { AgentService } from '../agent-service.js';
import type { ApprovalRecord } from '../../domain/tools/approval.js';
import type { DueJob, JobQueue } from '../job-queue.js';
import type { Clock, RunRecord, StoredMessage } from '../ports.js';
import type { RunEndEvent } from '../runs/run-request.js';
import type { SecretBox } from '../webhooks/hook-secret-box.js';
import type { OutboundWebhookRecord, OutboundWebhookRepository } from './outbound-ports.js';
import { postBody, publicOnlyLookup } from './guarded-post.js';

export const OUTBOUND_QUEUE = 'outbound-webhook';
/** A delivery is retried with exponential backoff for up to this long, then recorded failed. */
const RETRY_WINDOW_MS = 24 * 3_600_000;
const MAX_BACKOFF_MS = 3_600_000;
const REQUEST_TIMEOUT_MS = 10_000;
const REPLY_PREVIEW_CHARS = 1_000;

export interface OutboundWebhookOptions {
  /** Private and loopback addresses are refused unless this is on (VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE). */
  allowPrivateAddresses: boolean;
  /** The first retry's delay; each further one doubles (default 30 s). */
  retryBaseMs?: number;
  /** Failed attempts in a row after which a webhook is disabled (default 10). */
  disableAfter?: number;
}

/**
 * Outbound webhooks per agent: tell the person's own systems when the agent acted while
 * they were away (run.completed of an autonomous run) or needs them (approval.requested,
 * approval.expired). Standard Webhooks signatures; every attempt recorded; retried with
 * exponential backoff for up to 24 h on the durable job queue; a webhook that keeps
 * failing is disabled with a reason.
 */
export class OutboundWebhookService {
  private readonly retryBaseMs: number;
  private readonly disableAfter: number;
  /** Resolves a webhook's host for its connection, refusing private addresses there too. */
  private readonly lookup = publicOnlyLookup();

  constructor(
    private readonly deps: {
      repository: OutboundWebhookRepository;
      agents: AgentService;
      jobs: JobQueue;
      secrets: () => Promise<SecretBox>;
      approval: (id: string) => Promise<ApprovalRecord | undefined>;
      clock: Clock;
      logger: Logger;
    },
    private readonly options: OutboundWebhookOptions,
  ) {
    this.retryBaseMs = options.retryBaseMs ?? 30_000;
    this.disableAfter = options.disableAfter ?? 10;
  }

  async attach(): Promise<void> {
    await this.deps.jobs.work(OUTBOUND_QUEUE, (job) => this.deliver(job));
  }

  /** The signing secret is shown once, here; it is stored sealed. */
  async create(userId: string, agentId: string, input: { url: string; events: OutboundEventType[] }): Promise<{ webhook: OutboundWebhookRecord; secret: string }> {
    await this.deps.agents.get(userId, agentId);
    await this.checkAddress(input.url);
    const id = randomUUID();
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const sealed = (await this.deps.secrets()).seal(secret, `outbound-webhook:${id}`);
    const webhook = await this.deps.repository.create({ id, userId, agentId, url: input.url, events: [...new Set(input.events)], secretSealed: sealed, createdAt: this.deps.clock.now().toISOString() });
    return { webhook, secret };
  }

  async list(userId: string, agentId: string): Promise<OutboundWebhookRecord[]> {
    await this.deps.agents.get(userId, agentId);
    return this.deps.repository.list(userId, agentId);
  }

  async get(userId: string, agentId: string, id: string): Promise<OutboundWebhookRecord> {
    const webhook = await this.deps.repository.get(id);
    if (!webhook || webhook.userId !== userId || webhook.agentId !== agentId) throw new VigilError('OUTBOUND_WEBHOOK_NOT_FOUND', `no webhook "${id}"`);
    return webhook;
  }

  async delete(userId: string, agentId: string, id: string): Promise<void> {
    await this.get(userId, agentId, id);
    await this.deps.repository.delete(userId, id);
  }

  async deliveries(userId: string, agentId: string, id: string, limit: number) {
    await this.get(userId, agentId, id);
    return this.deps.repository.listDeliveries(id, limit);
  }

  // ---------- what goes out ----------
  /** The coordinator's run-end hook: autonomous runs only (a person watching needs no webhook). */
  onRunEnd(event: RunEndEvent): Promise<void> {
    return this.runEnded(event.outcome.run, event.outcome.messages);
  }

  /** A run ended, by its own process or by the sweep of runs whose process died; `messages`: what it added to the thread. */
  async runEnded(run: RunRecord, messages: readonly StoredMessage[]): Promise<void> {
    if (run.trigger === 'user' || run.trigger === 'channel') return;
    const reply = [...messages].reverse().find((message) => message.type === 'ai' && message.visibility === 'user');
    await this.enqueue(run.userId, run.agentId, 'run.completed', {
      runId: run.id,
      threadId: run.threadId,
      agentId: run.agentId,
      trigger: run.trigger,
      status: run.status,
      reason: run.reason,
      endedAt: run.endedAt,
      reply: reply ? textOf(reply.content).slice(0, REPLY_PREVIEW_CHARS) : null,
    });
  }

  /** Every event this process publishes: the approval ones go out. */
  async onEvent(event: VigilEvent): Promise<void> {
    if (event.type !== 'approval.requested' && event.type !== 'approval.expired') return;
    const record = await this.deps.approval(event.approvalId);
    if (!record) return;
    await this.enqueue(record.userId, record.agentId, event.type, {
      approvalId: record.id,
      threadId: record.threadId,
      runId: record.runId,
      agentId: record.agentId,
      tool: record.tool,
      arguments: record.arguments,
      status: record.status,
      expiresAt: record.expiresAt,
    });
  }

  private async enqueue(userId: string, agentId: string, eventType: OutboundEventType, data: Record<string, unknown>): Promise<void> {
    const now = this.deps.clock.now();
    for (const webhook of await this.deps.repository.subscribers(userId, agentId, eventType)) {
      const delivery = await this.deps.repository.createDelivery({
        id: `msg_${randomUUID().replaceAll('-', '')}`,
        webhookId: webhook.id,
        userId,
        eventType,
        payload: { type: eventType, timestamp: now.toISOString(), data: redact(data) as Record<string, unknown> },
        createdAt: now.toISOString(),
      });
      await this.deps.jobs.schedule({ queue: OUTBOUND_QUEUE, key: delivery.id, dueAt: now, payload: { deliveryId: delivery.id } });
    }
  }

  // ---------- delivering ----------
  private async deliver(job: DueJob): Promise<void> {
    const { repository, clock } = this.deps;
    const delivery = await repository.getDelivery(String(job.payload.deliveryId ?? job.key));
    if (!delivery || delivery.status !== 'pending') return;
    const webhook = await repository.get(delivery.webhookId);
    const attempt = delivery.attempts + 1;
    const log = this.deps.logger.child({ deliveryId: delivery.id, webhookId: delivery.webhookId, attempt });
    const now = clock.now();
    if (!webhook || !webhook.enabled) {
      await repository.recordAttempt(delivery.id, { attempt, at: now.toISOString(), statusCode: null, error: webhook ? `the webhook is disabled: ${webhook.disabledReason ?? ''}` : 'the webhook was deleted' }, 'failed', now.toISOString());
      return;
    }
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      await this.checkAddress(webhook.url);
      const secret = (await this.deps.secrets()).open(webhook.secretSealed, `outbound-webhook:${webhook.id}`);
      const body = JSON.stringify(delivery.payload);
      const signature = new Webhook(secret).sign(delivery.id, now, body);
      statusCode = await postBody(webhook.url, {
        headers: { 'content-type': 'application/json', 'webhook-id': delivery.id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': signature },
        body,
        timeoutMs: REQUEST_TIMEOUT_MS,
        // The address connected to is the one judged (a name checked above may resolve differently now).
        ...(this.options.allowPrivateAddresses ? {} : { lookup: this.lookup }),
      });
      if (statusCode < 200 || statusCode >= 300) error = `the endpoint answered HTTP ${statusCode}`;
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
    }
    const at = now.toISOString();
    const noted = await repository.noteAttempt(webhook.id, error === null, this.disableAfter, at);
    if (error === null) {
      await repository.recordAttempt(delivery.id, { attempt, at, statusCode, error: null }, 'delivered', at);
      return log.info({ statusCode }, 'outbound webhook delivered');
    }
    if (noted && !noted.enabled && webhook.enabled) log.warn({ reason: noted.disabledReason }, 'outbound webhook disabled');
    const delay = Math.min(this.retryBaseMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
    const giveUp = now.getTime() + delay > Date.parse(delivery.createdAt) + RETRY_WINDOW_MS || (noted !== undefined && !noted.enabled);
    await repository.recordAttempt(delivery.id, { attempt, at, statusCode, error }, giveUp ? 'failed' : 'pending', at);
    if (giveUp) return log.warn({ error }, 'outbound webhook delivery failed for good');
    log.info({ error, retryInMs: delay }, 'outbound webhook delivery failed; retrying');
    await this.deps.jobs.schedule({ queue: OUTBOUND_QUEUE, key: delivery.id, dueAt: new Date(now.getTime() + delay), payload: { deliveryId: delivery.id } });
  }

  /** http(s) only, and no private or loopback address (also after DNS) unless the setting allows. */
  private async checkAddress(raw: string): Promise<void> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new VigilError('OUTBOUND_ADDRESS_REFUSED', 'not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new VigilError('OUTBOUND_ADDRESS_REFUSED', 'only http and https URLs');
    if (url.username || url.password) throw new VigilError('OUTBOUND_ADDRESS_REFUSED', 'URLs with credentials are refused');
    if (this.options.allowPrivateAddresses) return;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(host) ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((entry) => entry.address);
    if (addresses.length === 0) throw new VigilError('OUTBOUND_ADDRESS_REFUSED', `"${host}" does not resolve`);
    if (addresses.some(isPrivateAddress)) throw new VigilError('OUTBOUND_ADDRESS_REFUSED', `"${host}" is a private or loopback address (VIGIL_OUTBOUND_WEBHOOKS_ALLOW_PRIVATE allows it)`);
  }
}
