/**
 * Crash safety as a test, not a claim (issue 9, item 13). The real server process
 * (`vigil serve` on the demo model, streaming slowly so a kill lands mid-reply) serves
 * 30 runs across 6 threads of one user — person messages as SSE, JSON and WebSocket,
 * signed webhook deliveries (answered 202), and idle follow-ups that come due while
 * other threads talk. It is killed with SIGKILL at seeded random points — during a
 * reply's streaming (after some tokens, or at a random event of its stream), right
 * after a webhook's 202, and during a follow-up's fire — and whatever else was in
 * flight then (other threads' follow-ups, a webhook's run) dies with it. Each time it
 * is restarted on the same database and the runs go on. At the end (after the last
 * restart, once every due follow-up has fired) the API must show:
 * - every message the API accepted exactly once (by content and by the id it returned);
 *   a message whose request the kill cut short at most once;
 * - every thread, its history and the thread list readable;
 * - every fired follow-up once: one synthetic prompt, at most one reply (exactly one
 *   when its run succeeded), no due timer left pending, no fire left running (I7);
 * - no follow-up fired after a person's later message (I6).
 *
 * The seed is printed; CRASH_SEED=<n> replays a run of the test with the same choices
 * (the kill points are events, not times, so a replay takes the same path as far as
 * the server's own timing allows).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { signedHeaders } from '../helpers/webhook-signing.js';
import { PROCESS_ENDED_REASON } from '../../src/app/runs/orphaned-run-sweeper.js';
import { followUpMessageId } from '../../src/domain/autonomy/timer.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { parseSse } from '../helpers/test-server.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { waitFor } from '../helpers/wait-for.js';
import { seededRandom } from '../helpers/seeded-random.js';

type Json = Record<string, any>;
type Environment = () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>;

const THREADS = 6;
const RUNS = 30;
/** Threads 0, 2 and 4 talk to an agent with quick follow-ups; 1, 3 and 5 to one without. */
const FOLLOWER_THREADS = [0, 2, 4];
const FOLLOW_UP_DELAY_MS = 300;
/** Slow enough that a kill lands mid-reply (a demo reply is about 15 tokens). */
const TOKEN_DELAY_MS = '10';

/** One message the test sent, and what the API said about it. */
interface Sent {
  run: number;
  threadIndex: number;
  content: string;
  via: 'sse' | 'json' | 'websocket' | 'webhook';
  /** The API acknowledged it (a 2xx answer, or its own message.end event): it must be in history once. */
  accepted: boolean;
  /** The id the API gave it, when it gave one. */
  id?: string;
  /** The run a webhook's 202 named: the run that stored the delivery's task. */
  runId?: string;
}

/** Where a run is killed: while its reply streams (after some tokens, or at a random event of its stream), or right after a webhook's 202. */
type KillKind = 'streaming' | 'after-202';
type StreamKill = { kind: 'mid-stream' | 'random-event'; after: number };

