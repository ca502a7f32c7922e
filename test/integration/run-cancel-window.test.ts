/**
 * A run cancelled by id in the moment between taking its thread and being recorded (the
 * coordinator's `active` map learns it only once its record is written): the cancel must
 * still reach it. Real SQLite storage; the run record's insert is held back for one run.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ALICE, BOB, startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { GatedModel } from './langgraph-sdk.suite.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ kind: 'sqlite' }, { models: () => new GatedModel({}) });
});
afterAll(async () => {
  for (const release of GatedModel.held.splice(0)) release();
  await server?.destroy();
});

it('I8: a run cancelled after it took its thread but before its record was written is cancelled, not run (and another user\'s cancel does nothing, I12)', async () => {
  const conversations = server.services.conversations;
  const thread = await conversations.createThread(ALICE.id, {});
  const first = conversations.sendMessage(ALICE.id, thread.id, 'first [hold]');
  await waitFor(() => GatedModel.held.length > 0, 10_000, 'the first run to reach the model');
  // The second run's record is written only when the test says so.
  const runs = server.storage.runs as unknown as Record<string, unknown>;
  const create = Object.getPrototypeOf(runs).create as (...args: unknown[]) => Promise<unknown>;
  let reached = false;
  let letItWrite!: () => void;
  const written = new Promise<void>((resolve) => (letItWrite = resolve));
  runs.create = async function (this: unknown, record: { id: string }, ...rest: unknown[]) {
    if (record.id === 'queued-run') {
      reached = true;
      await written;
    }
    return create.call(this, record, ...rest);
  };
  try {
    const second = conversations.sendMessage(ALICE.id, thread.id, 'second, called off', { runId: 'queued-run' });
    GatedModel.held.shift()!();
    await first;
    await waitFor(() => reached, 10_000, 'the second run to take the thread and write its record');
    await conversations.cancelAnywhere(BOB.id, 'queued-run');
    await conversations.cancelAnywhere(ALICE.id, 'queued-run');
    letItWrite();
    const outcome = await second;
    expect(outcome.run.status).toBe('cancelled');
    expect(outcome.run.errorCode).toBe('RUN_CANCELLED');
    // Cancelled before the model answered it: no reply to the called-off message.
    const history = await conversations.history(ALICE.id, thread.id, { includeInternal: false, limit: 50 });
    const contents = history.messages.map((message) => message.content);
    expect(contents).toContain('Echo: first [hold]');
    expect(contents).not.toContain('Echo: second, called off');
  } finally {
    delete runs.create;
  }
});
