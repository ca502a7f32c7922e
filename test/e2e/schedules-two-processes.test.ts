import { afterAll, expect, it } from 'vitest';
import { describePostgres, dropSchema, postgresTarget, randomSchemaName } from '../helpers/postgres.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { ALICE } from '../helpers/test-server.js';

const postgres = await postgresTarget();

describePostgres('schedules: two server processes on one PostgreSQL', postgres, () => {
  const schema = randomSchemaName('vigil_sched');
  const processes: ServerProcess[] = [];
  let dataDir: string | undefined;

  afterAll(async () => {
    await Promise.all(processes.map((process) => process.stop('SIGKILL')));
    await dropSchema(schema, postgres.url);
    await removeTempDir(dataDir);
  });

  it('I7: never fire the same schedule twice', async () => {
    dataDir = await makeTempDir();
    const environment = { DATABASE_URL: postgres.url, VIGIL_DATABASE_SCHEMA: schema, VIGIL_DATA_DIR: dataDir, VIGIL_AUTH_TOKENS: `${ALICE.id}:${ALICE.token}` };
    processes.push(await startServerProcess(environment));
    processes.push(await startServerProcess(environment));
    const [first, second] = processes as [ServerProcess, ServerProcess];
    const call = async (server: ServerProcess, method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${ALICE.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return (await response.json()) as any;
    };
    const due = new Date(Date.now() + 4_000).toISOString();
    const ids: string[] = [];
    for (let index = 0; index < 10; index++) {
      // Half created through each process: both arm every fire they know of.
      const created = await call(index % 2 ? first : second, 'POST', '/api/schedules', { name: `job ${index}`, task: `task ${index}`, timing: { kind: 'at', at: due } });
      ids.push(created.id);
    }
    const firesBy = async () => Promise.all(ids.map(async (id) => (await call(first, 'GET', `/api/schedules/${id}/fires`)).fires as Array<{ status: string; threadId: string }>));
    let fires = await firesBy();
    for (let attempt = 0; attempt < 120 && !fires.every((list) => list.some((fire) => fire.status === 'succeeded')); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      fires = await firesBy();
    }
    expect(fires.map((list) => list.length)).toEqual(ids.map(() => 1));
    expect(fires.every((list) => list[0]?.status === 'succeeded')).toBe(true);
    // One new thread per fire, each with exactly one cron run.
    const threads = (await call(first, 'GET', '/api/threads?limit=100')).threads as Array<{ id: string }>;
    expect(threads).toHaveLength(10);
    for (const thread of threads) {
      const runs = (await call(second, 'GET', `/api/threads/${thread.id}/runs`)).runs as Array<{ trigger: string }>;
      expect(runs.map((run) => run.trigger)).toEqual(['cron']);
    }
  }, 240_000);
});
