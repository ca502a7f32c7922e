import { createHash } from 'node:crypto';

/**
 * Loop detection for the planner graph (I9). The seed system counted only consecutive
 * visits of one node and reset the counter whenever another node ran, so an A→B→A cycle
 * ran forever. Here every visit is appended to a bounded history, and two checks read it:
 *
 * - same-node loop: the same node name N times in a row (the seed's 15), whatever else
 *   changed;
 * - node cycle: the last k×L entries are one pattern of L ≥ 2 entries repeated k times.
 *   An entry is the node name *and the progress it worked on* (milestone, revision, step,
 *   strategic revision, milestones done), so a second milestone or a counted revision is
 *   progress, not a cycle — while going round the same nodes on the same step is.
 */

export const VISIT_HISTORY_LIMIT = 128;
export const MAX_CYCLE_LENGTH = 6;

export interface Progress {
  milestoneIndex: number | null;
  revision: number;
  step: number;
  strategicRevision: number;
  milestonesDone: number;
}

export function visitEntry(node: string, progress: Progress): string {
  return `${node}@m${progress.milestoneIndex ?? '-'}.r${progress.revision}.s${progress.step}.R${progress.strategicRevision}.d${progress.milestonesDone}`;
}

export function nodeOf(entry: string): string {
  const at = entry.indexOf('@');
  return at < 0 ? entry : entry.slice(0, at);
}

/** The history with one more visit, oldest entries dropped beyond the limit. */
export function appendVisit(history: readonly string[], entry: string, limit = VISIT_HISTORY_LIMIT): string[] {
  const next = [...history, entry];
  return next.length > limit ? next.slice(next.length - limit) : next;
}

/** How many times in a row `node` will have run, counting this visit. */
export function sameNodeRun(history: readonly string[], node: string): number {
  let count = 1;
  for (let index = history.length - 1; index >= 0 && nodeOf(history[index]!) === node; index--) count++;
  return count;
}

export interface DetectedCycle {
  /** Node names of one turn of the cycle, in order. */
  nodes: string[];
  repeats: number;
}

/**
 * A pattern of 2…maxLength entries that the history ends with `repeats` times in a row.
 * A pattern made of one repeated entry is a same-node loop, reported by sameNodeRun.
 */
export function detectCycle(history: readonly string[], repeats: number, maxLength = MAX_CYCLE_LENGTH): DetectedCycle | null {
  for (let length = 2; length <= maxLength; length++) {
    if (history.length < length * repeats) break;
    const pattern = history.slice(history.length - length);
    if (pattern.every((entry) => entry === pattern[0])) continue;
    let repeated = true;
    for (let turn = 1; turn < repeats && repeated; turn++) {
      const start = history.length - length * (turn + 1);
      for (let offset = 0; offset < length; offset++) {
        if (history[start + offset] !== pattern[offset]) {
          repeated = false;
          break;
        }
      }
    }
    if (repeated) return { nodes: pattern.map(nodeOf), repeats };
  }
  return null;
}

/** Same tool and same arguments, whatever the key order: the identical-call breaker's key. */
export function toolCallSignature(tool: string, args: unknown): string {
  return `${tool}#${createHash('sha256').update(stableJson(args)).digest('hex').slice(0, 24)}`;
}

export function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .filter((key) => record[key] !== undefined)
    .map((key) => `${JSON.stringify(key)}:${stableJson(record[key])}`)
    .join(',')}}`;
}