export function crashSafetySuite(environment: Environment, recoveryTimeoutMs: number): void {
  const seed = Number(process.env.CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const random = seededRandom(seed);
  const pick = (count: number) => Math.floor(random() * count);

  let place: { env: Record<string, string>; cleanup: () => Promise<void> };
  let dataDir: string;
  let server: ServerProcess | undefined;
  const sent: Sent[] = [];
  const kills: string[] = [];
  let threadIds: string[] = [];

  beforeAll(async () => {
    // Printed first, so a failure can be replayed with CRASH_SEED.
    console.log(`crash-safety seed: ${seed} (replay with CRASH_SEED=${seed})`);
    dataDir = await makeTempDir('vigil-e2e-crash-');
    place = await environment();
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await place?.cleanup();
    await removeTempDir(dataDir);
  });

  const env = () => ({ VIGIL_DATA_DIR: dataDir, VIGIL_DEMO_TOKEN_DELAY_MS: TOKEN_DELAY_MS, ...place.env });
  const live = () => server!;

  async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
    const response = await fetch(`${live().url}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
    return { status: response.status, body: (await response.json()) as Json };
  }

  async function kill(why: string): Promise<void> {
    kills.push(why);
    live().child.kill('SIGKILL');
    await live().exited;
  }

  async function restart(): Promise<void> {
    server = await startServerProcess(env());
  }

  /**
   * A person's message as server-sent events. `killAt` (a count of events, or of reply
   * deltas) kills the process when the stream reaches it. Accepted once the server
   * announced the stored message (its message.end, with its id).
   */
  async function sendSse(entry: Sent, threadId: string, killAt?: StreamKill): Promise<boolean> {
    let killed = false;
    let seen = 0;
    let deltas = 0;
    try {
      const response = await fetch(`${live().url}/api/threads/${threadId}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ content: entry.content }),
      });
      expect(response.status).toBe(200);
      if (killAt?.kind === 'random-event' && killAt.after === 0) {
        await kill(`run ${entry.run}: right after the stream opened`);
        killed = true;
      }
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        const blocks = buffer.split('\n\n');
        buffer = blocks.pop()!;
        for (const event of parseSse(blocks.join('\n\n'))) {
          seen += 1;
          if (event.event === 'message.end' && event.data.message.role === 'user' && event.data.message.content === entry.content) {
            entry.accepted = true;
            entry.id = event.data.message.id;
          }
          if (event.event === 'message.delta') deltas += 1;
          if (!killed && killAt?.kind === 'mid-stream' && deltas === killAt.after) {
            await kill(`run ${entry.run}: mid-stream, after ${deltas} reply tokens`);
            killed = true;
          }
          if (!killed && killAt?.kind === 'random-event' && seen === killAt.after) {
            await kill(`run ${entry.run}: at the stream's event ${seen} (${event.event})`);
            killed = true;
          }
        }
      }
    } catch (error) {
      if (!killed) throw error; // only the kill may cut a stream short
    }
    if (killAt && !killed) {
      // The stream ended before the chosen point: kill now, between runs.
      await kill(`run ${entry.run}: ${killAt.kind} point not reached (${seen} events); killed after the run`);
      killed = true;
    }
    return killed;
  }

  /** A person's message answered as JSON once the run ended: a 200 accepts it, with its id. */
  async function sendJson(entry: Sent, threadId: string): Promise<void> {
    const answer = await call('POST', `/api/threads/${threadId}/messages`, { content: entry.content });
    expect(answer.status).toBe(200);
    entry.accepted = true;
    entry.id = (answer.body.messages as Json[]).find((message) => message.role === 'user' && message.content === entry.content)?.id;
    expect(entry.id).toBeTypeOf('string');
  }

  /** A signed webhook delivery; a 202 accepts it (the run goes on in the background). */
  async function deliver(hook: { id: string; secret: string }, entry: Sent, deliveryId: string): Promise<void> {
    const body = JSON.stringify({ n: entry.run });
    const response = await fetch(`${live().url}/api/hooks/${hook.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signedHeaders(hook.secret, deliveryId, Math.floor(Date.now() / 1000), body) },
      body,
    });
    expect(response.status).toBe(202);
    entry.accepted = true;
    entry.runId = ((await response.json()) as Json).runId as string;
  }

  async function allPages<T>(first: string, key: string): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | null = null;
    do {
      const page = await call('GET', cursor ? `${first}&cursor=${encodeURIComponent(cursor)}` : first);
      expect(page.status).toBe(200);
      items.push(...(page.body[key] as T[]));
      cursor = page.body.nextCursor as string | null;
    } while (cursor);
    return items;
  }

  const history = (threadId: string) => allPages<Json>(`/api/threads/${threadId}/history?include=internal&limit=200`, 'messages');
  const timersOf = async (threadId: string) => (await call('GET', `/api/threads/${threadId}/timers?state=all&limit=100`)).body.timers as Json[];

  /** Jobs the server still holds (`vigil_queue_depth`, summed over ready, deferred and running). */
  async function queuedJobs(): Promise<number> {
    const text = await (await fetch(`${live().url}/metrics`)).text();
    const counts = [...text.matchAll(/^vigil_queue_depth\{state="\w+"\} (\d+)$/gm)].map((match) => Number(match[1]));
    if (counts.length !== 3) throw new Error(`/metrics has no vigil_queue_depth for ready, deferred and active:\n${text.slice(0, 2000)}`);
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /**
   * No follow-up pending, no fire's run still running, and no job left. The last matters:
   * a fire the kill cut short keeps its job, leased to the dead process, while the restart
   * marks its run failed at once; only when the lease lapses is the job delivered again
   * and the fire recovered, with a new run. Until then the timer names a failed run and
   * looks settled.
   */
  async function firesSettled(): Promise<boolean> {
    if ((await queuedJobs()) > 0) return false;
    for (const threadId of threadIds) {
      const timers = await timersOf(threadId);
      if (timers.some((timer) => timer.state === 'pending')) return false;
      for (const timer of timers.filter((candidate) => candidate.state === 'fired')) {
        const fireRun = await call('GET', `/api/runs/${timer.runId}`);
        if (fireRun.status !== 200 || fireRun.body.status === 'running') return false;
      }
    }
    return true;
  }

  it(
    `survives SIGKILL at 3 seeded points during ${RUNS} runs across ${THREADS} threads, restarting on the same database`,
    async () => {
      await restart();
      for (const [id, delay] of [['crash-follower', FOLLOW_UP_DELAY_MS], ['crash-plain', 0]] as const) {
        const autonomy = delay
          ? { enabled: true, delaysMs: { check_in: delay, question_unanswered: delay, task_incomplete: delay, waiting_for_decision: delay }, minDelayMs: 10, maxPerSilence: 1, maxPerDay: 1000, modelCallsPerDay: 100_000 }
          : { enabled: false };
        expect((await call('POST', '/api/agents', { id, name: id, autonomy })).status).toBe(201);
      }
      for (let index = 0; index < THREADS; index++) {
        const created = await call('POST', '/api/threads', { agentId: FOLLOWER_THREADS.includes(index) ? 'crash-follower' : 'crash-plain', title: `crash ${index}` });
        expect(created.status).toBe(201);
        threadIds.push(created.body.id as string);
      }
      // Webhook deliveries land on thread 1 (no follow-ups, so its count stays simple).
      const hookAnswer = await call('POST', '/api/hooks', { name: 'crash', threadId: threadIds[1], taskTemplate: 'crash delivery {{payload.n}}', payloadFields: ['n'] });
      expect(hookAnswer.status).toBe(201);
      const hook = { id: hookAnswer.body.id as string, secret: hookAnswer.body.secret as string };

      // Where the kills land: two distinct runs, one of each kind. The third kill, during a
      // follow-up's fire, comes after the last run (and makes the final restart). Each
      // restart costs seconds (a process start loads LangChain): three keep the test short.
      const killRuns = new Map<number, KillKind>();
      const kinds: KillKind[] = ['streaming', 'after-202'];
      while (killRuns.size < kinds.length) {
        const run = 2 + pick(RUNS - 4);
        if (!killRuns.has(run)) killRuns.set(run, kinds[killRuns.size]!);
      }

      for (let run = 0; run < RUNS - 1; run++) {
        const kind = killRuns.get(run);
        const via: Sent['via'] = kind === 'after-202' ? 'webhook' : kind ? 'sse' : (['sse', 'sse', 'json', 'webhook'] as const)[pick(4)]!;
        const threadIndex = via === 'webhook' ? 1 : pick(THREADS);
        const entry: Sent = {
          run,
          threadIndex,
          via,
          accepted: false,
          content: via === 'webhook' ? `crash delivery ${run}` : `crash seed ${seed} run ${run}: are you there?`,
        };
        sent.push(entry);
        const threadId = threadIds[threadIndex]!;
        if (via === 'webhook') {
          await deliver(hook, entry, `crash-${seed}-${run}`);
          if (kind === 'after-202') {
            await kill(`run ${run}: right after a webhook's 202`);
            await restart();
          }
        } else if (via === 'json') {
          await sendJson(entry, threadId);
        } else {
          const killAt: StreamKill | undefined = kind !== 'streaming' ? undefined : random() < 0.5 ? { kind: 'mid-stream', after: 1 + pick(5) } : { kind: 'random-event', after: pick(8) };
          if (await sendSse(entry, threadId, killAt)) await restart();
        }
      }

      // The last run, on a follower thread over a WebSocket: when its follow-up fires,
      // kill the process mid-fire (at the fire, or at one of its reply's first tokens).
      const lastThread = FOLLOWER_THREADS[pick(FOLLOWER_THREADS.length)]!;
      const last: Sent = { run: RUNS - 1, threadIndex: lastThread, via: 'websocket', accepted: false, content: `crash seed ${seed} run ${RUNS - 1}: last words` };
      sent.push(last);
      const socket = new WebSocket(`${live().url.replace('http', 'ws')}/api/ws`);
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      const events: Json[] = [];
      socket.on('message', (data) => events.push(JSON.parse(String(data)) as Json));
      socket.on('error', () => undefined); // the kill ends the socket
      socket.send(JSON.stringify({ type: 'message.send', threadId: threadIds[lastThread], content: last.content }));
      const fireDeltas = 1 + pick(3);
      let fire: Json | undefined;
      await waitFor(
        () => {
          const stored = events.find((event) => event.type === 'message.end' && event.message.role === 'user' && event.message.content === last.content);
          if (stored) Object.assign(last, { accepted: true, id: stored.message.id });
          fire ??= events.find((event) => event.type === 'timer.fire');
          return fire !== undefined && events.filter((event) => event.type === 'message.delta' && event.runId === fire!.runId).length >= fireDeltas;
        },
        30_000,
        'the last thread\'s follow-up to fire and stream',
      ).catch((error: unknown) => {
        throw new Error(`${String(error)} (seed ${seed}): ${JSON.stringify(events.map((event) => [event.type, event.runId, event.state ?? event.reason ?? '']))}\n${live().output().slice(-6000)}`);
      });
      await kill(`after the last run: during a follow-up's fire, after ${fireDeltas} reply tokens`);
      socket.terminate();

      // The final restart: every due follow-up fires (an interrupted fire is recovered once
      // the dead process's claim on its job lapses), and nothing is left running.
      await restart();
      await waitFor(
        firesSettled,
        recoveryTimeoutMs,
        'every due follow-up to fire and every fire to end',
      ).catch((error: unknown) => {
        throw new Error(`${String(error)} (seed ${seed}; kills: ${kills.join('; ')})\n${live().output().slice(-4000)}`);
      });
      console.log(`crash-safety seed ${seed}: ${kills.length} kills — ${kills.join('; ')}`);
      expect(kills.length).toBeGreaterThanOrEqual(3);
    },
    300_000 + recoveryTimeoutMs,
  );

  it('crash after 202 loses nothing: every message the API accepted is in history exactly once, and none twice (I3)', async () => {
    expect(sent).toHaveLength(RUNS);
    const problems: string[] = [];
    for (const [index, threadId] of threadIds.entries()) {
      const messages = await history(threadId);
      for (const entry of sent.filter((candidate) => candidate.threadIndex === index)) {
        const copies = messages.filter((message) => message.role === 'user' && message.content === entry.content);
        const where = `run ${entry.run} (${entry.via}, thread ${index})`;
        if (entry.accepted && copies.length !== 1) problems.push(`${where}: accepted, found ${copies.length} times`);
        if (!entry.accepted && copies.length > 1) problems.push(`${where}: cut short by a kill, found ${copies.length} times`);
        if (entry.id && !copies.some((message) => message.id === entry.id)) problems.push(`${where}: accepted as ${entry.id}, not under that id`);
        if (entry.runId && copies[0] && copies[0].runId !== entry.runId) problems.push(`${where}: accepted for run ${entry.runId}, stored by run ${copies[0].runId}`);
        // What a webhook started is the system speaking: internal, with its metadata intact (I3).
        if (entry.via === 'webhook' && copies[0] && (copies[0].visibility !== 'internal' || copies[0].additionalKwargs?.trigger_type !== 'webhook')) {
          problems.push(`${where}: stored as ${copies[0].visibility} with ${JSON.stringify(copies[0].additionalKwargs)}`);
        }
      }
      // No message is stored twice, whatever its author.
      const ids = messages.map((message) => message.id as string);
      if (new Set(ids).size !== ids.length) problems.push(`thread ${index}: a message id appears twice`);
    }
    expect(problems, `seed ${seed}; kills: ${kills.join('; ')}`).toEqual([]);
    expect(sent.filter((entry) => entry.accepted).length).toBeGreaterThan(RUNS - 5);
  });

  it('every thread, its history and the thread list read after the crashes', async () => {
    const listed = await allPages<Json>('/api/threads?limit=100', 'threads');
    expect(listed.map((thread) => thread.id).sort()).toEqual([...threadIds].sort());
    for (const threadId of threadIds) {
      expect((await call('GET', `/api/threads/${threadId}`)).status).toBe(200);
      const visible = await allPages<Json>(`/api/threads/${threadId}/history?limit=200`, 'messages');
      expect(visible.every((message) => message.visibility === undefined && ['user', 'assistant'].includes(message.role as string))).toBe(true);
      expect((await call('GET', `/api/threads/${threadId}/runs?limit=100`)).status).toBe(200);
    }
  });

  it('no run is left running after the restarts: one a kill cut short is ended as failed, saying its process ended', { timeout: 30_000 + recoveryTimeoutMs }, async () => {
    const listed = await allPages<Json>('/api/threads?limit=100', 'threads');
    const runsOf = async (threadId: string) => (await call('GET', `/api/threads/${threadId}/runs?limit=100`)).body.runs as Json[];
    const stillRunning = async () => {
      const running: string[] = [];
      for (const thread of listed) for (const run of await runsOf(thread.id as string)) if (run.status === 'running') running.push(`${run.id} (${run.trigger})`);
      return running;
    };
    await waitFor(async () => (await stillRunning()).length === 0, recoveryTimeoutMs, 'every run to have ended').catch(async (error: unknown) => {
      throw new Error(`${String(error)}: ${(await stillRunning()).join(', ')} (seed ${seed}; kills: ${kills.join('; ')})`);
    });
    const ended = (await Promise.all(listed.map((thread) => runsOf(thread.id as string)))).flat().filter((run) => run.reason === PROCESS_ENDED_REASON);
    // Three kills at least, each during a run (a reply streaming, a webhook's run, a fire).
    expect(ended.length, `seed ${seed}; kills: ${kills.join('; ')}`).toBeGreaterThanOrEqual(1);
    expect(ended.every((run) => run.status === 'failed' && run.endedAt)).toBe(true);
  });

  it('I7: each due follow-up fired exactly once across the kills — one prompt, one reply, none left pending or running', { timeout: 30_000 + recoveryTimeoutMs }, async () => {
    // A recovery may have handed a fire a new run just after the first wait saw its old one
    // end (the old one is marked failed first): wait for that run too.
    await waitFor(firesSettled, recoveryTimeoutMs, 'every recovered fire to end');
    const problems: string[] = [];
    let fired = 0;
    for (const [index, threadId] of threadIds.entries()) {
      const messages = await history(threadId);
      const timers = await timersOf(threadId);
      if (timers.some((timer) => timer.state === 'pending')) problems.push(`thread ${index}: a timer is still pending`);
      for (const timer of timers.filter((candidate) => candidate.state === 'fired')) {
        fired += 1;
        const fireRun = (await call('GET', `/api/runs/${timer.runId}`)).body;
        const at = messages.findIndex((message) => message.id === followUpMessageId(timer.id));
        const prompts = messages.filter((message) => message.id === followUpMessageId(timer.id)).length;
        const nextHuman = messages.findIndex((message, position) => position > at && message.role === 'user');
        const replies = at < 0 ? 0 : messages.slice(at + 1, nextHuman < 0 ? undefined : nextHuman).filter((message) => message.role === 'assistant').length;
        const where = `thread ${index} timer ${timer.id} (run ${fireRun.status}${fireRun.reason ? `: ${fireRun.reason}` : ''})`;
        if (fireRun.status === 'running') problems.push(`${where}: its run never ended`);
        if (prompts > 1 || replies > 1) problems.push(`${where}: ${prompts} prompts, ${replies} replies`);
        if (fireRun.status === 'succeeded' && (prompts !== 1 || replies !== 1)) {
          problems.push(`${where}: succeeded with ${prompts} prompts and ${replies} replies in ${JSON.stringify(messages.map((message) => [message.role, message.id, String(message.content).slice(0, 40), message.runId]))}`);
        }
      }
      // Every follow-up prompt in history belongs to a timer that fired: none came from nowhere, none twice.
      const prompts = messages.filter((message) => String(message.id).startsWith('follow-up-'));
      const firedIds = new Set(timers.filter((timer) => timer.state === 'fired').map((timer) => followUpMessageId(timer.id as string)));
      for (const prompt of prompts) if (!firedIds.has(prompt.id as string)) problems.push(`thread ${index}: prompt ${prompt.id} has no fired timer`);
    }
    expect(problems, `seed ${seed}; kills: ${kills.join('; ')}`).toEqual([]);
    expect(fired).toBeGreaterThanOrEqual(1); // at least the one killed mid-fire, recovered
  });

  it('I6: no follow-up fired after a person\'s later message', async () => {
    const problems: string[] = [];
    for (const [index, threadId] of threadIds.entries()) {
      const messages = await history(threadId);
      // A person's message is stored after it was received: stored before the fire means received before it.
      const people = messages.filter((message) => message.role === 'user' && message.visibility === 'user');
      for (const timer of (await timersOf(threadId)).filter((candidate) => candidate.state === 'fired')) {
        const between = people.filter((message) => message.createdAt > timer.createdAt && message.createdAt < timer.firedAt);
        if (between.length > 0) problems.push(`thread ${index}: timer ${timer.id} (created ${timer.createdAt}) fired at ${timer.firedAt} after "${between[0]!.content}" at ${between[0]!.createdAt}`);
      }
    }
    expect(problems, `seed ${seed}; kills: ${kills.join('; ')}`).toEqual([]);
  });
}
