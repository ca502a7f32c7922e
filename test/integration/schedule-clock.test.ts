import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

/**
 * A fake clock, shifted so that "now" is just before a daylight-saving change in
 * Berlin: the embedded job queue, the schedule service and the runner all read it, so
 * the fire happens on the fake calendar while the test waits real milliseconds.
 */
describe('cron with a fake clock (SQLite)', () => {
  let server: TestServer | undefined;
  afterAll(async () => {
    await server?.destroy();
  });

  it('fires on local time in Europe/Berlin across the spring daylight-saving change, and arms the next day', async () => {
    // 02:30 does not exist in Berlin on 29 March 2026 (clocks jump 02:00 → 03:00 CEST): the
    // fire comes at 03:00 local, 01:00Z; the next at 02:30 CEST, 00:30Z on 30 March.
    const target = Date.parse('2026-03-29T01:00:00.000Z');
    let offset = 0;
    server = await startTestServer({ kind: 'sqlite' }, { clock: { now: () => new Date(Date.now() + offset) } });
    offset = target - Date.now() - 800; // the fake "now" is 0.8 s before the change
    const created = await server.request('POST', '/api/schedules', { body: { name: 'Night job', task: 'Nightly summary', timing: { kind: 'cron', cron: '30 2 * * *', timezone: 'Europe/Berlin' } } });
    expect(created.status).toBe(201);
    let fires: Array<{ status: string; scheduledFor: string }> = [];
    for (let attempt = 0; attempt < 100 && !fires.some((fire) => fire.status === 'succeeded'); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      fires = (await server.request('GET', `/api/schedules/${created.body.id}/fires`)).body.fires;
    }
    expect(fires).toEqual([expect.objectContaining({ status: 'succeeded', scheduledFor: '2026-03-29T01:00:00.000Z' })]);
    const armed = server.logs.filter((line) => line.msg === 'schedule fire armed' && line.scheduleId === created.body.id).map((line) => line.scheduledFor);
    expect(armed).toEqual(['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
  });
});
