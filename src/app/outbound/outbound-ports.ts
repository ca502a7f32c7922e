import type { OutboundEventType } from '../../domain/outbound/address-policy.js';
import type { Iso } from '../ports.js';

export interface OutboundWebhookRecord {
  id: string;
  userId: string;
  agentId: string;
  url: string;
  events: OutboundEventType[];
  /** The signing secret, sealed with the server's key (never returned after creation). */
  secretSealed: string;
  enabled: boolean;
  disabledReason: string | null;
  consecutiveFailures: number;
  createdAt: Iso;
  updatedAt: Iso;
}

export interface OutboundDeliveryRecord {
  id: string;
  webhookId: string;
  userId: string;
  eventType: OutboundEventType;
  payload: Record<string, unknown>;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastError: string | null;
  createdAt: Iso;
  updatedAt: Iso;
}

export interface OutboundAttemptRecord {
  attempt: number;
  at: Iso;
  statusCode: number | null;
  error: string | null;
}

export interface OutboundWebhookRepository {
  create(webhook: Omit<OutboundWebhookRecord, 'updatedAt' | 'enabled' | 'disabledReason' | 'consecutiveFailures'>): Promise<OutboundWebhookRecord>;
  get(id: string): Promise<OutboundWebhookRecord | undefined>;
  list(userId: string, agentId: string): Promise<OutboundWebhookRecord[]>;
  /** Enabled subscriptions of the agent to the event type. */
  subscribers(userId: string, agentId: string, eventType: OutboundEventType): Promise<OutboundWebhookRecord[]>;
  delete(userId: string, id: string): Promise<boolean>;
  /** After an attempt: reset (success) or count (failure) the consecutive failures; disable with a reason at the bound. */
  noteAttempt(id: string, succeeded: boolean, disableAfter: number, now: Iso): Promise<OutboundWebhookRecord | undefined>;
  createDelivery(delivery: Omit<OutboundDeliveryRecord, 'status' | 'attempts' | 'lastError' | 'updatedAt'>): Promise<OutboundDeliveryRecord>;
  getDelivery(id: string): Promise<OutboundDeliveryRecord | undefined>;
  listDeliveries(webhookId: string, limit: number): Promise<Array<OutboundDeliveryRecord & { attemptLog: OutboundAttemptRecord[] }>>;
  /** Record one attempt and the delivery's new state. */
  recordAttempt(deliveryId: string, attempt: OutboundAttemptRecord, status: OutboundDeliveryRecord['status'], now: Iso): Promise<void>;
}
