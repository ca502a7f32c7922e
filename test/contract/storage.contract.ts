/**
 * The storage contract, written once and run against every backend
 * (storage-sqlite.test.ts, storage-postgres.test.ts). Each case uses fresh random user ids,
 * so cases share one open storage without seeing each other's rows.
 */
import { randomUUID } from 'node:crypto';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewAgent, NewRun, Storage, StoredMessage } from '../../src/app/ports.js';
import { projectMessage } from '../../src/app/message-projection.js';
import { agentSays, appendToHistory, personSays, systemSays } from '../helpers/thread-history.js';
import { SqlHookRepository } from '../../src/adapters/sql/hook-repository.js';
import type { SqlStorage } from '../../src/adapters/sql/sql-storage.js';
import { SqlProtocolStore } from '../../src/adapters/sql/protocol-repository.js';
import { newRunRecord } from '../../src/app/langgraph/protocol-store.js';
import { runMetaOf } from '../../src/app/run-meta.js';
import type { RunContext } from '../../src/domain/run-context.js';

/** A fixed clock: minute `m` after a base instant, as toISOString() text. */
function at(minute: number, second = 0): string {
  return new Date(Date.UTC(2025, 0, 1, 12, minute, second)).toISOString();
}

function newAgent(userId: string, id: string = randomUUID()): NewAgent {
  return {
    id,
    userId,
    name: 'Helper',
    kind: 'chat',
    systemPrompt: 'Be brief.',
    model: null,
    settings: { autonomy: { enabled: true, maxFollowUps: 2 }, memory: { enabled: false } },
  };
}

function newRun(userId: string, threadId: string, overrides: Partial<NewRun> = {}): NewRun {
  return {
    id: randomUUID(),
    threadId,
    userId,
    agentId: 'agent',
    trigger: 'user',
    meta: { source: 'test', nested: { n: 1 } },
    correlationId: randomUUID(),
    model: 'demo',
    requestedAt: at(0),
    startedAt: at(0, 1),
    ...overrides,
  };
}

async function codeOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return (error as { code?: unknown }).code;
  }
  return 'resolved';
}

