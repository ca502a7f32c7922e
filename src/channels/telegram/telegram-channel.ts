import { randomUUID } from 'node:crypto';
import { personMessage } from '../../agent/task-message.js';
import { GrammyError, HttpError, type Bot } from 'grammy';
import type { Logger } from 'pino';
import type { AgentService } from '../../app/agent-service.js';
import type { ConversationService } from '../../app/conversation-service.js';
import type { Clock, EventBus, Storage, StoredMessage } from '../../app/ports.js';
import type { SingletonRoles } from '../../app/singleton-role.js';
import { runMetaOf } from '../../app/run-meta.js';
import { VigilError, isVigilError } from '../../domain/errors.js';
import { textOf } from '../../domain/message-content.js';
import type { TelegramChat, TelegramChatStore } from './telegram-store.js';
import { approvalButtonData, parseApprovalButton, splitForTelegram, telegramUpdateSchema, type TelegramCallbackQuery, type TelegramMessage } from './telegram-update.js';
import type { ApprovalDecisionBody, ApprovalRecord } from '../../domain/tools/approval.js';
import type { EventOf } from '../../domain/events.js';

/** What the channel needs of the approvals: a person's decision, through Telegram. */
export interface TelegramApprovals {
  /** The owner's request (APPROVAL_NOT_FOUND otherwise): a button decides only its chat's thread's. */
  get(userId: string, id: string): Promise<ApprovalRecord>;
  decide(userId: string, id: string, body: ApprovalDecisionBody, channel: 'telegram'): Promise<ApprovalRecord>;
}

/** The updates the bot asks Telegram for: messages, and presses of its approval buttons. */
const ALLOWED_UPDATES = ['message', 'callback_query'] as const;

export interface TelegramChannelOptions {
  /** How updates arrive: long polling (getUpdates), or Telegram calling our webhook route. */
  mode: 'polling' | 'webhook';
  /** The vigil user who owns every Telegram thread. */
  userId: string;
  /** The agent that answers; "default" is the user's default agent. */
  agentId: string;
  /** The secret Telegram echoes in X-Telegram-Bot-Api-Secret-Token (webhook mode). */
  webhookSecret?: string | undefined;
  /** Registered with setWebhook at start when set (webhook mode). */
  webhookUrl?: string | undefined;
  /** Only these chats are answered; undefined = every chat. */
  allowedChats?: ReadonlySet<number> | undefined;
  /** Long-polling timeout in seconds. */
  pollTimeoutSeconds?: number;
}

export interface TelegramChannelDependencies {
  bot: Bot;
  store: TelegramChatStore;
  storage: Pick<Storage, 'threads' | 'runs'>;
  conversations: ConversationService;
  agents: AgentService;
  events: EventBus;
  clock: Clock;
  logger: Logger;
  /** Approve / Reject buttons for tool calls waiting on a chat's thread (absent: none are sent). */
  approvals?: TelegramApprovals;
  /** Long polling runs on one instance at a time (Telegram allows one poller); absent: this one always polls. */
  roles?: SingletonRoles;
}

/** The role of the instance that long-polls Telegram (/readyz lists it where held). */
export const TELEGRAM_POLLER_ROLE = 'telegram-poller';

/** Telegram redelivers an unconfirmed update for 24 hours; handled ids are kept twice that. */
const UPDATE_MEMORY_MS = 48 * 60 * 60 * 1000;
const SEND_ATTEMPTS = 3;
const HISTORY_PAGE = 100;

/**
 * The Telegram channel (grammY): each chat maps to one thread; a person's message starts
 * a run (trigger `channel`, the person's text as a real user message — a person is
 * speaking — and meta channel/chat_id/message_id/chat_type/from_user_id).
 *
 * Replies: every visible assistant message of a mapped thread goes to the chat exactly
 * once, whatever run wrote it — the answer to the chat's message, an autonomous
 * follow-up, a run started over HTTP. One path does it: an assistant `message.end` on a
 * mapped thread makes the thread's outbox catch up, reading the thread's history after the
 * chat's `sent_seq` and claiming each message (a conditional update of sent_seq) before
 * sending it. Claim-before-send makes a message go out at most once across processes and
 * retries; reading from history (not from the event) means a reply projected
 * while nothing was listening is still sent at the next start.
 */
