/**
 * A message list as a checkpoint stores it: the numbers of its messages' rows in the
 * thread's `thread_messages`, as ranges (`[lo, hi, lo, hi, …]`, inclusive, in list order),
 * under one key. An append-only thread is one range however long it gets; a removal splits
 * a range, a replacement by id adds the new version's number.
 */

import { referenceValue } from './stored-reference.js';

/** The key of the reference object a checkpoint stores in place of a message list. */
export const MESSAGE_LIST_REF = 'vigil:message-log';

/** `[1, 2, 3, 7, 5]` → `[1, 3, 7, 7, 5, 5]`: consecutive runs, in list order. */
export function toRanges(seqs: readonly number[]): number[] {
  const ranges: number[] = [];
  for (const seq of seqs) {
    const last = ranges.length - 1;
    if (last > 0 && ranges[last] === seq - 1) ranges[last] = seq;
    else ranges.push(seq, seq);
  }
  return ranges;
}

export function expand(ranges: readonly number[]): number[] {
  const seqs: number[] = [];
  for (let index = 0; index < ranges.length; index += 2) {
    for (let seq = ranges[index]!; seq <= ranges[index + 1]!; seq++) seqs.push(seq);
  }
  return seqs;
}

/** The highest number in the ranges (0 for none). */
export function highest(ranges: readonly number[]): number {
  let top = 0;
  for (let index = 1; index < ranges.length; index += 2) top = Math.max(top, ranges[index]!);
  return top;
}

/** The ranges of a stored reference, or undefined for any other value. */
export function rangesOf(value: unknown): number[] | undefined {
  const ranges = referenceValue(value, MESSAGE_LIST_REF);
  if (!Array.isArray(ranges) || ranges.length % 2 !== 0 || !ranges.every((item) => Number.isSafeInteger(item))) return undefined;
  return ranges as number[];
}
