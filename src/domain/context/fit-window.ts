/**
 * Which messages of a thread go into one model call (I14): the most recent ones that fit
 * the room left after the system prompt, envelope, summary and the answer. Pure: it
 * works on token counts and message shapes, never on LangChain objects, and deletes
 * nothing — it only chooses where the window starts.
 *
 * The rules of the cut:
 * - an assistant message that calls tools and the tool results that answer it are one
 *   unit: both are in the window or neither is (providers reject a result without its call);
 * - the window never starts with a tool result;
 * - where the provider needs it (Anthropic), the window starts with a person's message;
 * - a message with media (images) is kept whole, or — when only its text fits — with its
 *   media replaced by a marked placeholder; never cut in the middle of a part.
 */
export type FitKind = 'human' | 'ai' | 'tool' | 'system' | 'other';

export interface FitItem {
  kind: FitKind;
  tokens: number;
  /** Tokens with media parts replaced by a placeholder; absent when it has no media. */
  tokensWithoutMedia?: number | undefined;
  /** An assistant message's tool calls (their ids). */
  toolCallIds?: readonly string[] | undefined;
}

export interface FitOptions {
  /** Tokens the messages may take. */
  budget: number;
  /** The first message must be a person's (human) message (Anthropic). */
  humanFirst: boolean;
}

export interface FitResult {
  /** Index of the first message in the window; `items.length` when nothing fits. */
  start: number;
  /** Indexes in the window whose media is replaced by a placeholder. */
  withoutMedia: number[];
  /** Tokens of the window as chosen. */
  tokens: number;
  /** False when not even the newest message fits: the caller must shorten it. */
  newestFits: boolean;
}

/** A run of messages that is kept or dropped whole: a tool call and its results, or one message. */
export interface FitUnit {
  start: number;
  end: number; // exclusive
  tokens: number;
  /** A tool result whose call is not in the thread before it. */
  orphanTool: boolean;
}

/** Split messages into units, so no cut falls between a tool call and its results. */
export function unitsOf(items: readonly FitItem[]): FitUnit[] {
  const units: FitUnit[] = [];
  let index = 0;
  while (index < items.length) {
    const item = items[index]!;
    let end = index + 1;
    if (item.kind === 'ai' && (item.toolCallIds?.length ?? 0) > 0) {
      while (end < items.length && items[end]!.kind === 'tool') end += 1;
    }
    let tokens = 0;
    for (let position = index; position < end; position++) tokens += items[position]!.tokens;
    units.push({ start: index, end, tokens, orphanTool: item.kind === 'tool' });
    index = end;
  }
  return units;
}

export function fitWindow(items: readonly FitItem[], options: FitOptions): FitResult {
  const units = unitsOf(items);
  const withoutMedia: number[] = [];
  let total = 0;
  let first = units.length; // index into units
  for (let unitIndex = units.length - 1; unitIndex >= 0; unitIndex--) {
    const unit = units[unitIndex]!;
    if (total + unit.tokens <= options.budget) {
      total += unit.tokens;
      first = unitIndex;
      continue;
    }
    // Only the text of a message with media fits: keep it, with its media marked as left out.
    const lighter = lighterUnit(items, unit);
    if (lighter && total + lighter.tokens <= options.budget) {
      total += lighter.tokens;
      withoutMedia.push(...lighter.replaced);
      first = unitIndex;
    }
    break;
  }
  if (first === units.length) return { start: items.length, withoutMedia: [], tokens: 0, newestFits: false };

  // Never open with a tool result; open with a person's message where the provider needs it.
  while (first < units.length && (units[first]!.orphanTool || (options.humanFirst && items[units[first]!.start]!.kind !== 'human' && hasHumanAfter(items, units, first)))) {
    const dropped = units[first]!;
    total -= tokensAsChosen(items, dropped, withoutMedia);
    first += 1;
  }
  const start = first < units.length ? units[first]!.start : items.length;
  return { start, withoutMedia: withoutMedia.filter((index) => index >= start).sort((a, b) => a - b), tokens: Math.max(0, total), newestFits: start < items.length };
}

function lighterUnit(items: readonly FitItem[], unit: FitUnit): { tokens: number; replaced: number[] } | undefined {
  let tokens = 0;
  const replaced: number[] = [];
  for (let index = unit.start; index < unit.end; index++) {
    const item = items[index]!;
    if (item.tokensWithoutMedia !== undefined && item.tokensWithoutMedia < item.tokens) {
      tokens += item.tokensWithoutMedia;
      replaced.push(index);
    } else tokens += item.tokens;
  }
  return replaced.length > 0 ? { tokens, replaced } : undefined;
}

function tokensAsChosen(items: readonly FitItem[], unit: FitUnit, withoutMedia: readonly number[]): number {
  let tokens = 0;
  for (let index = unit.start; index < unit.end; index++) {
    const item = items[index]!;
    tokens += withoutMedia.includes(index) ? (item.tokensWithoutMedia ?? item.tokens) : item.tokens;
  }
  return tokens;
}

// With no person's message left in the window, dropping more would leave the model nothing.
function hasHumanAfter(items: readonly FitItem[], units: readonly FitUnit[], unitIndex: number): boolean {
  for (let index = unitIndex + 1; index < units.length; index++) if (items[units[index]!.start]!.kind === 'human') return true;
  return false;
}

export interface FoldPlanOptions {
  /** The messages' room in a model call. */
  budget: number;
  /** Fold once the messages take more than this share of their room. */
  foldAt: number;
  /** Keep at most this share of the room as recent messages after the fold. */
  keepRecent: number;
  /** The most one summary call may read, in message tokens. */
  maxFoldTokens: number;
}

/**
 * Whether to fold older messages into the summary, and how many: none while the
 * messages stay under `foldAt` of their room; else the oldest units, leaving at most
 * `keepRecent` of the room as recent messages — never more than one summary call can
 * read (the rest folds on later turns) and never a cut inside a tool call's unit, so
 * the messages left never open with a tool result.
 */
export function planFold(items: readonly FitItem[], options: FoldPlanOptions): number {
  const total = items.reduce((sum, item) => sum + item.tokens, 0);
  if (total <= options.budget * options.foldAt) return 0;
  const units = unitsOf(items);
  // The newest units that stay, within keepRecent (at least the newest unit stays).
  let kept = 0;
  let firstKept = units.length - 1;
  for (let index = units.length - 1; index >= 0; index--) {
    if (index < units.length - 1 && kept + units[index]!.tokens > options.budget * options.keepRecent) break;
    kept += units[index]!.tokens;
    firstKept = index;
  }
  // The oldest units that one summary call can read (at least one, so a fold always progresses).
  let folded = 0;
  let end = 0;
  for (let index = 0; index < firstKept; index++) {
    if (index > 0 && folded + units[index]!.tokens > options.maxFoldTokens) break;
    folded += units[index]!.tokens;
    end = index + 1;
  }
  return end === 0 ? 0 : units[end - 1]!.end;
}