export class TelegramChannel {
  private botId = 0;
  private readonly subscriptions = new Map<string, () => void>(); // threadId → unsubscribe
  private readonly chains = new Map<string, Promise<void>>(); // per chat / per outbox: one at a time, in order
  private readonly inFlight = new Set<Promise<unknown>>();
  private polling: Promise<void> | undefined;
  private ready: Promise<void> | undefined;
  private readonly initAbort = new AbortController();
  private stopping = false;

  constructor(private readonly deps: TelegramChannelDependencies, private readonly options: TelegramChannelOptions) {}

  get mode(): TelegramChannelOptions['mode'] {
    return this.options.mode;
  }

  /**
   * Start in the background: the server does not wait for Telegram (grammY retries an
   * unreachable Bot API for a long time). `ready` settles when the channel can take
   * updates; webhook updates wait for it.
   */
  start(): Promise<void> {
    this.ready ??= this.initialize().catch((error: unknown) => {
      if (!this.stopping) this.deps.logger.error({ err: error }, 'telegram channel could not start');
      throw error;
    });
    this.ready.catch(() => undefined);
    return this.ready;
  }

  private async initialize(): Promise<void> {
    const { bot, store, clock, logger } = this.deps;
    bot.use(async (context) => {
      await this.receive(context.update);
    });
    bot.catch((error) => logger.error({ err: error.error, updateId: error.ctx.update.update_id }, 'telegram update failed'));
    // getMe: the bot's id keys its chats. (grammY types its signal with a polyfill's type; Node's native one works.)
    await bot.init(this.initAbort.signal as unknown as Parameters<Bot['init']>[0]);
    this.botId = bot.botInfo.id;
    await store.pruneUpdates(new Date(clock.now().getTime() - UPDATE_MEMORY_MS).toISOString());
    for (const chat of await store.listChats(this.botId)) {
      this.subscribe(chat);
      this.flush(chat.chatId, chat.threadId); // replies projected while nothing listened
    }
    if (this.stopping) return;
    if (this.options.mode === 'polling') {
      this.polling = this.poll();
    } else if (this.options.webhookUrl !== undefined) {
      await bot.api.setWebhook(this.options.webhookUrl, { secret_token: this.options.webhookSecret, allowed_updates: [...ALLOWED_UPDATES] });
    }
    logger.info({ botId: this.botId, mode: this.options.mode, userId: this.options.userId, agentId: this.options.agentId }, 'telegram channel started');
  }

  /**
   * Long polling, only while this instance holds the poller role: several instances on one
   * database take turns, and when the holder dies another takes over within seconds
   * (Telegram keeps unconfirmed updates, so none is lost; handled update ids keep a
   * redelivered one from running twice).
   */
  private async poll(): Promise<void> {
    const { bot, logger, roles } = this.deps;
    while (!this.stopping) {
      const lease = roles ? await roles.acquire(TELEGRAM_POLLER_ROLE, this.initAbort.signal) : undefined;
      if (roles && !lease) return; // stopping
      const onLost = () => {
        logger.warn('lost the telegram poller role: polling stops here (another instance takes over)');
        if (bot.isRunning()) void bot.stop().catch(() => undefined);
      };
      lease?.lost.addEventListener('abort', onLost, { once: true });
      try {
        if (lease?.lost.aborted || this.stopping) continue;
        logger.info({ botId: this.botId }, 'this instance long-polls telegram');
        await bot.start({ allowed_updates: [...ALLOWED_UPDATES], timeout: this.options.pollTimeoutSeconds ?? 30 }).catch((error: unknown) => logger.error({ err: error }, 'telegram long polling stopped'));
      } finally {
        lease?.lost.removeEventListener('abort', onLost);
        await lease?.release();
      }
      if (!roles) return;
      // Polling ended on its own (an error): give the role a moment before taking it again.
      if (!this.stopping) await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
    }
  }

  /** Take no more updates (stop long polling); runs and replies in flight go on. */
  async stopReceiving(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.initAbort.abort();
    if (this.deps.bot.isRunning()) await this.deps.bot.stop().catch((error: unknown) => this.deps.logger.warn({ err: error }, 'telegram polling did not stop cleanly'));
    await this.polling;
  }

  /** Stop receiving, then wait for the runs and replies in flight. Idempotent. */
  async stop(): Promise<void> {
    await this.stopReceiving();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    for (const unsubscribe of this.subscriptions.values()) unsubscribe();
    this.subscriptions.clear();
  }

