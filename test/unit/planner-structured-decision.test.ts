import { HumanMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DemoChatModel } from '../../src/adapters/llm/demo-chat-model.js';
import { decide, parseJsonObject } from '../../src/agent/planner/structured-decision.js';
import { ScriptedChatModel } from '../helpers/scripted-model.js';

const schema = z.object({ answer: z.number().int() }).describe('An answer');

describe('planner structured decisions', () => {
  it('uses withStructuredOutput, validates with zod, retries with the error, then gives up with a reason', async () => {
    const model = new ScriptedChatModel({ answer: ['prose', { answer: 'forty-two' }, { answer: 1.5 }] });
    const outcome = await decide(model, schema, 'answer', [new HumanMessage('?')], { retries: 2 });
    expect(outcome).toMatchObject({ ok: false, attempts: 3 });
    expect(outcome.ok ? '' : outcome.error).toMatch(/expected int/i);
    expect(model.callsOf('answer')).toHaveLength(3);
    expect(String(model.callsOf('answer')[1]!.messages.at(-1)?.content)).toMatch(/^That answer was not a valid answer: no answer answer in the reply/);
    expect(outcome.tokens).toBeGreaterThan(0);
  });

  it('accepts a valid answer at once', async () => {
    const model = new ScriptedChatModel({ answer: [{ answer: 42 }] });
    expect(await decide(model, schema, 'answer', [new HumanMessage('?')], { retries: 2 })).toMatchObject({ ok: true, value: { answer: 42 }, attempts: 1 });
  });

  it('a model without tool calling (the offline demo model) is asked for JSON, and an answer that does not fit the schema is malformed', async () => {
    const outcome = await decide(new DemoChatModel(), schema, 'answer', [new HumanMessage('plan my week')], { retries: 1 });
    expect(outcome).toMatchObject({ ok: false, attempts: 2 });
  });

  it('finds the JSON object in a fenced or chatty reply', () => {
    expect(parseJsonObject('Sure!\n```json\n{"answer": 1}\n```')).toEqual({ answer: 1 });
    expect(parseJsonObject('here: {"answer": 2} ok')).toEqual({ answer: 2 });
    expect(parseJsonObject('no json')).toBeUndefined();
  });
});
