import { randomUUID } from 'node:crypto';
import { HumanMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { DemoChatModel } from '../../src/adapters/llm/demo-chat-model.js';

const task = (content: string, trigger: string) => new HumanMessage({ id: randomUUID(), content, additional_kwargs: { synthetic: true, trigger_type: trigger, trigger_reason: 'test' } });

describe('the demo model names who wrote what it answers (I1)', () => {
  it("quotes a person's message as theirs", () => {
    expect(DemoChatModel.replyFor([new HumanMessage('hello there')])).toContain('You said: "hello there"');
  });
  it("quotes a task the system wrote in the person's role as the system's, never as the person's", () => {
    for (const [trigger, source] of [
      ['cron', 'Your schedule asked'],
      ['webhook', 'A webhook asked'],
      ['some_future_trigger', 'The system asked'],
    ] as const) {
      const reply = DemoChatModel.replyFor([new HumanMessage('earlier words'), task('Daily digest please', trigger)]);
      expect(reply, trigger).toContain(`${source}: "Daily digest please"`);
      expect(reply, trigger).not.toContain('You said');
    }
  });
});