  /** An update from the webhook route (already authenticated by its secret header). */
  async receiveWebhookUpdate(update: unknown): Promise<void> {
    if (this.ready === undefined || this.stopping) throw new VigilError('INTERNAL', 'the telegram channel is not running');
    // Refused before anything waits or starts: an update that does not fit what vigil reads is
    // the sender's error (400), never a server error (a thrown ZodError answered 500).
    const parsed = telegramUpdateSchema.safeParse(update);
    if (!parsed.success) {
      const details = parsed.error.issues.map((issue) => ({ path: `/${issue.path.join('/')}`, message: issue.message }));
      throw new VigilError('VALIDATION_FAILED', `the Telegram update does not fit: ${details.map((detail) => `${detail.path} ${detail.message}`).join('; ')}`, { details });
    }
    await this.ready;
    await this.deps.bot.handleUpdate(parsed.data as Parameters<Bot['handleUpdate']>[0]);
  }

  private async receive(raw: unknown): Promise<void> {
    const { store, clock, logger } = this.deps;
    const parsed = telegramUpdateSchema.safeParse(raw);
    if (!parsed.success) {
      logger.warn({ issues: parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })) }, 'telegram update ignored: unexpected shape');
      return;
    }
    const update = parsed.data;
    if (update.callback_query !== undefined) {
      const query = update.callback_query;
      if (!(await store.recordUpdate(this.botId, update.update_id, clock.now().toISOString()))) return;
      this.chain(`chat:${query.message?.chat.id ?? 'unknown'}`, () => this.onButton(query));
      return;
    }
    const message = update.message;
    if (message?.text === undefined || message.text.trim() === '') {
      logger.debug({ updateId: update.update_id }, 'telegram update ignored: not a text message');
      return;
    }
    const chatId = message.chat.id;
    if (this.options.allowedChats && !this.options.allowedChats.has(chatId)) {
      logger.info({ updateId: update.update_id, chatId }, 'telegram message ignored: chat not in VIGIL_TELEGRAM_ALLOWED_CHATS');
      return;
    }
    if (!(await store.recordUpdate(this.botId, update.update_id, clock.now().toISOString()))) {
      logger.debug({ updateId: update.update_id, chatId }, 'telegram update ignored: already handled');
      return;
    }
    // One chat at a time, in arrival order: a chat's second message waits for the first run.
    this.chain(`chat:${chatId}`, () => this.answer(update.update_id, message));
  }

  private async answer(updateId: number, message: TelegramMessage): Promise<void> {
    const { store, conversations, logger } = this.deps;
    const log = logger.child({ updateId, chatId: message.chat.id });
    let chat: TelegramChat;
    let meta: Record<string, unknown>;
    const runId = randomUUID();
    const correlationId = `telegram-${this.botId}-${updateId}`;
    try {
      chat = await this.chatThread(message);
      const channelMeta = {
        channel: 'telegram',
        chat_id: message.chat.id,
        message_id: message.message_id,
        chat_type: message.chat.type,
        ...(message.from ? { from_user_id: message.from.id } : {}),
      };
      runMetaOf({ trigger: 'channel', runId, requestedAt: this.deps.clock.now().toISOString(), correlationId, meta: channelMeta }); // refuse bad input before a run
      meta = channelMeta;
    } catch (error) {
      log.error({ err: error, code: isVigilError(error) ? error.code : 'INTERNAL' }, 'telegram message could not be taken');
      await store.forgetUpdate(this.botId, updateId).catch(() => undefined);
      return;
    }
    // A person speaking: a real user message, visible in history (I1); Telegram's message
    // id is kept as metadata, never as the message's id (I13).
    const input = personMessage(message.text ?? '', { clientMessageId: `telegram:${message.chat.id}:${message.message_id}` });
    log.info({ runId, threadId: chat.threadId }, 'telegram message starts a run');
    try {
      await conversations.runTriggered(this.options.userId, chat.threadId, { trigger: 'channel', input, meta, correlationId, runId });
    } catch (error) {
      log.error({ err: error, runId, code: isVigilError(error) ? error.code : 'INTERNAL' }, 'telegram run could not start');
    }
  }

  /** The chat's thread, made on its first message (the mapping first, so a race loses nothing). */
  private async chatThread(message: TelegramMessage): Promise<TelegramChat> {
    const { store, agents, storage, clock } = this.deps;
    const existing = await store.findChat(this.botId, message.chat.id);
    if (existing) return existing;
    const { userId } = this.options;
    const agent = this.options.agentId === 'default' ? await agents.getOrCreateDefault(userId) : await agents.get(userId, this.options.agentId);
    const now = clock.now().toISOString();
    const chat = { botId: this.botId, chatId: message.chat.id, threadId: randomUUID(), userId, chatType: message.chat.type, sentSeq: -1 };
    if (!(await store.insertChat(chat, now))) {
      const winner = await store.findChat(this.botId, message.chat.id);
      if (!winner) throw new Error('telegram chat mapping vanished');
      return winner;
    }
    try {
      await storage.threads.create({ id: chat.threadId, userId, agentId: agent.id, title: `Telegram ${message.chat.type} chat ${message.chat.id}` }, now);
    } catch (error) {
      await store.deleteChat(this.botId, message.chat.id).catch(() => undefined);
      throw error;
    }
    const created = { ...chat, createdAt: now };
    this.subscribe(created);
    return created;
  }

  private subscribe(chat: TelegramChat): void {
    if (this.subscriptions.has(chat.threadId)) return;
    const unsubscribe = this.deps.events.subscribe(chat.threadId, (event) => {
      if (event.type === 'message.end' && event.message.role === 'assistant') this.flush(chat.chatId, chat.threadId);
      if (event.type === 'approval.requested' && this.deps.approvals) this.chain(`outbox:${chat.threadId}`, () => this.askApproval(chat, event));
      // The thread's last event: a thread made later with its id (by anyone) is not this chat's.
      if (event.type === 'thread.deleted') {
        this.subscriptions.get(chat.threadId)?.();
        this.subscriptions.delete(chat.threadId);
      }
    });
    this.subscriptions.set(chat.threadId, unsubscribe);
  }

  private flush(chatId: number, threadId: string): void {
    this.chain(`outbox:${threadId}`, () => this.catchUp(chatId));
  }

  /** Hand the chat every visible message after its sent_seq; send the assistant's. */
  private async catchUp(chatId: number): Promise<void> {
    const { store, storage, clock, logger } = this.deps;
    const chat = await store.findChat(this.botId, chatId);
    if (!chat) return;
    const pending = await this.visibleAfter(chat);
    let sentSeq = chat.sentSeq;
    for (const message of pending) {
      if (!(await store.advanceSentSeq(this.botId, chatId, sentSeq, message.seq, clock.now().toISOString()))) {
        logger.debug({ chatId, threadId: chat.threadId }, 'telegram outbox: another worker is ahead');
        return;
      }
      sentSeq = message.seq;
      if (message.type !== 'ai') continue; // the person's own words are not echoed
      const text = textOf(message.content).trim();
      if (text === '') continue;
      await this.send(chat, message, text, await this.replyTarget(chat, message, storage));
    }
  }

  private async visibleAfter(chat: TelegramChat): Promise<StoredMessage[]> {
    const messages: StoredMessage[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.deps.storage.threads.history(chat.userId, chat.threadId, { visibility: 'user', limit: HISTORY_PAGE, cursor, fromSeq: chat.sentSeq + 1 });
      messages.push(...page.messages);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return messages.sort((a, b) => a.seq - b.seq);
  }

  /** The chat message a reply answers: the one that started its run, if any. */
  private async replyTarget(chat: TelegramChat, message: StoredMessage, storage: Pick<Storage, 'runs'>): Promise<number | undefined> {
    if (message.runId === null) return undefined;
    const run = await storage.runs.get(chat.userId, message.runId);
    if (run?.trigger !== 'channel' || run.meta.chat_id !== chat.chatId) return undefined;
    return typeof run.meta.message_id === 'number' ? run.meta.message_id : undefined;
  }

  private async send(chat: TelegramChat, message: StoredMessage, text: string, replyTo: number | undefined): Promise<void> {
    const log = this.deps.logger.child({ chatId: chat.chatId, threadId: chat.threadId, messageId: message.id });
    const parts = splitForTelegram(text);
    for (const [index, part] of parts.entries()) {
      const other = index === 0 && replyTo !== undefined ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {};
      for (let attempt = 1; ; attempt++) {
        try {
          await this.deps.bot.api.sendMessage(chat.chatId, part, other);
          break;
        } catch (error) {
          const retryAfter = error instanceof GrammyError ? error.parameters.retry_after : undefined;
          const transient = error instanceof HttpError || retryAfter !== undefined || (error instanceof GrammyError && error.error_code >= 500);
          if (!transient || attempt >= SEND_ATTEMPTS || this.stopping) {
            // Claimed already, so not sent twice; said plainly so that it is not silently lost.
            log.error({ err: error, attempt }, 'telegram reply could not be delivered');
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, retryAfter !== undefined ? Math.min(retryAfter, 30) * 1000 : 250 * 4 ** (attempt - 1)));
        }
      }
    }
    log.debug({ parts: parts.length }, 'telegram reply sent');
  }

  /** A tool call waits for the person: a message with Approve / Reject buttons. */
  private async askApproval(chat: TelegramChat, event: EventOf<'approval.requested'>): Promise<void> {
    const text = `The agent wants to run ${event.tool} with ${JSON.stringify(event.arguments).slice(0, 1500)}.\nIt waits for your decision until ${event.expiresAt}.`;
    await this.deps.bot.api.sendMessage(chat.chatId, text, {
      reply_markup: { inline_keyboard: [[{ text: 'Approve', callback_data: approvalButtonData(event.approvalId, 'approve') }, { text: 'Reject', callback_data: approvalButtonData(event.approvalId, 'reject') }]] },
    });
    this.deps.logger.info({ chatId: chat.chatId, threadId: chat.threadId, approvalId: event.approvalId }, 'telegram approval request sent');
  }

  /** A button press: only the chat's own person decides; the message is edited to show the outcome. */
  private async onButton(query: TelegramCallbackQuery): Promise<void> {
    const { store, logger } = this.deps;
    const button = parseApprovalButton(query.data);
    const message = query.message;
    const answer = (text: string) => this.deps.bot.api.answerCallbackQuery(query.id, { text }).catch((error: unknown) => logger.warn({ err: error }, 'telegram callback answer failed'));
    if (!button || !message || !this.deps.approvals) return void (await answer('Nothing to do.'));
    const chat = await store.findChat(this.botId, message.chat.id);
    // The chat's allowed user: a private chat with that person (a group's other members cannot decide).
    const allowed = chat !== undefined && message.chat.type === 'private' && query.from.id === message.chat.id && (!this.options.allowedChats || this.options.allowedChats.has(message.chat.id));
    if (!allowed) {
      logger.info({ chatId: message.chat.id, fromId: query.from.id }, 'telegram approval button refused: not the chat\'s person');
      return void (await answer('Only the person this chat belongs to can decide.'));
    }
    let outcome: string;
    try {
      // Every chat of the bot acts as the same vigil user: ownership alone would let one chat's
      // button (its data is the client's to send) decide another thread's request (I12).
      const requested = await this.deps.approvals.get(chat.userId, button.approvalId);
      if (requested.threadId !== chat.threadId) throw new VigilError('APPROVAL_NOT_FOUND', `no approval "${button.approvalId}" in this chat`);
      const record = await this.deps.approvals.decide(chat.userId, button.approvalId, { decision: button.decision }, 'telegram');
      outcome = `${record.tool}: ${record.status}`;
    } catch (error) {
      if (!isVigilError(error) || (error.code !== 'APPROVAL_ALREADY_DECIDED' && error.code !== 'APPROVAL_NOT_FOUND')) throw error;
      const status = (error.details as { status?: string } | undefined)?.status;
      outcome = error.code === 'APPROVAL_NOT_FOUND' ? 'this request no longer exists' : `already ${status ?? 'decided'}`;
    }
    await answer(outcome);
    const original = message.text ?? 'Approval request';
    await this.deps.bot.api.editMessageText(message.chat.id, message.message_id, `${original}\n\nDecision: ${outcome}`).catch((error: unknown) => logger.warn({ err: error }, 'telegram approval message could not be edited'));
  }

  /** Run `work` after the previous work of the same key; errors are logged, never thrown. */
  private chain(key: string, work: () => Promise<void>): void {
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(work).catch((error: unknown) => this.deps.logger.error({ err: error, key }, 'telegram work failed'));
    this.chains.set(key, next);
    this.inFlight.add(next);
    void next.finally(() => {
      this.inFlight.delete(next);
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
  }
}
