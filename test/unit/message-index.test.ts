import { describe, expect, it } from 'vitest';
import { AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, type BaseMessage } from '@langchain/core/messages';
import { messagesStateReducer } from '@langchain/langgraph';
import { appendMessages } from '../../src/agent/message-index.js';
import { vigilMessagesReducer } from '../../src/agent/message-identity.js';
import { seededRandom as random } from '../helpers/seeded-random.js';

const shape = (messages: readonly BaseMessage[]) => messages.map((message) => [message.constructor.name, message.getType(), message.id, message.content]);

describe('the messages reducer\'s append fast path', () => {
  it('gives exactly what messagesStateReducer gives, over random writes on branching histories (appends, replacements, removals, chunks, duplicates)', () => {
    const next = random(7);
    // Lists that share ancestry, as LangGraph's copies of a channel do (a state read applies writes to a copy).
    const lists: BaseMessage[][] = [[]];
    const ids: string[] = [];
    let fast = 0;
    for (let step = 0; step < 3_000; step++) {
      const picked = lists[Math.floor(next() * lists.length)]!;
      // Sometimes a copy (as a checkpoint read gives), sometimes a copy with a message changed in place of another.
      const roll = next();
      const left = roll < 0.2 ? [...picked] : roll < 0.25 && picked.length > 1 ? picked.map((message, index) => (index === 0 ? new HumanMessage({ id: `swapped${step}`, content: 'swapped' }) : message)) : picked;
      const right: BaseMessage[] = [];
      const count = 1 + Math.floor(next() * 3);
      for (let index = 0; index < count; index++) {
        const roll = next();
        const known = ids.length > 0 ? ids[Math.floor(next() * ids.length)]! : undefined;
        if (roll < 0.6 || known === undefined) {
          const id = `m${ids.length}`;
          ids.push(id);
          // A streamed reply enters state as a chunk.
          right.push(next() < 0.3 ? new AIMessageChunk({ id, content: `new chunk ${id}` }) : new HumanMessage({ id, content: `new ${id}` }));
        } else if (roll < 0.8) right.push(new AIMessage({ id: known, content: `again ${known} ${step}` })); // replace, or append in another branch
        else if (roll < 0.85) right.push(new AIMessage({ content: 'no id' }));
        else if (roll < 0.9) right.push(new AIMessageChunk({ id: known, content: 'chunk' }));
        else if (roll < 0.95 && left.some((message) => message.id === known)) right.push(new RemoveMessage({ id: known }));
        else right.push(new HumanMessage({ id: right[0]?.id ?? known, content: 'duplicate in one write' }));
      }
      const clone = () => right.map((message) => message); // same instances: ids given to id-less messages stay in step
      let expected: BaseMessage[] | Error;
      try {
        expected = messagesStateReducer([...left], clone());
      } catch (error) {
        expected = error as Error;
      }
      const viaFast = appendMessages(left, clone());
      if (viaFast !== undefined) {
        fast++;
        expect(expected).not.toBeInstanceOf(Error);
        expect(shape(viaFast)).toEqual(shape(expected as BaseMessage[]));
      }
      if (!(expected instanceof Error)) {
        const result = viaFast ?? (expected as BaseMessage[]);
        lists.push(result);
        if (lists.length > 40) lists.splice(1 + Math.floor(next() * 39), 1);
      }
    }
    // The fast path is taken for plain appends (most of the writes), not just on empty lists.
    expect(fast).toBeGreaterThan(1_000);
  });

  it('falls back for a replacement, a removal and a list changed in place', () => {
    const base = vigilMessagesReducer([], [new HumanMessage({ id: 'a', content: 'a' }), new HumanMessage({ id: 'b', content: 'b' })]);
    expect(appendMessages(base, [new HumanMessage({ id: 'a', content: 'a2' })])).toBeUndefined();
    expect(appendMessages(base, [new RemoveMessage({ id: 'a' })])).toBeUndefined();
    const grown = appendMessages(base, [new HumanMessage({ id: 'c', content: 'c' })])!;
    expect(shape(grown).map((entry) => entry.slice(1))).toEqual([['human', 'a', 'a'], ['human', 'b', 'b'], ['human', 'c', 'c']]);
    grown.push(new HumanMessage({ id: 'd', content: 'd' }));
    // Indexed again: 'd' is found, so a write of 'd' is a replacement (the plain reducer's answer).
    expect(appendMessages(grown, [new HumanMessage({ id: 'd', content: 'd2' })])).toBeUndefined();
    expect(shape(vigilMessagesReducer(grown, [new HumanMessage({ id: 'd', content: 'd2' })])).at(-1)).toEqual(['HumanMessage', 'human', 'd', 'd2']);
  });
});
