/**
 * vigil's SQLite saver stores checkpoint documents packed against a dictionary
 * (checkpoint-document-codec.ts): what it stores is small, what it reads back is exactly
 * what was put, and checkpoints stored unpacked (before packing, or by LangGraph's own
 * saver) are still read.
 */
import { join } from 'node:path';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { Annotation, END, START, StateGraph, messagesStateReducer } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeSqliteSaver } from '../../src/adapters/sql/checkpoint-sqlite-base.js';
import { openNodeSqlite } from '../../src/adapters/sql/node-sqlite.js';
import { openSqliteStorage } from '../../src/adapters/storage-factory.js';
import type { Storage } from '../../src/app/ports.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

const logger = pino({ level: 'silent' });

const State = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  notes: Annotation<Record<string, unknown>>({ reducer: (_previous, next) => next, default: () => ({}) }),
});

function graphOn(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode('respond', (state) => ({
      messages: [new AIMessage({ id: `ai-${state.messages.length}`, content: `reply ${state.messages.length} ✓` })],
      notes: { seen: state.messages.length, tags: ['a', 'ü'] },
    }))
    .addEdge(START, 'respond')
    .addEdge('respond', END)
    .compile({ checkpointer });
}

const config = (threadId: string) => ({ configurable: { thread_id: threadId } });

async function turns(checkpointer: BaseCheckpointSaver, threadId: string, count: number, from = 0): Promise<void> {
  const graph = graphOn(checkpointer);
  for (let index = from; index < from + count; index++) await graph.invoke({ messages: [new HumanMessage({ id: `human-${threadId}-${index}`, content: `turn ${index}` })] }, config(threadId));
}

describe('checkpoint documents packed on SQLite (issue 10: bytes per turn)', () => {
  let dataDir: string;
  let file: string;
  const opened: Storage[] = [];
  const open = async (fresh = false) => {
    const storage = await openSqliteStorage({ file, logger, ...(fresh ? { checkpointCache: { maxThreads: 0 }, messageLog: { maxThreads: 0 } } : {}) });
    opened.push(storage);
    return storage;
  };
  const storedDocuments = (threadId: string) => {
    const database = openNodeSqlite(file, { readOnly: true });
    try {
      return (database.prepare('SELECT checkpoint FROM checkpoints WHERE thread_id = ?').all(threadId) as Array<{ checkpoint: Uint8Array }>).map((row) => row.checkpoint);
    } finally {
      database.close();
    }
  };

  beforeEach(async () => {
    dataDir = await makeTempDir('vigil-checkpoint-packing-');
    file = join(dataDir, 'vigil.sqlite');
  });
  afterEach(async () => {
    for (const storage of opened.splice(0)) await storage.close();
    await removeTempDir(dataDir);
  });

  it('I3: stores every checkpoint packed, and a read that rebuilds from the rows alone returns exactly what was put', async () => {
    const storage = await open();
    await turns(storage.checkpointer, 'packed', 3);
    const documents = storedDocuments('packed');
    expect(documents.length).toBeGreaterThan(0);
    for (const document of documents) {
      expect(document[0]).toBe(0x01);
      expect(document.byteLength).toBeLessThan(200);
    }
    const written = await storage.checkpointer.getTuple(config('packed'));
    const reader = await open(true);
    const read = await reader.checkpointer.getTuple(config('packed'));
    expect(read?.checkpoint).toEqual(written?.checkpoint);
    expect(read?.metadata).toEqual(written?.metadata);
    expect((read?.checkpoint.channel_values.messages as BaseMessage[]).map((message) => message.content)).toEqual(['turn 0', 'reply 1 ✓', 'turn 1', 'reply 3 ✓', 'turn 2', 'reply 5 ✓']);
    // Time travel: every stored checkpoint reads back, each with its own list.
    const history = [];
    for await (const tuple of reader.checkpointer.list(config('packed'))) history.push((tuple.checkpoint.channel_values.messages as BaseMessage[] | undefined)?.length ?? 0);
    expect(history.length).toBe(documents.length);
    expect(history[0]).toBe(6);
    expect(history.at(-1)).toBe(0);
    // list's metadata filter runs inside SQLite on the metadata, which stays JSON.
    const loops = [];
    for await (const tuple of reader.checkpointer.list(config('packed'), { filter: { source: 'loop' } })) loops.push(tuple.metadata?.source);
    expect(loops.length).toBeGreaterThan(0);
    expect(new Set(loops)).toEqual(new Set(['loop']));
  });

  it('I3: reads checkpoints stored unpacked (by LangGraph’s own saver, as before packing) and goes on from them', async () => {
    const database = openNodeSqlite(file);
    try {
      await turns(new NodeSqliteSaver(database), 'plain', 2);
    } finally {
      database.close();
    }
    const plain = storedDocuments('plain');
    expect(plain.every((document) => document[0] === '{'.charCodeAt(0))).toBe(true);

    const storage = await open(true);
    const before = await storage.checkpointer.getTuple(config('plain'));
    expect((before?.checkpoint.channel_values.messages as BaseMessage[]).map((message) => message.content)).toEqual(['turn 0', 'reply 1 ✓', 'turn 1', 'reply 3 ✓']);
    await turns(storage.checkpointer, 'plain', 1, 2);
    const after = await (await open(true)).checkpointer.getTuple(config('plain'));
    expect((after?.checkpoint.channel_values.messages as BaseMessage[]).map((message) => message.content)).toEqual(['turn 0', 'reply 1 ✓', 'turn 1', 'reply 3 ✓', 'turn 2', 'reply 5 ✓']);
    expect(after?.checkpoint.channel_values.notes).toEqual({ seen: 5, tags: ['a', 'ü'] });
  });
});
