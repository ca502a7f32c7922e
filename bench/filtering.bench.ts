/**
 * Group "filtering": who a message is for (classifyMessage, I1) over 10,000 mixed
 * messages, and building the projection rows (toStoredMessage) from LangChain messages.
 */
import { toStoredMessage } from '../src/app/message-projection.js';
import { classifyMessage, type ClassifiableMessage } from '../src/domain/message-metadata.js';
import { mixedMessages } from './fixtures.js';
import type { BenchOptions, BenchRow } from './types.js';
import { round, stats } from './util.js';

const GROUP = 'filtering';

export async function benchFiltering(options: BenchOptions): Promise<BenchRow[]> {
  const count = 10_000;
  const passes = options.quick ? 20 : 60;
  const { messages, mix } = mixedMessages(count, 7);
  // The stored form, as history and the integrity check classify it: plain objects.
  const plain: ClassifiableMessage[] = messages.map((message) => ({ type: message.getType(), content: message.content, additional_kwargs: message.additional_kwargs }));
  const mixNote = `${count} msgs: ${mix.synthetic} synthetic, ${mix.legacy} legacy-prefix, ${mix.multimodal} multimodal, ${mix.system} system`;

  let internal = 0;
  const classifyPlain = timePasses(passes, () => {
    internal = 0;
    for (const message of plain) if (classifyMessage(message).visibility === 'internal') internal++;
  });
  const classifyLangChain = timePasses(passes, () => {
    for (const message of messages) classifyMessage({ type: message.getType(), content: message.content, additional_kwargs: message.additional_kwargs });
  });
  const now = new Date().toISOString();
  const project = timePasses(Math.max(5, passes / 4), () => {
    for (const message of messages) toStoredMessage(message, 'run-1', now);
  });

  const rows: BenchRow[] = [];
  const add = (name: string, pass: number, note: string) => {
    rows.push({ group: GROUP, name: `${name}: per message`, value: round((pass * 1000) / count, 4), unit: 'µs', note });
    rows.push({ group: GROUP, name: `${name}: throughput`, value: Math.round(count / (pass / 1000)), unit: 'msgs/s' });
  };
  add('classifyMessage (stored form)', classifyPlain, `${mixNote}; ${internal} internal`);
  add('classifyMessage (LangChain msg)', classifyLangChain, 'incl. getType() and the wrapper object');
  add('toStoredMessage (projection row)', project, 'classify + preview + copies of kwargs/metadata');
  return rows;
}

/** Median milliseconds of one pass, after ten warm-up passes (JIT). */
function timePasses(passes: number, pass: () => void): number {
  for (let index = 0; index < 10; index++) pass();
  const samples: number[] = [];
  for (let index = 0; index < passes; index++) {
    const start = performance.now();
    pass();
    samples.push(performance.now() - start);
  }
  return stats(samples).p50;
}