export function storageContract(name: string, open: () => Promise<Storage>): void {
  describe(`storage contract: ${name}`, () => {
    let storage: Storage;

    beforeAll(async () => {
      storage = await open();
    });

    afterAll(async () => {
      await storage?.close();
    });

    async function newThread(userId: string, now = at(0)) {
      return storage.threads.create({ id: randomUUID(), userId, agentId: 'agent', title: 'A thread' }, now);
    }

    describe('agents', () => {
      it('creates, gets and lists an agent', async () => {
        const userId = randomUUID();
        const agent = newAgent(userId, 'helper');
        const created = await storage.agents.create(agent, at(1));
        expect(created).toEqual({ ...agent, createdAt: at(1), updatedAt: at(1) });
        expect(await storage.agents.get(userId, 'helper')).toEqual(created);
        const second = await storage.agents.create(newAgent(userId, 'planner'), at(2));
        expect(await storage.agents.list(userId)).toEqual([created, second]);
        expect(await storage.agents.get(userId, 'missing')).toBeUndefined();
      });

      it('refuses a duplicate (user, id) with AGENT_EXISTS and writes nothing', async () => {
        const userId = randomUUID();
        const original = await storage.agents.create(newAgent(userId, 'helper'), at(1));
        const duplicate = { ...newAgent(userId, 'helper'), name: 'Impostor', systemPrompt: 'Something else.' };
        expect(await codeOf(storage.agents.create(duplicate, at(2)))).toBe('AGENT_EXISTS');
        expect(await storage.agents.get(userId, 'helper')).toEqual(original);
        expect(await storage.agents.list(userId)).toHaveLength(1);
        // The same id under another user is a different agent.
        const otherUser = randomUUID();
        await expect(storage.agents.create(newAgent(otherUser, 'helper'), at(3))).resolves.toMatchObject({ userId: otherUser, id: 'helper' });
      });
    });

    describe('threads', () => {
      it('creates and gets a thread with zeroed counters', async () => {
        const userId = randomUUID();
        const thread = await newThread(userId, at(5));
        expect(thread).toMatchObject({
          userId,
          agentId: 'agent',
          title: 'A thread',
          createdAt: at(5),
          updatedAt: at(5),
          lastUserActivityAt: null,
          visibleCount: 0,
          lastVisiblePreview: null,
          lastVisibleAt: null,
          messageCount: 0,
        });
        expect(await storage.threads.get(userId, thread.id)).toEqual(thread);
        expect(await storage.threads.get(userId, randomUUID())).toBeUndefined();
      });

      it('I11: a thread made with what is written beside it (the protocol\'s metadata and first run) is made with it or not at all', async () => {
        const protocol = new SqlProtocolStore((storage as unknown as SqlStorage).context);
        const userId = randomUUID();
        const id = randomUUID();
        const thread = { id, userId, agentId: 'agent', title: null };
        const failed = storage.threads.create(thread, at(1), async (within, made) => {
          await protocol.setThreadMetadata(userId, made.id, { kept: 'no' }, at(1), { within });
          throw new Error('the run row could not be written');
        });
        await expect(failed).rejects.toThrow('the run row could not be written');
        expect(await storage.threads.get(userId, id)).toBeUndefined();
        expect(await protocol.threadMetadataOf(userId)).toEqual(new Map());
        // The id is free: made again, with what goes beside it.
        const made = await storage.threads.create(thread, at(2), async (within, created) => {
          await protocol.setThreadMetadata(userId, created.id, { kept: 'yes' }, at(2), { within });
          await protocol.createRun(newRunRecord({ runId: randomUUID(), userId, threadId: created.id, agentId: 'agent', metadata: {}, multitaskStrategy: 'reject' }), { within });
        });
        expect(await storage.threads.get(userId, id)).toEqual(made);
        expect(await protocol.threadMetadata(userId, id)).toEqual({ kept: 'yes' });
        expect(await protocol.listRuns(userId, id, { limit: 10, offset: 0 })).toHaveLength(1);
        // Another user sees none of it.
        expect(await protocol.threadMetadata(randomUUID(), id)).toEqual({});
      });

      it("a protocol run keeps a resume's step and why it ended before it started, beside the client's metadata and never in it; another user reads none of it", async () => {
        const protocol = new SqlProtocolStore((storage as unknown as SqlStorage).context);
        const userId = randomUUID();
        const runId = randomUUID();
        const record = newRunRecord({ runId, userId, threadId: randomUUID(), agentId: 'agent', metadata: { origin: 'sdk' }, multitaskStrategy: 'reject', resumeStep: 'message-1' });
        await protocol.createRun(record);
        expect(await protocol.getRun(userId, runId)).toEqual(record);
        const error = { code: 'RESUME_NOT_STARTED', message: 'nothing will continue it' };
        await protocol.setRunState(runId, 'failed', undefined, error);
        expect(await protocol.getRun(userId, runId)).toEqual({ ...record, state: 'failed', error });
        await protocol.setRunState(runId, 'started', 'vigil-run');
        expect(await protocol.getRun(userId, runId)).toMatchObject({ state: 'started', vigilRunId: 'vigil-run', resumeStep: 'message-1', error, metadata: { origin: 'sdk' } });
        expect(await protocol.getRun(randomUUID(), runId)).toBeUndefined();
      });

      it('a protocol run names its owner, and a conditional move wins once: the owner claiming it and another process ending it cannot both (nothing else of the row changes)', async () => {
        const protocol = new SqlProtocolStore((storage as unknown as SqlStorage).context);
        const userId = randomUUID();
        const [claimed, ended] = [randomUUID(), randomUUID()];
        const threadId = randomUUID();
        const records = new Map([claimed, ended].map((runId) => [runId, newRunRecord({ runId, userId, threadId, agentId: 'agent', metadata: { origin: 'sdk' }, multitaskStrategy: 'enqueue', owner: 'process-1' })]));
        for (const record of records.values()) await protocol.createRun(record);
        expect(await protocol.getRun(userId, claimed)).toMatchObject({ owner: 'process-1', metadata: { origin: 'sdk' }, state: 'pending' });
        const error = { code: 'RUN_NOT_STARTED', message: 'its server stopped' };
        // The owner's claim and another process's end at once: exactly one wins, and the row says which.
        const [claim, lateEnd] = await Promise.all([protocol.moveRun(claimed, 'pending', 'claimed'), protocol.moveRun(claimed, 'pending', 'failed', error)]);
        expect([claim, lateEnd].filter(Boolean)).toHaveLength(1);
        expect(await protocol.getRun(userId, claimed)).toMatchObject(claim ? { state: 'claimed', error: null } : { state: 'failed', error });
        // Ended first: the owner's claim loses, and the end keeps the owner and the client's metadata.
        expect(await protocol.moveRun(ended, 'pending', 'failed', error)).toBe(true);
        expect(await protocol.moveRun(ended, 'pending', 'claimed')).toBe(false);
        expect(await protocol.moveRun(ended, 'pending', 'failed', error)).toBe(false);
        expect(await protocol.getRun(userId, ended)).toEqual({ ...records.get(ended), state: 'failed', error });
        expect(await protocol.moveRun(randomUUID(), 'pending', 'claimed')).toBe(false);
        expect(await protocol.getRun(randomUUID(), ended)).toBeUndefined();
      });

      it("what a page of threads' protocol status is read from, in one call: each thread's newest run and newest protocol run; another user's thread is absent (I12)", async () => {
        const protocol = new SqlProtocolStore((storage as unknown as SqlStorage).context);
        const userId = randomUUID();
        const [quiet, failed, unstarted] = [await newThread(userId), await newThread(userId), await newThread(userId)];
        const others = await newThread(randomUUID());
        expect(await protocol.statusFactsOf(userId, [])).toEqual(new Map());
        // An older run succeeded, the newest failed.
        await storage.runs.finish((await storage.runs.create(newRun(userId, failed.id, { requestedAt: at(1), startedAt: at(1, 1) }))).id, { status: 'succeeded', endedAt: at(2) });
        await storage.runs.finish((await storage.runs.create(newRun(userId, failed.id, { requestedAt: at(3), startedAt: at(3, 1) }))).id, { status: 'failed', endedAt: at(4) });
        // A run that succeeded, then a protocol run that never started.
        await storage.runs.finish((await storage.runs.create(newRun(userId, unstarted.id, { requestedAt: at(1), startedAt: at(1, 1) }))).id, { status: 'succeeded', endedAt: at(2) });
        const older = { ...newRunRecord({ runId: randomUUID(), userId, threadId: unstarted.id, agentId: 'agent', metadata: {}, multitaskStrategy: 'reject' }), state: 'started' as const, createdAt: at(1) };
        const newer = { ...newRunRecord({ runId: randomUUID(), userId, threadId: unstarted.id, agentId: 'agent', metadata: {}, multitaskStrategy: 'enqueue' }), state: 'failed' as const, createdAt: at(5) };
        for (const row of [older, newer]) await protocol.createRun(row);
        const facts = await protocol.statusFactsOf(userId, [quiet.id, failed.id, unstarted.id, others.id, randomUUID()]);
        expect([...facts.keys()].sort()).toEqual([quiet.id, failed.id, unstarted.id].sort());
        expect(facts.get(quiet.id)).toEqual({ newestRun: null, newestProtocolRun: null, waitingForDecision: false });
        expect(facts.get(failed.id)).toEqual({ newestRun: { status: 'failed', requestedAt: at(3) }, newestProtocolRun: null, waitingForDecision: false });
        expect(facts.get(unstarted.id)).toEqual({ newestRun: { status: 'succeeded', requestedAt: at(1) }, newestProtocolRun: { state: 'failed', vigilRunId: null, createdAt: at(5) }, waitingForDecision: false });
      });

      it('lists newest activity first, paging with an opaque cursor', async () => {
        const userId = randomUUID();
        const threads = [];
        for (let minute = 0; minute < 5; minute++) threads.push(await newThread(userId, at(minute)));
        // Activity on the oldest thread moves it to the front.
        await appendToHistory(storage, threads[0]!.id, [personSays()], { at: at(10) });

        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await storage.threads.list(userId, { limit: 2, cursor });
          expect(page.threads.length).toBeLessThanOrEqual(2);
          seen.push(...page.threads.map((thread) => thread.id));
          cursor = page.nextCursor ?? undefined;
          pages++;
        } while (cursor !== undefined);
        expect(pages).toBe(3);
        expect(seen).toEqual([threads[0], threads[4], threads[3], threads[2], threads[1]].map((thread) => thread!.id));
      });

      it('pages through threads with equal update times exactly once each', async () => {
        const userId = randomUUID();
        const ids = new Set<string>();
        for (let index = 0; index < 4; index++) ids.add((await newThread(userId, at(7))).id);
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await storage.threads.list(userId, { limit: 1, cursor });
          seen.push(...page.threads.map((thread) => thread.id));
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        expect(seen).toHaveLength(4);
        expect(new Set(seen)).toEqual(ids);
        expect(seen).toEqual([...ids].sort().reverse());
      });

      it('answers an empty page with no cursor for a user without threads', async () => {
        expect(await storage.threads.list(randomUUID(), { limit: 10 })).toEqual({ threads: [], nextCursor: null });
      });

      it('rejects a malformed thread cursor with VALIDATION_FAILED', async () => {
        const userId = randomUUID();
        for (const cursor of ['not a cursor!', 'e30', Buffer.from('{"u":"yesterday","i":"x"}').toString('base64url'), Buffer.from('[1]').toString('base64url')]) {
          expect(await codeOf(storage.threads.list(userId, { limit: 10, cursor }))).toBe('VALIDATION_FAILED');
        }
      });
    });

    describe('I12: a user sees and touches only their own rows', () => {
      it("I12: another user's thread, messages, run and memory are invisible and untouchable", async () => {
        const owner = randomUUID();
        const intruder = randomUUID();
        await storage.agents.create(newAgent(owner, 'helper'), at(0));
        const thread = await newThread(owner);
        await appendToHistory(storage, thread.id, [personSays()], { at: at(1) });
        const run = await storage.runs.create(newRun(owner, thread.id));
        const memory = await storage.memories.add({ userId: owner, agentId: 'helper' }, { id: randomUUID(), content: 'The secret word is pineapple', origin: { by: 'api' } }, at(2));

        expect(await storage.agents.get(intruder, 'helper')).toBeUndefined();
        expect(await storage.agents.list(intruder)).toEqual([]);
        expect(await storage.threads.get(intruder, thread.id)).toBeUndefined();
        expect((await storage.threads.list(intruder, { limit: 10 })).threads).toEqual([]);
        expect(await storage.runs.get(intruder, run.id)).toBeUndefined();
        expect(await storage.runs.listByThread(intruder, thread.id, { limit: 10 })).toEqual([]);
        expect(await storage.memories.search({ userId: intruder, agentId: 'helper' }, 'secret pineapple', { limit: 10 })).toEqual([]);
        expect((await storage.memories.list({ userId: intruder, agentId: 'helper' }, { limit: 10 })).memories).toEqual([]);
        expect(await storage.memories.delete(intruder, memory.id)).toBe(false);

        // Still there for the owner.
        expect(await storage.threads.get(owner, thread.id)).toMatchObject({ id: thread.id, messageCount: 1 });
        expect(await storage.runs.get(owner, run.id)).toEqual(run);
        expect((await storage.memories.list({ userId: owner, agentId: 'helper' }, { limit: 10 })).memories).toEqual([memory]);
      });
    });

    describe('history, written with the checkpoints', () => {
      it('numbers messages in thread order across checkpoints, and tells the run what it stored', async () => {
        const thread = await newThread(randomUUID());
        const first = await appendToHistory(storage, thread.id, [personSays(), agentSays('hi')], { at: at(1) });
        expect(first).toHaveLength(2);
        expect(first[1]!.seq).toBeGreaterThan(first[0]!.seq);
        expect(first.every((stored) => stored.threadId === thread.id)).toBe(true);
        const second = await appendToHistory(storage, thread.id, [personSays('again')], { at: at(2) });
        expect(second[0]!.seq).toBeGreaterThan(first[1]!.seq);
        expect(await appendToHistory(storage, thread.id, [], { at: at(3) })).toEqual([]);
        const all = await storage.threads.history(thread.userId, thread.id, { visibility: 'all', limit: 10 });
        expect(all.messages).toEqual([...first, ...second]);
      });

      it('hasMessagesOfRun and messagesOfRun: the messages a run added, for the owner only (I12)', async () => {
        const userId = randomUUID();
        const thread = await newThread(userId);
        const runId = randomUUID();
        expect(await storage.threads.hasMessagesOfRun(userId, thread.id, runId)).toBe(false);
        await appendToHistory(storage, thread.id, [personSays()], { at: at(1), runId: randomUUID() });
        expect(await storage.threads.hasMessagesOfRun(userId, thread.id, runId)).toBe(false);
        const added = await appendToHistory(storage, thread.id, [personSays('mine'), agentSays('yours')], { at: at(2), runId });
        expect(await storage.threads.hasMessagesOfRun(userId, thread.id, runId)).toBe(true);
        expect(await storage.threads.messagesOfRun(userId, thread.id, runId)).toEqual(added);
        expect(await storage.threads.hasMessagesOfRun(randomUUID(), thread.id, runId)).toBe(false);
        expect(await storage.threads.messagesOfRun(randomUUID(), thread.id, runId)).toEqual([]);
      });

      it('shows each message id once: a checkpoint holding the same messages again, or a message twice, adds nothing', async () => {
        const userId = randomUUID();
        const thread = await newThread(userId);
        const batch = [personSays(), agentSays('hi')];
        await appendToHistory(storage, thread.id, batch, { at: at(1) });
        const before = await storage.threads.get(userId, thread.id);
        // The same messages (copies with the same ids) put again: nothing new, not even the thread's place in the list.
        const copies = batch.map((message) => (message.getType() === 'human' ? new HumanMessage({ id: message.id!, content: message.content }) : agentSays('hi (edited)')));
        copies[1]!.id = batch[1]!.id;
        expect(await appendToHistory(storage, thread.id, copies, { at: at(5) })).toEqual([]);
        expect(await storage.threads.get(userId, thread.id)).toEqual(before);

        const fresh = personSays('new');
        const twice = new HumanMessage({ id: fresh.id!, content: 'new' });
        const stored = await appendToHistory(storage, thread.id, [fresh, twice], { at: at(6) });
        expect(stored.map((row) => row.id)).toEqual([fresh.id]);
        expect(await storage.threads.get(userId, thread.id)).toMatchObject({ messageCount: 3, updatedAt: at(6) });
        // History keeps the first version of an edited message.
        const page = await storage.threads.history(userId, thread.id, { visibility: 'all', limit: 10 });
        expect(page.messages.map((row) => row.content)).toEqual([batch[0]!.content, 'hi', 'new']);
      });

      it('a checkpoint of a thread id no thread has is stored, and moves no thread', async () => {
        const orphan = randomUUID();
        expect(await appendToHistory(storage, orphan, [personSays()], { at: at(1) })).toHaveLength(1);
        expect(await storage.threads.get(randomUUID(), orphan)).toBeUndefined();
        expect((await storage.checkpointer.getTuple({ configurable: { thread_id: orphan } }))?.checkpoint.channel_values.messages).toHaveLength(1);
      });

      it('I2: counters count visible messages only, and internal messages are never user activity', async () => {
        const userId = randomUUID();
        const thread = await newThread(userId, at(0));
        await appendToHistory(storage, thread.id, [personSays('Plan my week')], { at: at(1) });
        await appendToHistory(storage, thread.id, [agentSays('Sure.')], { at: at(2) });
        expect(await storage.threads.get(userId, thread.id)).toMatchObject({
          messageCount: 2,
          visibleCount: 2,
          lastVisiblePreview: 'Sure.',
          lastVisibleAt: at(2),
          lastUserActivityAt: at(1),
          updatedAt: at(2),
        });

        // A synthetic follow-up prompt (internal) and the agent's visible answer to it.
        await appendToHistory(storage, thread.id, [systemSays('Continue our conversation naturally.', 'question_unanswered'), agentSays('Any progress?')], { at: at(31) });
        expect(await storage.threads.get(userId, thread.id)).toMatchObject({
          messageCount: 4,
          visibleCount: 3,
          lastVisiblePreview: 'Any progress?',
          lastVisibleAt: at(31),
          lastUserActivityAt: at(1),
          updatedAt: at(31),
        });

        // Internal only: the preview stays on the last visible message.
        await appendToHistory(storage, thread.id, [systemSays('[internal] note')], { at: at(40) });
        expect(await storage.threads.get(userId, thread.id)).toMatchObject({
          messageCount: 5,
          visibleCount: 3,
          lastVisiblePreview: 'Any progress?',
          lastVisibleAt: at(31),
          lastUserActivityAt: at(1),
        });

        await appendToHistory(storage, thread.id, [personSays('Yes!')], { at: at(50) });
        expect(await storage.threads.get(userId, thread.id)).toMatchObject({ visibleCount: 4, lastVisiblePreview: 'Yes!', lastUserActivityAt: at(50) });
      });

      it('gives concurrent checkpoints of one thread unique numbers, each batch in order', async () => {
        const userId = randomUUID();
        const thread = await newThread(userId);
        const results = await Promise.all(Array.from({ length: 10 }, (_, index) => appendToHistory(storage, thread.id, [personSays(`question ${index}`), agentSays(`answer ${index}`)], { at: at(index) })));
        const seqs = results.flat().map((stored) => stored.seq);
        expect(new Set(seqs).size).toBe(20);
        for (const batch of results) expect(batch[1]!.seq).toBe(batch[0]!.seq + 1);
        expect(await storage.threads.get(userId, thread.id)).toMatchObject({ messageCount: 20, visibleCount: 20 });
        const all = await storage.threads.history(thread.userId, thread.id, { visibility: 'all', limit: 100 });
        expect(all.messages.map((stored) => stored.seq)).toEqual([...seqs].sort((a, b) => a - b));
      });
    });

    describe('history', () => {
      /** 12 messages: every third one internal; `seq[i]` is the number of the i-th. */
      async function threadWithHistory() {
        const thread = await newThread(randomUUID());
        const messages = Array.from({ length: 12 }, (_, index) => (index % 3 === 2 ? systemSays(`internal ${index}`) : personSays(`visible ${index}`)));
        const stored = [...(await appendToHistory(storage, thread.id, messages.slice(0, 5), { at: at(5) })), ...(await appendToHistory(storage, thread.id, messages.slice(5), { at: at(12) }))];
        return { ...thread, seq: stored.map((message) => message.seq) };
      }

      async function allPages(thread: { id: string; userId: string }, visibility: 'user' | 'all' | 'internal', limit: number) {
        const pages: StoredMessage[][] = [];
        let cursor: string | undefined;
        do {
          const page = await storage.threads.history(thread.userId, thread.id, { visibility, limit, cursor });
          pages.push(page.messages);
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        return pages;
      }

      it('pages all messages newest page first, oldest first within a page', async () => {
        const thread = await threadWithHistory();
        const pages = await allPages(thread, 'all', 5);
        const seq = (indexes: number[]) => indexes.map((index) => thread.seq[index]);
        expect(pages.map((page) => page.map((stored) => stored.seq))).toEqual([seq([7, 8, 9, 10, 11]), seq([2, 3, 4, 5, 6]), seq([0, 1])]);
      });

      it('I12: history answers nothing for another user, even with the right thread id', async () => {
        const thread = await threadWithHistory();
        expect(await storage.threads.history(randomUUID(), thread.id, { visibility: 'all', limit: 50 })).toEqual({ messages: [], nextCursor: null });
      });

      it('the internal view, bounded below by fromSeq, lists only internal messages', async () => {
        const thread = await threadWithHistory();
        const seq = (indexes: number[]) => indexes.map((index) => thread.seq[index]);
        expect((await allPages(thread, 'internal', 2)).flat().map((stored) => stored.seq)).toEqual(seq([8, 11, 2, 5]));
        const window = await storage.threads.history(thread.userId, thread.id, { visibility: 'internal', limit: 50, fromSeq: thread.seq[5] });
        expect(window.messages.map((stored) => stored.seq)).toEqual(seq([5, 8, 11]));
        expect(window.messages.every((stored) => stored.visibility === 'internal')).toBe(true);
      });

      it('I2: the user view hides internal messages on every page', async () => {
        const thread = await threadWithHistory();
        const pages = await allPages(thread, 'user', 3);
        const seq = (indexes: number[]) => indexes.map((index) => thread.seq[index]);
        expect(pages.map((page) => page.map((stored) => stored.seq))).toEqual([seq([7, 9, 10]), seq([3, 4, 6]), seq([0, 1])]);
        expect(pages.flat().every((stored) => stored.visibility === 'user')).toBe(true);
      });

      it('answers no cursor when the page reaches the start exactly, and an empty thread', async () => {
        const thread = await threadWithHistory();
        const whole = await storage.threads.history(thread.userId, thread.id, { visibility: 'all', limit: 12 });
        expect(whole.messages).toHaveLength(12);
        expect(whole.nextCursor).toBeNull();
        const empty = await newThread(randomUUID());
        expect(await storage.threads.history(empty.userId, empty.id, { visibility: 'user', limit: 10 })).toEqual({ messages: [], nextCursor: null });
      });

      it('rejects a malformed cursor with VALIDATION_FAILED', async () => {
        const thread = await threadWithHistory();
        const threadCursor = Buffer.from(JSON.stringify({ u: at(0), i: 'x' })).toString('base64url');
        const bad = ['%%%', 'bm90IGpzb24', Buffer.from('{"s":-1}').toString('base64url'), Buffer.from('{"s":"3"}').toString('base64url'), threadCursor, ''];
        for (const cursor of bad) {
          expect(await codeOf(storage.threads.history(thread.userId, thread.id, { visibility: 'all', limit: 5, cursor }))).toBe('VALIDATION_FAILED');
        }
      });
    });

    describe('I3: metadata survives history', () => {
      it('I3: string and multimodal content and nested additional_kwargs come back bit for bit, tool calls as their redacted view', async () => {
        const thread = await newThread(randomUUID());
        const kwargs = {
          synthetic: true,
          trigger_type: 'question_unanswered',
          trigger_reason: 'silence after a question — 3 h',
          nested: { list: [1, 'two', { three: [null, false, 0.5] }], empty: {}, emptyList: [] },
          unicode: 'Grüße 👋🏽 日本語 \u0000 "quoted" \\ back',
          zKeyFirst: 1,
          aKeySecond: 2,
        };
        const multimodal = [
          { type: 'text', text: 'What is in this picture? 🤔' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
        ];
        const runId = randomUUID();
        const input = [
          personSays('Plain text with ünïcödé and emoji 🎉\nand a newline', kwargs),
          personSays(multimodal, { synthetic: false }),
          new AIMessage({
            id: randomUUID(),
            content: '',
            tool_calls: [{ id: 'call_1', name: 'lookup', args: { q: 'x', api_key: 'sk-secret-value-1234567890' } }],
            response_metadata: { model: 'demo', usage: { input_tokens: 3 } },
          }),
        ];
        const stored = await appendToHistory(storage, thread.id, input, { at: at(1), runId });
        const page = await storage.threads.history(thread.userId, thread.id, { visibility: 'all', limit: 10 });
        expect(page.messages).toEqual(stored);
        page.messages.forEach((copy, index) => {
          const original = input[index]!;
          const expected = projectMessage(original, runId, at(1)).row;
          expect(copy.content).toStrictEqual(original.content);
          expect(copy.additionalKwargs).toStrictEqual(expected.additionalKwargs);
          expect(JSON.stringify(copy.additionalKwargs)).toBe(JSON.stringify(expected.additionalKwargs));
          expect(copy.responseMetadata).toStrictEqual(original.response_metadata);
          expect(copy).toMatchObject({ id: original.id, type: original.getType(), visibility: expected.visibility, runId, createdAt: at(1) });
        });
        expect(page.messages[0]!).toMatchObject({ visibility: 'internal' });
        expect(JSON.stringify(page.messages[0]!.additionalKwargs)).toBe(JSON.stringify(kwargs));
        expect(page.messages[1]!).toMatchObject({ visibility: 'user', additionalKwargs: { synthetic: false } });
        // History shows a tool call's redacted view, never the raw arguments.
        expect(JSON.stringify(page.messages[2]!.additionalKwargs)).not.toContain('sk-secret-value');
      });
    });

    describe('I3: metadata survives the checkpointer', () => {
      it('I3: a checkpoint on the same backend restores messages with their additional_kwargs', async () => {
        const kwargs = { synthetic: true, trigger_type: 'check_in', trigger_reason: 'idle 2 h — ✓', nested: { z: [1, { y: null }], a: '日本' } };
        const messages = [new HumanMessage({ id: randomUUID(), content: 'Continue our conversation naturally.', additional_kwargs: kwargs }), new AIMessage({ id: randomUUID(), content: [{ type: 'text', text: 'Hi 👋' }] })];
        const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { messages }, channel_versions: { messages: 1 } };
        const config = { configurable: { thread_id: randomUUID(), checkpoint_ns: '' } };
        const saved = await storage.checkpointer.put(config, checkpoint, { source: 'loop', step: 0, parents: {} }, { messages: 1 });
        const restored = (await storage.checkpointer.getTuple(saved))?.checkpoint.channel_values.messages as HumanMessage[];
        expect(HumanMessage.isInstance(restored[0])).toBe(true);
        expect(restored[0]!.additional_kwargs).toStrictEqual(kwargs);
        expect(JSON.stringify(restored[0]!.additional_kwargs)).toBe(JSON.stringify(kwargs));
        expect(restored[1]!.content).toStrictEqual(messages[1]!.content);
      });
    });

    describe('runs', () => {
      it('creates, finishes, gets and lists runs by thread', async () => {
        const userId = randomUUID();
        const thread = await newThread(userId);
        const input = newRun(userId, thread.id, { trigger: 'cron', startedAt: at(1) });
        const created = await storage.runs.create(input);
        expect(created).toEqual({ ...input, status: 'running', reason: null, errorCode: null, errorMessage: null, endedAt: null, modelInputs: [] });
        expect(await storage.runs.get(userId, created.id)).toEqual(created);

        const finished = await storage.runs.finish(created.id, { status: 'failed', reason: 'step bound', errorCode: 'MODEL_ERROR', errorMessage: 'boom', endedAt: at(2) });
        expect(finished).toEqual({ ...created, status: 'failed', reason: 'step bound', errorCode: 'MODEL_ERROR', errorMessage: 'boom', endedAt: at(2) });
        // The first end wins.
        expect(await storage.runs.finish(created.id, { status: 'cancelled', endedAt: at(3) })).toEqual(finished);
        expect(await storage.runs.get(userId, created.id)).toEqual(finished);

        const later = await storage.runs.create(newRun(userId, thread.id, { startedAt: at(5) }));
        // What the run's model calls received is written with its end, and read back as written.
        const modelInputs = [
          {
            at: at(5),
            model: 'demo',
            inputTokens: 120,
            inputLimit: 30_000,
            systemTokens: 40,
            envelopeTokens: null,
            summary: { tokens: 30, coveredMessages: 12, lastMessageId: 'm-12' },
            window: { count: 3, tokens: 50, firstMessageId: 'm-13', lastMessageId: 'm-15', summarized: 12, trimmed: 0, cut: false, mediaReplaced: 0 },
          },
        ];
        const succeeded = await storage.runs.finish(later.id, { status: 'succeeded', endedAt: at(6), modelInputs });
        expect(succeeded).toMatchObject({ status: 'succeeded', reason: null, errorCode: null, errorMessage: null, endedAt: at(6), modelInputs });
        await storage.runs.create(newRun(userId, (await newThread(userId)).id));

        expect(await storage.runs.listByThread(userId, thread.id, { limit: 10 })).toEqual([succeeded, finished]);
        expect(await storage.runs.listByThread(userId, thread.id, { limit: 1 })).toEqual([succeeded]);
      });

      it('fails to finish an unknown run with RUN_NOT_FOUND', async () => {
        expect(await codeOf(storage.runs.finish(randomUUID(), { status: 'succeeded', endedAt: at(1) }))).toBe('RUN_NOT_FOUND');
      });

      describe('I3: meta, stored without the core keys its columns hold', () => {
        const db = () => (storage as unknown as SqlStorage).context.db;
        /** The meta column and its flag as stored, read without the repository. */
        async function storedMeta(runId: string) {
          const row = await db().selectFrom('runs').select(['meta', 'meta_core_omitted']).where('id', '=', runId).executeTakeFirstOrThrow();
          return { meta: row.meta, coreOmitted: Number(row.meta_core_omitted) };
        }
        /** Every read path answers `meta` exactly: same keys, values and key order (toEqual ignores order). */
        async function expectReadsExactly(userId: string, run: NewRun, meta: Record<string, unknown>) {
          const exactly = JSON.stringify(meta);
          expect(JSON.stringify((await storage.runs.get(userId, run.id))?.meta)).toBe(exactly);
          const listed = await storage.runs.listByThread(userId, run.threadId, { limit: 100 });
          expect(JSON.stringify(listed.find((record) => record.id === run.id)?.meta)).toBe(exactly);
          const running = await storage.runs.listRunning({ startedBefore: '2001-01-02T00:00:00.000Z', limit: 1_000 });
          expect(JSON.stringify(running.find((record) => record.id === run.id)?.meta)).toBe(exactly);
          expect(JSON.stringify((await storage.runs.finish(run.id, { status: 'succeeded', endedAt: at(1) })).meta)).toBe(exactly);
          expect(JSON.stringify((await storage.runs.get(userId, run.id))?.meta)).toBe(exactly);
        }
        /** A run started long before the other cases' runs, so listRunning finds it. */
        function earlyRun(userId: string, threadId: string, overrides: Partial<NewRun>): NewRun {
          return newRun(userId, threadId, { requestedAt: '2001-01-01T00:00:00.123Z', startedAt: '2001-01-01T00:00:01.000Z', ...overrides });
        }

        it('comes back exactly for a user run, a cron run, a webhook run and a follow-up, and the column holds only the other keys', async () => {
          const userId = randomUUID();
          const thread = await newThread(userId);
          const cases: Array<{ context: Pick<RunContext, 'trigger' | 'meta'>; rest: Record<string, unknown> }> = [
            { context: { trigger: 'user', meta: {} }, rest: {} },
            {
              context: { trigger: 'cron', meta: { fire_id: 'fire-1', schedule_id: 'schedule-1', scheduled_for_utc: '2001-01-01T00:00:00Z' } },
              // In the schema's order, as the meta has it.
              rest: { schedule_id: 'schedule-1', fire_id: 'fire-1', scheduled_for_utc: '2001-01-01T00:00:00Z' },
            },
            {
              context: { trigger: 'webhook', meta: { hook_id: 'hook-1', delivery_id: 'delivery-1', payload: { zeta: 'last?', alpha: 1, mid: null } } },
              rest: { hook_id: 'hook-1', delivery_id: 'delivery-1', payload: { zeta: 'last?', alpha: 1, mid: null } },
            },
            { context: { trigger: 'autonomy', meta: { trigger_type: 'question_unanswered', trigger_reason: 'no answer for 2 h', timer_id: 'timer-1' } }, rest: { trigger_type: 'question_unanswered', trigger_reason: 'no answer for 2 h', timer_id: 'timer-1' } },
          ];
          for (const { context, rest } of cases) {
            const run = earlyRun(userId, thread.id, { trigger: context.trigger });
            const meta = runMetaOf({ ...context, runId: run.id, requestedAt: run.requestedAt, correlationId: run.correlationId });
            expect(Object.keys(meta).slice(0, 4)).toEqual(['trigger', 'run_id', 'requested_at_utc', 'correlation_id']);
            const created = await storage.runs.create({ ...run, meta });
            expect(JSON.stringify(created.meta)).toBe(JSON.stringify(meta));
            // The row holds the keys the columns do not: the core keys are rebuilt on read.
            expect(await storedMeta(run.id)).toEqual({ meta: JSON.stringify(rest), coreOmitted: 1 });
            await expectReadsExactly(userId, run, meta);
          }
        });

        it('is stored whole when its core keys could not be rebuilt from the columns, and comes back exactly', async () => {
          const userId = randomUUID();
          const thread = await newThread(userId);
          const odd: Array<(run: NewRun) => Record<string, unknown>> = [
            // A core key that differs from its column.
            (run) => ({ trigger: 'user', run_id: 'another-run', requested_at_utc: run.requestedAt, correlation_id: run.correlationId }),
            (run) => ({ trigger: 'cron', run_id: run.id, requested_at_utc: run.requestedAt, correlation_id: run.correlationId }),
            (run) => ({ trigger: 'user', run_id: run.id, requested_at_utc: '2001-01-01T00:00:00.123+00:00', correlation_id: run.correlationId }),
            (run) => ({ trigger: 'user', run_id: run.id, requested_at_utc: run.requestedAt, correlation_id: 42 }),
            // Core keys not first, or not in the order a read would put them.
            (run) => ({ source: 'test', trigger: 'user', run_id: run.id, requested_at_utc: run.requestedAt, correlation_id: run.correlationId }),
            (run) => ({ run_id: run.id, trigger: 'user', requested_at_utc: run.requestedAt, correlation_id: run.correlationId }),
            // An integer-like key always comes first in an object.
            (run) => ({ trigger: 'user', run_id: run.id, requested_at_utc: run.requestedAt, correlation_id: run.correlationId, 7: 'seven' }),
            // Some core keys only, none, or nothing.
            (run) => ({ trigger: 'user', run_id: run.id }),
            () => ({ source: 'test', nested: { n: 1 } }),
            () => ({}),
          ];
          for (const metaOf of odd) {
            const run = earlyRun(userId, thread.id, {});
            const meta = metaOf(run);
            const created = await storage.runs.create({ ...run, meta });
            expect(JSON.stringify(created.meta)).toBe(JSON.stringify(meta));
            expect(await storedMeta(run.id)).toEqual({ meta: JSON.stringify(meta), coreOmitted: 0 });
            await expectReadsExactly(userId, run, meta);
          }
        });

        it('reads a run written before the core keys were left out (its whole meta, no flag) as before', async () => {
          const userId = randomUUID();
          const thread = await newThread(userId);
          const rows = [
            // As every run was written: the core keys first, copies of the columns.
            (id: string, correlationId: string) => ({ trigger: 'cron', run_id: id, requested_at_utc: '2001-01-01T00:00:00.123Z', correlation_id: correlationId, schedule_id: 's', fire_id: 'f', scheduled_for_utc: '2001-01-01T00:00:00Z' }),
            (id: string, correlationId: string) => ({ note: 'first', trigger: 'cron', run_id: id, correlation_id: correlationId }),
          ];
          for (const metaOf of rows) {
            const run = earlyRun(userId, thread.id, { trigger: 'cron' });
            const meta = metaOf(run.id, run.correlationId);
            // The INSERT the repository made before this change: no meta_core_omitted, left to its default.
            await sql`INSERT INTO runs (id, thread_id, user_id, agent_id, trigger, meta, correlation_id, status, reason, error_code, error_message, model, requested_at, started_at, ended_at)
              VALUES (${run.id}, ${run.threadId}, ${run.userId}, ${run.agentId}, ${run.trigger}, ${JSON.stringify(meta)}, ${run.correlationId}, 'running', NULL, NULL, NULL, ${run.model}, ${run.requestedAt}, ${run.startedAt}, NULL)`.execute(db());
            expect(await storedMeta(run.id)).toEqual({ meta: JSON.stringify(meta), coreOmitted: 0 });
            await expectReadsExactly(userId, run, meta);
          }
        });
      });
    });

    describe('memories', () => {
      it('adds, lists newest first, and deletes only once', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const first = await storage.memories.add(namespace, { id: randomUUID(), content: 'Likes green tea', origin: { by: 'api' } }, at(1));
        expect(first).toEqual({ id: first.id, ...namespace, content: 'Likes green tea', createdAt: at(1), updatedAt: at(1), origin: { by: 'api' } });
        const second = await storage.memories.add(namespace, { id: randomUUID(), content: 'Lives in Lisbon', origin: { by: 'api' } }, at(2));
        expect((await storage.memories.list(namespace, { limit: 10 })).memories).toEqual([second, first]);
        expect((await storage.memories.list(namespace, { limit: 1 })).memories).toEqual([second]);

        expect(await storage.memories.delete(namespace.userId, first.id)).toBe(true);
        expect(await storage.memories.delete(namespace.userId, first.id)).toBe(false);
        expect((await storage.memories.list(namespace, { limit: 10 })).memories).toEqual([second]);
        expect(await storage.memories.search(namespace, 'green tea', { limit: 10 })).toEqual([]);
      });

      it('pages back through all of a namespace’s memories with an opaque cursor, each once, those of one millisecond too', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const add = (content: string, minute: number) => storage.memories.add(namespace, { id: randomUUID(), content, origin: { by: 'api' } }, at(minute));
        const oldest = await add('oldest', 1);
        // Three written in the same millisecond: the id orders them, and a page may end between them.
        const same = [await add('same a', 2), await add('same b', 2), await add('same c', 2)].sort((a, b) => (a.id < b.id ? 1 : -1));
        const newest = await add('newest', 3);
        // A replace keeps the memory's place (its creation time), so a client paging meanwhile misses nothing.
        const replaced = (await storage.memories.put(namespace, { id: oldest.id, content: 'oldest, rewritten', origin: { by: 'api' } }, at(4)))!;

        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await storage.memories.list(namespace, { limit: 2, cursor });
          expect(page.memories.length).toBeLessThanOrEqual(2);
          seen.push(...page.memories.map((memory) => memory.id));
          cursor = page.nextCursor ?? undefined;
          pages++;
        } while (cursor !== undefined);
        expect(pages).toBe(3);
        expect(seen).toEqual([newest, ...same, replaced].map((memory) => memory.id));
        // The last page says so: a full last page has no cursor either.
        expect((await storage.memories.list(namespace, { limit: 5 })).nextCursor).toBeNull();
        expect(await storage.memories.list({ userId: randomUUID(), agentId: 'helper' }, { limit: 10 })).toEqual({ memories: [], nextCursor: null });
      });

      it("I12: a memory cursor used in another user's or agent's namespace shows only that namespace's memories", async () => {
        const mine = { userId: randomUUID(), agentId: 'helper' };
        for (let minute = 1; minute <= 3; minute++) await storage.memories.add(mine, { id: randomUUID(), content: `mine ${minute}`, origin: { by: 'api' } }, at(minute));
        const theirs = { userId: randomUUID(), agentId: 'helper' };
        const older = await storage.memories.add(theirs, { id: randomUUID(), content: 'theirs, older', origin: { by: 'api' } }, at(0));
        await storage.memories.add(theirs, { id: randomUUID(), content: 'theirs, newer', origin: { by: 'api' } }, at(5));
        const { nextCursor } = await storage.memories.list(mine, { limit: 1 });
        expect(nextCursor).toEqual(expect.any(String));
        // The cursor is a position in time, not a key to the namespace it came from.
        expect((await storage.memories.list(theirs, { limit: 10, cursor: nextCursor! })).memories).toEqual([older]);
        expect((await storage.memories.list({ ...mine, agentId: 'other-agent' }, { limit: 10, cursor: nextCursor! })).memories).toEqual([]);
      });

      it('I11: rejects a memory cursor vigil did not give (a thread cursor included) with VALIDATION_FAILED', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        await storage.memories.add(namespace, { id: randomUUID(), content: 'something', origin: { by: 'api' } }, at(1));
        const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
        const threadCursor = forge({ u: at(1), i: 'x' });
        for (const cursor of ['not a cursor!', 'e30', forge({ m: 'yesterday', i: 'x' }), forge({ m: at(1) }), forge({ m: at(1), i: 7 }), forge({ m: '0000-01-01T00:00:00.000Z', i: 'x' }), forge({ m: at(1), i: 'x\u0000' }), forge([1]), threadCursor]) {
          expect(await codeOf(storage.memories.list(namespace, { limit: 10, cursor })), cursor).toBe('VALIDATION_FAILED');
        }
      });

      it('gets a memory by id within its namespace however old it is; another agent or user gets none (I12)', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const oldest = await storage.memories.add(namespace, { id: randomUUID(), content: 'The first thing said', origin: { by: 'api' } }, at(1));
        for (let minute = 2; minute < 6; minute++) await storage.memories.add(namespace, { id: randomUUID(), content: `later ${minute}`, origin: { by: 'api' } }, at(minute));
        expect((await storage.memories.list(namespace, { limit: 4 })).memories).not.toContainEqual(oldest);
        expect(await storage.memories.get(namespace, oldest.id)).toEqual(oldest);
        expect(await storage.memories.get({ ...namespace, agentId: 'other-agent' }, oldest.id)).toBeUndefined();
        expect(await storage.memories.get({ ...namespace, userId: randomUUID() }, oldest.id)).toBeUndefined();
        expect(await storage.memories.get(namespace, randomUUID())).toBeUndefined();
        await storage.memories.delete(namespace.userId, oldest.id);
        expect(await storage.memories.get(namespace, oldest.id)).toBeUndefined();
      });

      it("put adds a memory or replaces the namespace's memory with its id in one write (re-indexed for search); another namespace's id is left untouched", async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const id = randomUUID();
        const added = await storage.memories.put(namespace, { id, content: 'Keeps bees in the garden', origin: { by: 'agent', runId: 'run-1', threadId: 'thread-1' } }, at(1));
        expect(added).toEqual({ id, ...namespace, content: 'Keeps bees in the garden', createdAt: at(1), updatedAt: at(1), origin: { by: 'agent', runId: 'run-1', threadId: 'thread-1' } });
        // A replace keeps the creation time and moves the update time (the LangGraph store's item semantics).
        const replaced = await storage.memories.put(namespace, { id, content: 'Keeps goats on the hill', origin: { by: 'api' } }, at(2));
        expect(replaced).toEqual({ id, ...namespace, content: 'Keeps goats on the hill', createdAt: at(1), updatedAt: at(2), origin: { by: 'api' } });
        expect((await storage.memories.list(namespace, { limit: 10 })).memories).toEqual([replaced]);
        expect(await storage.memories.search(namespace, 'bees', { limit: 10 })).toEqual([]);
        expect((await storage.memories.search(namespace, 'goats', { limit: 10 })).map((hit) => hit.id)).toEqual([id]);
        // The id under another agent of the user, or under another user: refused, the memory untouched.
        for (const other of [{ ...namespace, agentId: 'other-agent' }, { ...namespace, userId: randomUUID() }]) {
          expect(await storage.memories.put(other, { id, content: 'Taken over', origin: { by: 'api' } }, at(3))).toBeUndefined();
          expect((await storage.memories.list(other, { limit: 10 })).memories).toEqual([]);
        }
        expect(await storage.memories.get(namespace, id)).toEqual(replaced);
      });

      it('keeps who wrote each memory: the API, or the agent in a run and thread (listed and found with it)', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const noted = await storage.memories.add(namespace, { id: randomUUID(), content: 'Prefers answers in German', origin: { by: 'agent', runId: 'run-7', threadId: 'thread-3' } }, at(1));
        const told = await storage.memories.add(namespace, { id: randomUUID(), content: 'Works night shifts in German hospitals', origin: { by: 'api' } }, at(2));
        expect(noted.origin).toEqual({ by: 'agent', runId: 'run-7', threadId: 'thread-3' });
        expect((await storage.memories.list(namespace, { limit: 10 })).memories.map((memory) => memory.origin)).toEqual([{ by: 'api' }, { by: 'agent', runId: 'run-7', threadId: 'thread-3' }]);
        const hits = await storage.memories.search(namespace, 'German', { limit: 10 });
        expect(new Map(hits.map((hit) => [hit.id, hit.origin]))).toEqual(new Map([[noted.id, noted.origin], [told.id, told.origin]]));
      });

      it('ranks the most relevant memory first', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const add = (content: string, minute: number) => storage.memories.add(namespace, { id: randomUUID(), content, origin: { by: 'api' } }, at(minute));
        const rex = await add('My dog is called Rex and he loves the beach', 1);
        await add('I like pizza on Fridays', 2);
        const park = await add('The dog park near my house opens at nine', 3);
        await add('My favourite colour is blue', 4);

        const hits = await storage.memories.search(namespace, "What is my dog's name? Is it Rex?", { limit: 10 });
        expect(hits[0]?.id).toBe(rex.id);
        expect(hits.map((hit) => hit.id)).toContain(park.id);
        expect(hits[0]!.score).toBeGreaterThan(hits.find((hit) => hit.id === park.id)!.score);
        expect(hits.every((hit) => typeof hit.score === 'number' && Number.isFinite(hit.score))).toBe(true);
        expect(hits[0]).toEqual({ ...rex, score: hits[0]!.score });

        expect(await storage.memories.search(namespace, 'dogs', { limit: 1 })).toHaveLength(1);
        expect(await storage.memories.search(namespace, 'submarine', { limit: 10 })).toEqual([]);
      });

      it('finds a memory by an email address, URL, path, version or decimal searched as it is written in it', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const add = (content: string, minute: number) => storage.memories.add(namespace, { id: randomUUID(), content, origin: { by: 'api' } }, at(minute));
        const written = [
          [await add('Send the invoices to alice@example.com', 1), 'alice@example.com'],
          [await add('The docs live at https://vigil.dev/docs/setup', 2), 'https://vigil.dev/docs/setup'],
          [await add('The staging host is build.example.org', 3), 'build.example.org'],
          [await add('Node is installed at /usr/local/bin/node', 4), '/usr/local/bin/node'],
          [await add('We pinned the SDK to v1.2.3 last week', 5), 'v1.2.3'],
          [await add('The tolerance is 0.25 millimetres', 6), '0.25'],
        ] as const;
        await add('Nothing to see here', 7);
        for (const [memory, query] of written) {
          expect((await storage.memories.search(namespace, query, { limit: 10 })).map((hit) => hit.id), query).toContain(memory.id);
          // Asked in a sentence too, as the recall before an answer asks.
          expect((await storage.memories.search(namespace, `what about ${query}?`, { limit: 10 })).map((hit) => hit.id), query).toContain(memory.id);
        }
      });

      it('finds a memory by a part of an email address, URL, host, path or version, as a word of its own', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const add = (content: string, minute: number) => storage.memories.add(namespace, { id: randomUUID(), content, origin: { by: 'api' } }, at(minute));
        const email = await add('Send the invoices to alice@example.com', 1);
        const url = await add('The docs live at https://vigil.dev/docs/setup?lang=pt', 2);
        const host = await add('The staging host is build.example.org', 3);
        const path = await add('Node is installed at /usr/local/bin/node', 4);
        const version = await add('We ship v1.2.3-beta on Friday', 5);
        const snake = await add('The column is called retry_after_seconds', 6);
        await add('Nothing to see here', 7);
        const found = async (query: string) => (await storage.memories.search(namespace, query, { limit: 10 })).map((hit) => hit.id);
        for (const [memory, queries] of [
          [email, ['alice', 'Who is alice?']],
          [url, ['setup', 'vigil', 'lang']],
          [host, ['staging build']],
          [path, ['local bin']],
          [version, ['1.2.3', 'beta', 'v1']],
          [snake, ['retry', 'seconds']],
        ] as const) {
          for (const query of queries) expect(await found(query), query).toContain(memory.id);
        }
        // The parts of a compound match its memory, not the others.
        expect(await found('alice')).toEqual([email.id]);
        expect(await found('beta')).toEqual([version.id]);
        // The memory holding more of a compound's words ranks first.
        expect((await found('alice@example.com'))[0]).toBe(email.id);
      });

      it('finds a memory whatever the accents of its Latin letters, in the memory or in the query', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const add = (content: string, minute: number) => storage.memories.add(namespace, { id: randomUUID(), content, origin: { by: 'api' } }, at(minute));
        const cafe = await add('Meets friends at the café on Mondays', 1);
        const plain = await add('The cafe near the station opens early', 2);
        // "é" written as "e" and a combining acute (U+0301), as some keyboards and pastes send it.
        const decomposed = await add('Ordered a cre\u0300me bru\u0302le\u0301e for dessert', 3);
        const zurich = await add('Flies to Zürich in March', 4);
        const russian = await add('мои книги на полке', 5);
        const found = async (query: string) => new Set((await storage.memories.search(namespace, query, { limit: 10 })).map((hit) => hit.id));
        expect(await found('cafe')).toEqual(new Set([cafe.id, plain.id]));
        expect(await found('café')).toEqual(new Set([cafe.id, plain.id]));
        expect(await found('CAFÉ')).toEqual(new Set([cafe.id, plain.id]));
        expect(await found('creme brulee')).toEqual(new Set([decomposed.id]));
        expect(await found('crème brûlée')).toEqual(new Set([decomposed.id]));
        expect(await found('zurich')).toEqual(new Set([zurich.id]));
        expect(await found('ZÜRICH')).toEqual(new Set([zurich.id]));
        // Only Latin letters lose their accents: Cyrillic "й" is a letter of its own, not "и".
        expect(await found('книги')).toEqual(new Set([russian.id]));
        expect(await found('мои')).toEqual(new Set([russian.id]));
        expect(await found('мой')).toEqual(new Set());
      });

      it('finds a memory by a query of stop words alone', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        const add = (content: string, minute: number) => storage.memories.add(namespace, { id: randomUUID(), content, origin: { by: 'api' } }, at(minute));
        const mat = await add('The cat sat on the mat', 1);
        const you = await add('You are kind to strangers', 2);
        await add('Walks dogs daily', 3);
        const found = async (query: string) => new Set((await storage.memories.search(namespace, query, { limit: 10 })).map((hit) => hit.id));
        expect(await found('the')).toEqual(new Set([mat.id]));
        expect(await found('the a of')).toEqual(new Set([mat.id]));
        expect(await found('Who are you?')).toEqual(new Set([you.id]));
      });

      it('searches strictly within the (user, agent) namespace', async () => {
        const userId = randomUUID();
        const mine = { userId, agentId: 'helper' };
        await storage.memories.add(mine, { id: randomUUID(), content: 'Allergic to peanuts', origin: { by: 'api' } }, at(1));
        await storage.memories.add({ userId, agentId: 'other-agent' }, { id: randomUUID(), content: 'Allergic to peanuts and shellfish', origin: { by: 'api' } }, at(1));
        await storage.memories.add({ userId: randomUUID(), agentId: 'helper' }, { id: randomUUID(), content: 'Allergic to peanuts too', origin: { by: 'api' } }, at(1));
        const hits = await storage.memories.search(mine, 'peanuts allergy', { limit: 10 });
        expect(hits.map((hit) => hit.content)).toEqual(['Allergic to peanuts']);
      });

      it('never throws on punctuation or full-text syntax in a query', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        await storage.memories.add(namespace, { id: randomUUID(), content: 'foo and bar are placeholders; NEAR the OR gate', origin: { by: 'api' } }, at(1));
        const queries = [
          '"foo" OR (bar* NEAR',
          'NEAR(foo bar, 2)',
          'foo AND NOT bar',
          '-foo +bar ^baz',
          "it's a 'quoted' \"string\"",
          'a:b & c | !d <-> e',
          'column:content foo',
          '***',
          '()',
          '"',
          "'",
          '\\',
          'ünïcödé 日本語 👋🏽',
          '\u0301 combining mark first',
          'x'.repeat(5000),
          'OR',
          'the a of',
          'foo'.concat(' bar'.repeat(500)),
        ];
        for (const query of queries) {
          const hits = await storage.memories.search(namespace, query, { limit: 5 });
          expect(Array.isArray(hits)).toBe(true);
        }
        expect((await storage.memories.search(namespace, '"foo" OR (bar* NEAR', { limit: 5 })).length).toBe(1);
      });

      it('answers [] for a query with no usable words', async () => {
        const namespace = { userId: randomUUID(), agentId: 'helper' };
        await storage.memories.add(namespace, { id: randomUUID(), content: 'Something to find', origin: { by: 'api' } }, at(1));
        for (const query of ['', '   ', '?!', '...', '🙂']) {
          expect(await storage.memories.search(namespace, query, { limit: 5 })).toEqual([]);
        }
      });
    });

    describe('lifecycle', () => {
      it('pings', async () => {
        await expect(storage.ping()).resolves.toBeUndefined();
      });

      it('reopens the same database without migrating twice, and keeps the data', async () => {
        const userId = randomUUID();
        const agent = await storage.agents.create(newAgent(userId), at(1));
        const again = await open();
        try {
          expect(await again.agents.get(userId, agent.id)).toEqual(agent);
        } finally {
          await again.close();
        }
      });

      it('I11: a webhook delivery is forgotten only by the attempt that holds it: one a retry took over stays recorded', async () => {
        const hooks = new SqlHookRepository((storage as unknown as SqlStorage).context);
        const userId = randomUUID();
        const hook = await hooks.create({ id: randomUUID(), userId, agentId: 'agent', threadId: null, name: 'h', taskTemplate: 'do {{payload}}', payloadFields: null, secretCiphertext: 'sealed' }, at(0));
        expect(await hooks.recordDelivery({ hookId: hook.id, deliveryId: 'd-1', runId: 'first', receivedAt: at(1) })).toBe(true);
        expect(await hooks.takeOverDelivery(hook.id, 'd-1', 'first', { runId: 'retry', receivedAt: at(2) })).toBe(true);
        // The first attempt, late, forgets what it thinks is its own.
        await hooks.forgetDelivery(hook.id, 'd-1', 'first');
        expect(await hooks.getDelivery(hook.id, 'd-1')).toMatchObject({ runId: 'retry' });
        await hooks.forgetDelivery(hook.id, 'd-1', 'retry');
        expect(await hooks.getDelivery(hook.id, 'd-1')).toBeUndefined();
      });

      it('closes idempotently', async () => {
        const another = await open();
        await another.ping();
        await Promise.all([another.close(), another.close()]);
        await another.close();
        await expect(another.ping()).rejects.toThrow();
      });
    });
  });
}
