import { describe, expect, it } from 'vitest';
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { HumanMessage } from '@langchain/core/messages';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { runConfig } from '../../src/agent/run-settings.js';

/** What a tracer sees: the same callbacks LangSmith's tracer receives. */
class TraceRecorder extends BaseCallbackHandler {
  name = 'trace-recorder';
  chains: Array<{ runName?: string; tags?: string[]; metadata?: Record<string, unknown> }> = [];
  models: Array<{ tags?: string[]; metadata?: Record<string, unknown> }> = [];
  override handleChainStart(_chain: unknown, _inputs: unknown, _runId: string, _parent?: string, tags?: string[], metadata?: Record<string, unknown>, _type?: string, runName?: string) {
    this.chains.push({ runName, tags, metadata });
  }
  override handleChatModelStart(_llm: unknown, _messages: unknown, _runId: string, _parent?: string, _extra?: unknown, tags?: string[], metadata?: Record<string, unknown>) {
    this.models.push({ tags, metadata });
  }
}

describe('traces link to vigil runs', () => {
  it('every traced run and model call carries the run name, vigil run id, thread, agent and trigger', async () => {
    const model = new FakeListChatModel({ responses: ['hi'] });
    const graph = new StateGraph(Annotation.Root({ ...MessagesAnnotation.spec }))
      .addNode('respond', async (state, config) => ({ messages: [await model.invoke(state.messages, config)] }))
      .addEdge(START, 'respond')
      .addEdge('respond', END)
      .compile();
    const recorder = new TraceRecorder();
    const settings = { runId: 'run-42', threadId: 'thread-7', userId: 'alice', agentId: 'helper', trigger: 'cron' as const, model: 'fake', systemPrompt: '' };
    await graph.invoke({ messages: [new HumanMessage('hello')] }, { ...runConfig(settings), callbacks: [recorder] });

    const root = recorder.chains[0]!;
    expect(root.runName).toBe('vigil cron run');
    expect(root.tags).toEqual(expect.arrayContaining(['vigil', 'trigger:cron', 'agent:helper']));
    const expected = { vigil_run_id: 'run-42', thread_id: 'thread-7', agent_id: 'helper', trigger: 'cron' };
    expect(root.metadata).toMatchObject(expected);
    expect(recorder.models).toHaveLength(1);
    expect(recorder.models[0]!.metadata).toMatchObject(expected);
  });
});
