/**
 * kill -9 in the middle of a follow-up, on the real server process: after a restart the
 * follow-up is neither lost nor doubled (I7). The demo model streams slowly
 * (VIGIL_DEMO_TOKEN_DELAY_MS) so the process can be killed while the follow-up's reply
 * is half written; the timer is already fired and its synthetic message is in the
 * checkpoint, without a reply.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { followUpMessageId } from '../../src/domain/autonomy/timer.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { PROCESS_ENDED_REASON } from '../../src/app/runs/orphaned-run-sweeper.js';

type Json = Record<string, any>;

export function autonomyKillSuite(environment: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>, recoveryTimeoutMs: number): void {
  let place: { env: Record<string, string>; cleanup: () => Promise<void> };
  let dataDir: string;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-e2e-autonomy-');
    place = await environment();
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await place?.cleanup();
    await removeTempDir(dataDir);
  });

  const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));
  const env = () => ({ VIGIL_DATA_DIR: dataDir, VIGIL_DEMO_TOKEN_DELAY_MS: '120', ...place.env });

  async function call(method: string, path: string, body?: unknown): Promise<Json> {
    const response = await fetch(`${server!.url}${path}`, { method, ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
    return { status: response.status, body: (await response.json()) as Json };
  }

  it('I7: a follow-up whose server is killed (kill -9) mid-reply is finished once after a restart — never lost, never doubled', async () => {
    server = await startServerProcess(env());
    const agent = await call('POST', '/api/agents', {
      id: 'follower',
      name: 'Follower',
      autonomy: { enabled: true, delaysMs: { check_in: 200, question_unanswered: 200, task_incomplete: 200, waiting_for_decision: 200 }, minDelayMs: 10, maxPerSilence: 1 },
    });
    expect(agent.status).toBe(201);
    const thread = (await call('POST', '/api/threads', { agentId: 'follower' })).body;
    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/ws`);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const events: Json[] = [];
    socket.on('message', (data) => events.push(JSON.parse(String(data)) as Json));
    socket.send(JSON.stringify({ type: 'thread.subscribe', threadId: thread.id }));
    await sleep(50);
    const answer = await call('POST', `/api/threads/${thread.id}/messages`, { content: 'hello' });
    expect(answer.body.run.status).toBe('succeeded');

    // The follow-up fires, its reply starts streaming: kill the process right there.
    const start = Date.now();
    let fire: Json | undefined;
    while (!(fire && events.some((event) => event.type === 'message.delta' && event.runId === fire!.runId))) {
      fire = events.find((event) => event.type === 'timer.fire');
      if (Date.now() - start > 20_000) throw new Error(`the follow-up never started: ${JSON.stringify(events.map((event) => event.type))}`);
      await sleep(10);
    }
    server.child.kill('SIGKILL');
    await server.exited;
    socket.terminate();
    expect(events.some((event) => event.type === 'run.end' && event.runId === fire!.runId)).toBe(false); // it really died mid-run

    server = await startServerProcess(env());
    const recoveredBy = Date.now() + recoveryTimeoutMs;
    let runs: Json[] = [];
    while (!runs.some((run) => run.trigger === 'autonomy' && run.status === 'succeeded')) {
      if (Date.now() > recoveredBy) throw new Error(`the follow-up was not recovered: ${JSON.stringify(runs)}\n${server.output().slice(-4000)}`);
      await sleep(200);
      runs = ((await call('GET', `/api/threads/${thread.id}/runs`)).body.runs as Json[]).reverse();
    }
    await sleep(1_500); // time for any (wrong) second delivery to show itself

    runs = ((await call('GET', `/api/threads/${thread.id}/runs`)).body.runs as Json[]).reverse();
    const autonomy = runs.filter((run) => run.trigger === 'autonomy');
    expect(autonomy.map((run) => [run.status, run.reason])).toEqual([
      ['failed', PROCESS_ENDED_REASON], // ended by the sweep at start, or by the follow-up's own recovery
      ['succeeded', null],
    ]);
    expect(autonomy[0]!.id).toBe(fire!.runId);
    const timers = (await call('GET', `/api/threads/${thread.id}/timers?state=all`)).body.timers as Json[];
    const fired = timers.filter((timer) => timer.state === 'fired');
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({ id: fire!.timerId, runId: autonomy[1]!.id });
    const all = (await call('GET', `/api/threads/${thread.id}/history?include=internal`)).body.messages as Json[];
    expect(all.filter((message) => message.id === followUpMessageId(fire!.timerId))).toHaveLength(1);
    expect(all.filter((message) => message.visibility === 'internal')).toHaveLength(1);
    const visible = (await call('GET', `/api/threads/${thread.id}/history`)).body.messages as Json[];
    expect(visible.map((message) => message.role)).toEqual(['user', 'assistant', 'assistant']);
    expect(visible[2]!.content).toContain('Following up');
    expect(server.output()).toContain('recovering a follow-up whose fire was interrupted');

    const stopped = await server.stop('SIGTERM');
    expect(stopped.code).toBe(0);
    server = undefined;
  }, 60_000 + recoveryTimeoutMs);
}
