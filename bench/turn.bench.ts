/**
 * Group "turn": one turn on a thread that already holds 10 … 10,000 messages, on SQLite
 * and PostgreSQL, four ways side by side in one run (each variant's turns in a block of
 * their own, right after its warm-up, so no variant pays for collecting another's garbage):
 *
 *  - vigil:     RunCoordinator.run → chat graph (respond, which recalls memories first)
 *               with the demo model, history written, events published, on the storage
 *               openStorage builds (the thread store: thread-saver.ts): everything a turn
 *               does but the model. A thread longer
 *               than the default context budget is seeded with the conversation summary
 *               a thread of that length has (older messages folded), as every real one
 *               does, so the measured turns do not each fold a slice of a backlog;
 *  - langgraph: LangGraph's own saver used directly: a one-node StateGraph over a
 *               messages channel (messagesStateReducer), one invoke per turn. On
 *               PostgreSQL that is PostgresSaver as it ships; on SQLite it is the
 *               line-by-line port of SqliteSaver to node:sqlite (checkpoint-sqlite-base.ts),
 *               because the published SqliteSaver needs better-sqlite3, a native addon
 *               vigil no longer installs (the two measured within noise of each other
 *               before the switch: 547 vs 527 ms p50 at 2,000 messages);
 *  - delta:     the same graph with LangGraph's experimental DeltaChannel
 *               (MessagesDeltaValue / messagesDeltaReducer), which saves per-step
 *               writes instead of the whole list (reported, or why it failed; the
 *               seeded thread has no snapshot yet, so each turn replays from the seed);
 *  - store:     the same one-node graph on vigil's saver (thread-saver.ts), each turn
 *               stored as a run stores it (its input first, the input's steps held until
 *               the reply's checkpoint): the storage alone, without the run's other work
 *               (run record, memory recall, events, context fitting);
 *  - exit:      the plain langgraph graph with `durability: 'exit'`: one checkpoint at
 *               the end of the run instead of one per step.
 *
 * 10,000 messages: vigil only by default (LangGraph's savers take seconds a turn there,
 * and PostgreSQL's seeding alone is long on a shared machine); `--full` adds them and
 * PostgreSQL. "new JSON" is the raw JSON of a turn's new messages (JSON.stringify of the
 * two LangChain messages, the form LangGraph's serializer stores), the yardstick for
 * bytes added per turn.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, END, MessagesDeltaValue, START, StateGraph, StateSchema, messagesStateReducer } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { NodeSqliteSaver } from '../src/adapters/sql/checkpoint-sqlite-base.js';
import { openNodeSqlite } from '../src/adapters/sql/node-sqlite.js';
import { InProcessEventBus } from '../src/adapters/events/in-process-event-bus.js';
import { DEMO_MODEL_NAME, DemoChatModel } from '../src/adapters/llm/demo-chat-model.js';
import { RESPOND_NODE, buildChatGraph, type ChatStateValue } from '../src/agent/chat-graph.js';
import { runConfig, type RunSettings } from '../src/agent/run-settings.js';
import { TokenCounter } from '../src/agent/context/token-counter.js';
import { adoptMessage } from '../src/agent/message-identity.js';
import type { AgentRecord } from '../src/app/ports.js';
import { RunCoordinator } from '../src/app/run-coordinator.js';
import { HOLD_INPUT_STEP, HOLD_SUPERSEDED_WRITES } from '../src/app/ports.js';
import type { ThreadSaver } from '../src/adapters/sql/thread-saver.js';
import { backendsOf, openBenchStorage, type BackendName } from './backends.js';
import { conversation, userTurnText } from './fixtures.js';
import type { BenchOptions, BenchRow } from './types.js';
import { analyzeSchema, benchSchema, postgresCheckpointCount, round, schemaBytes, silentLogger, sqliteBytes, sqliteCheckpointCount, stats, tempDir } from './util.js';

const GROUP = 'turn';
const USER = 'bench-user';
const P50_TABLE = 'turn latency p50 (ms), and ratio to the plain LangGraph saver';
const P99_TABLE = 'turn latency p99 (ms)';
const BYTES_TABLE =
  'database growth per turn (KiB; SQLite: file + WAL after a WAL checkpoint, PostgreSQL: the data pages of the schema\'s tables, indexes and TOAST) over the timed turns, vigil\'s also over many more (PostgreSQL: VACUUM every 20 turns, as autovacuum reclaims updated rows\' old versions), the raw JSON of the turn\'s new messages, and vigil\'s long-run growth ÷ that';
const CHECKPOINTS_TABLE =
  'checkpoints saved and read (saver.getTuple) per turn; LangGraph\'s SqliteSaver stores the whole message list in each, its PostgresSaver re-stores changed channels; vigil\'s refer to the thread\'s message rows';
const TARGETS_TABLE =
  'issue 10 targets: 2,000 msgs langgraph ÷ vigil p50 (≥ 15), vigil 10,000 ÷ 100 p50 (≤ 1.5), worst vigil growth ÷ new JSON (≤ 2), 10 msgs vigil ÷ langgraph p50 (≤ 1), vigil p50 at 2,000 (ms; ≤ 10 SQLite, ≤ 20 PostgreSQL); the two ratios of near-equal times also as the median of 6 rounds in which their sides take turns ("alternating"), which a shared machine\'s changing load moves far less';
const SYSTEM_PROMPT = 'You are a helpful assistant. Answer clearly and briefly.';

export type Variant = 'vigil' | 'langgraph' | 'store' | 'delta' | 'exit';
/** Experiments: a failure is reported in a note, never fatal. */
const EXPERIMENTS: readonly Variant[] = ['store', 'delta', 'exit'];

/** One way of running turns, on one database, with its own current thread. */
export interface TurnHarness {
  readonly variant: Variant;
  /** Start a new current thread already holding `size` messages. */
  seed(size: number): Promise<void>;
  /** One turn on the current thread: a person's message in, the demo model's reply out. */
  turn(index: number): Promise<void>;
  /** Messages in the current thread's state (checkpoint), to check nothing was lost. */
  stateLength(): Promise<number>;
  /** Bytes of JSON.stringify of the current thread's last `count` messages. */
  lastMessagesJson(count: number): Promise<number>;
  bytes(): Promise<number>;
  /** Make old row versions' space reusable, as autovacuum does (vigil on PostgreSQL; absent elsewhere). */
  vacuum?(): Promise<void>;
  /** Bytes per table (vigil only: bench/turn-bytes.ts). */
  tableBytes?(): Promise<Map<string, number>>;
  /** Checkpoints saved so far for the current thread. */
  checkpoints(): Promise<number>;
  /** Checkpoint reads (saver.getTuple calls) so far, all threads. */
  reads(): number;
}

interface SizePlan {
  size: number;
  turns: number;
  /** Only these variants at this size (all when absent). */
  variants?: readonly Variant[];
  /** Only these backends at this size (all when absent). */
  backends?: readonly BackendName[];
}

interface Plan {
  sizes: SizePlan[];
  /** Turns each variant runs before its measured ones, on every size. */
  warmup: number;
  /** Turns each variant runs once, on a short thread of its own, before the first size. */
  jitWarmup: number;
  /**
   * Further turns vigil runs on every size, after the timed ones, to measure its growth: a few
   * turns move a database by whole pages (4 KiB on SQLite, 8 KiB on PostgreSQL), so a turn's
   * ~1.5 KiB read from 15 turns was off by a page or two either way.
   */
  bytesTurns: number;
  /** Rounds of the alternating measurements of the two ratios of nearly equal times (0: none). */
  alternatingRounds: number;
}

function planFor(options: BenchOptions): Plan {
  if (options.quick) return { sizes: [{ size: 10, turns: 5 }, { size: 100, turns: 5 }, { size: 500, turns: 5 }], warmup: 2, jitWarmup: 5, bytesTurns: 20, alternatingRounds: 0 };
  return {
    sizes: [
      { size: 10, turns: 25 },
      { size: 100, turns: 25 },
      { size: 1_000, turns: 15 },
      { size: 2_000, turns: 15 },
      options.full ? { size: 10_000, turns: 10, variants: ['vigil', 'langgraph'] } : { size: 10_000, turns: 15, variants: ['vigil'], backends: ['sqlite'] },
    ],
    warmup: 5,
    jitWarmup: 60,
    bytesTurns: 300,
    alternatingRounds: 6,
  };
}

export async function benchTurns(options: BenchOptions): Promise<BenchRow[]> {
  const plan = planFor(options);
  const rows: BenchRow[] = [];
  for (const backend of backendsOf(options)) rows.push(...(await benchBackend(options, backend, plan)));
  return rows;
}

async function benchBackend(options: BenchOptions, backend: BackendName, plan: Plan): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const harnesses: TurnHarness[] = [await vigilHarness(options, backend), await langGraphHarness(options, backend, 'langgraph')];
  const failures = new Map<Variant, string>();
  for (const variant of ['store', 'delta', 'exit'] as const) {
    try {
      harnesses.push(await langGraphHarness(options, backend, variant));
    } catch (error) {
      failures.set(variant, `could not build: ${describe(error)}`);
    }
  }
  // A failing experiment is reported, never fatal; vigil and the plain saver must work.
  const guarded = async (harness: TurnHarness, work: () => Promise<void>) => {
    if (failures.has(harness.variant)) return;
    if (!EXPERIMENTS.includes(harness.variant)) return work();
    try {
      await work();
    } catch (error) {
      failures.set(harness.variant, describe(error));
    }
  };

  // Every variant's code compiled before anything is measured. Without this the first size
  // (10 messages) measured vigil while V8 was still compiling LangGraph's engine, which the
  // variants share and vigil runs first: the plain saver's turns, measured after, found it
  // compiled. A server in use runs warm code.
  options.progress(`turn: ${backend}, warming up, ${plan.jitWarmup} turns × ${harnesses.length} variants`);
  for (const harness of harnesses) {
    await guarded(harness, async () => {
      await harness.seed(10);
      for (let index = 0; index < plan.jitWarmup; index++) await harness.turn(index);
    });
  }

  /** p50 by `${size}:${variant}`, and the worst growth ÷ new JSON, for the targets table. */
  const medians = new Map<string, number>();
  let worstGrowthRatio = 0;
  for (const sizePlan of plan.sizes) {
    const { size, turns } = sizePlan;
    if (sizePlan.backends !== undefined && !sizePlan.backends.includes(backend)) continue;
    const active = harnesses.filter((harness) => sizePlan.variants === undefined || sizePlan.variants.includes(harness.variant));
    options.progress(`turn: ${backend}, ${size} messages, ${turns} turns × ${active.length} variants`);
    const samples = new Map<Variant, number[]>(active.map((harness) => [harness.variant, []]));
    const bytesBefore = new Map<Variant, number>();
    const bytesAfter = new Map<Variant, number>();
    const checkpointsBefore = new Map<Variant, number>();
    const checkpointsAfter = new Map<Variant, number>();
    const readsBefore = new Map<Variant, number>();
    const readsAfter = new Map<Variant, number>();
    for (const harness of active) await guarded(harness, () => harness.seed(size));
    // Each variant warms up and then runs its measured turns in a block of its own. Turns
    // interleaved across variants charged one variant's garbage to another: LangGraph's savers
    // allocate megabytes a turn on long threads, and the collector then ran during vigil's
    // turns (vigil at 2,000 messages measured 5.9 ms interleaved, 3.6 ms in its own block).
    const turnCount = plan.warmup + turns;
    for (const harness of active) {
      await guarded(harness, async () => {
        for (let index = 0; index < plan.warmup; index++) await harness.turn(index);
        bytesBefore.set(harness.variant, await harness.bytes());
        checkpointsBefore.set(harness.variant, await harness.checkpoints());
        readsBefore.set(harness.variant, harness.reads());
        for (let index = plan.warmup; index < turnCount; index++) {
          const start = performance.now();
          await harness.turn(index);
          samples.get(harness.variant)!.push(performance.now() - start);
        }
        bytesAfter.set(harness.variant, await harness.bytes());
        checkpointsAfter.set(harness.variant, await harness.checkpoints());
        readsAfter.set(harness.variant, harness.reads());
      });
    }
    // Every turn adds the person's message and the reply: anything else means lost state.
    const expected = size + 2 * turnCount;
    const newJson = new Map<Variant, number>();
    for (const harness of active) {
      await guarded(harness, async () => {
        const length = await harness.stateLength();
        if (length !== expected) throw new Error(`state holds ${length} messages after ${turnCount} turns on ${size}, expected ${expected}`);
        newJson.set(harness.variant, (await harness.lastMessagesJson(2 * turns)) / turns);
      });
    }

    // vigil's growth over many turns (after the checks above, which count the timed turns' messages).
    const longGrowth = new Map<Variant, number>();
    for (const harness of active) {
      if (harness.variant !== 'vigil' || failures.has(harness.variant)) continue;
      await harness.vacuum?.();
      const before = await harness.bytes();
      for (let index = 0; index < plan.bytesTurns; index++) {
        await harness.turn(turnCount + index);
        if ((index + 1) % 20 === 0) await harness.vacuum?.();
      }
      await harness.vacuum?.();
      longGrowth.set(harness.variant, ((await harness.bytes()) - before) / plan.bytesTurns);
    }

    const p50 = new Map<Variant, number>();
    for (const harness of active) {
      const variant = harness.variant;
      const measured = samples.get(variant)!;
      if (failures.has(variant) || measured.length < turns) continue;
      const result = stats(measured);
      p50.set(variant, result.p50);
      medians.set(`${size}:${variant}`, result.p50);
      const line = `${backend} ${String(size).padStart(5)} msgs`;
      const growth = (bytesAfter.get(variant)! - bytesBefore.get(variant)!) / turns;
      rows.push({ group: GROUP, name: `${backend} ${size} msgs ${variant} p50`, value: round(result.p50, 1), unit: 'ms', dims: { table: P50_TABLE, line, column: variant } });
      rows.push({ group: GROUP, name: `${backend} ${size} msgs ${variant} p99`, value: round(result.p99, 1), unit: 'ms', dims: { table: P99_TABLE, line, column: variant } });
      rows.push({ group: GROUP, name: `${backend} ${size} msgs ${variant} growth`, value: round(growth / 1024, 1), unit: 'KiB/turn', dims: { table: BYTES_TABLE, line, column: variant } });
      const json = newJson.get(variant);
      const long = longGrowth.get(variant);
      if (variant === 'vigil' && json !== undefined && long !== undefined) {
        rows.push({ group: GROUP, name: `${backend} ${size} msgs vigil growth over ${plan.bytesTurns} turns`, value: round(long / 1024, 2), unit: 'KiB/turn', dims: { table: BYTES_TABLE, line, column: `vigil, ${plan.bytesTurns} turns` } });
        rows.push({ group: GROUP, name: `${backend} ${size} msgs new JSON`, value: round(json / 1024, 2), unit: 'KiB/turn', dims: { table: BYTES_TABLE, line, column: 'new JSON' } });
        rows.push({ group: GROUP, name: `${backend} ${size} msgs vigil growth/new JSON`, value: round(long / json, 2), unit: '×', dims: { table: BYTES_TABLE, line, column: 'vigil ÷ new JSON' } });
        worstGrowthRatio = Math.max(worstGrowthRatio, long / json);
      }
      const saved = (checkpointsAfter.get(variant)! - checkpointsBefore.get(variant)!) / turns;
      rows.push({ group: GROUP, name: `${backend} ${size} msgs ${variant} checkpoints`, value: round(saved, 2), unit: '/turn', dims: { table: CHECKPOINTS_TABLE, line, column: `${variant} saved` } });
      const reads = (readsAfter.get(variant)! - readsBefore.get(variant)!) / turns;
      rows.push({ group: GROUP, name: `${backend} ${size} msgs ${variant} reads`, value: round(reads, 1), unit: '/turn', dims: { table: CHECKPOINTS_TABLE, line, column: `${variant} read` } });
    }
    const base = p50.get('langgraph');
    for (const variant of ['vigil', 'store', 'delta', 'exit'] as const) {
      const value = p50.get(variant);
      if (base === undefined || value === undefined) continue;
      rows.push({
        group: GROUP,
        name: `${backend} ${size} msgs ${variant}/langgraph p50`,
        value: round(value / base, 2),
        unit: '×',
        dims: { table: P50_TABLE, line: `${backend} ${String(size).padStart(5)} msgs`, column: `${variant} ÷ langgraph` },
      });
    }
  }
  const ratio = (numerator: string, denominator: string) => {
    const top = medians.get(numerator);
    const bottom = medians.get(denominator);
    return top === undefined || bottom === undefined ? undefined : top / bottom;
  };
  // The two ratios of nearly equal times, measured again with their sides taking turns: a
  // shared machine's load comes and goes over minutes, and sizes measured minutes apart moved
  // their ratio by 0.7 between runs (10,000 ÷ 100 read 1.71 in one run, 0.94 in the next).
  const hasSize = (size: number) => plan.sizes.some((entry) => entry.size === size && (entry.variants?.includes('vigil') ?? true) && (entry.backends?.includes(backend) ?? true));
  let tenRatio: number | undefined;
  let flatRatio: number | undefined;
  if (plan.alternatingRounds > 0) {
    options.progress(`turn: ${backend}, alternating rounds (${plan.alternatingRounds}): 10 messages vigil and langgraph`);
    tenRatio = await alternatingRatio({ harness: harnesses[0]!, size: 10, reseed: true }, { harness: harnesses[1]!, size: 10, reseed: true }, plan.alternatingRounds);
    if (hasSize(10_000) && hasSize(100)) {
      options.progress(`turn: ${backend}, alternating rounds (${plan.alternatingRounds}): vigil at 10,000 and at 100 messages`);
      const long = await vigilHarness(options, backend);
      flatRatio = await alternatingRatio({ harness: long, size: 10_000, reseed: false }, { harness: harnesses[0]!, size: 100, reseed: true }, plan.alternatingRounds);
    }
  }
  const targets: [string, number | undefined, string][] = [
    ['2,000: langgraph ÷ vigil', ratio('2000:langgraph', '2000:vigil'), '×'],
    ['vigil 10,000 ÷ 100', ratio('10000:vigil', '100:vigil'), '×'],
    ['worst growth ÷ new JSON', worstGrowthRatio > 0 ? worstGrowthRatio : undefined, '×'],
    ['10: vigil ÷ langgraph', ratio('10:vigil', '10:langgraph'), '×'],
    ['vigil p50 at 2,000', medians.get('2000:vigil'), 'ms'],
  ];
  for (const [column, value, unit] of targets) {
    if (value === undefined) continue;
    rows.push({ group: GROUP, name: `${backend} target ${column}`, value: round(value, 2), unit, dims: { table: TARGETS_TABLE, line: backend, column } });
  }
  for (const [column, value] of [['10: vigil ÷ langgraph', tenRatio], ['vigil 10,000 ÷ 100', flatRatio]] as const) {
    if (value === undefined) continue;
    rows.push({ group: GROUP, name: `${backend} target ${column}, alternating`, value: round(value, 2), unit: '×', dims: { table: TARGETS_TABLE, line: backend, column: `${column}, alternating` } });
  }
  for (const [variant, reason] of failures) {
    rows.push({ group: GROUP, name: `${backend} ${variant} failed`, value: Number.NaN, unit: '', note: reason });
  }
  return rows;
}

/** One side of an alternating comparison: a harness and the length of the thread it turns on. */
interface Side {
  harness: TurnHarness;
  size: number;
  /** A fresh thread of `size` each round (short threads), or one seeded once (long ones, which 60 turns barely lengthen). */
  reseed: boolean;
}

/**
 * The median over `rounds` of a's p50 ÷ b's, the two taking turns in blocks (5 warm-up turns,
 * then 25 measured), so whatever load the machine carries falls on both sides of each ratio.
 * `onRound` also gets each block's CPU time per measured turn (this process's, all threads):
 * on SQLite, which runs in the process, a figure the neighbours' load moves less than wall
 * time; on PostgreSQL it leaves out the server's work.
 */
export async function alternatingRatio(a: Side, b: Side, rounds: number, onRound?: (aP50: number, bP50: number, cpuMs: { a: number; b: number }) => void): Promise<number> {
  for (const side of [a, b]) if (!side.reseed) await side.harness.seed(side.size);
  const next = new Map<Side, number>([[a, 0], [b, 0]]);
  const ratios: number[] = [];
  for (let roundIndex = 0; roundIndex < rounds; roundIndex++) {
    const p50: number[] = [];
    const cpu: number[] = [];
    for (const side of [a, b]) {
      if (side.reseed) await side.harness.seed(side.size);
      const samples: number[] = [];
      let cpuStart = process.cpuUsage();
      for (let index = 0; index < 30; index++) {
        const turn = next.get(side)!;
        next.set(side, turn + 1);
        if (index === 5) cpuStart = process.cpuUsage();
        const start = performance.now();
        await side.harness.turn(turn);
        if (index >= 5) samples.push(performance.now() - start);
      }
      const used = process.cpuUsage(cpuStart);
      cpu.push((used.user + used.system) / 1000 / samples.length);
      p50.push(stats(samples).p50);
    }
    onRound?.(p50[0]!, p50[1]!, { a: cpu[0]!, b: cpu[1]! });
    ratios.push(p50[0]! / p50[1]!);
  }
  return stats(ratios).p50;
}

// ---------- vigil: the coordinator, the chat graph, the thread store ----------

export async function vigilHarness(options: BenchOptions, backend: BackendName): Promise<TurnHarness> {
  const { storage, bytes, checkpoints, tableBytes, vacuum, analyze } = await openBenchStorage(options, backend, 'turn-vigil');
  const reads = countReads(storage.checkpointer);
  const model = new DemoChatModel({ tokenDelayMs: 0 });
  const graph = buildChatGraph({ checkpointer: storage.checkpointer, memories: storage.memories, models: () => model, logger: silentLogger });
  const events = new InProcessEventBus(silentLogger);
  const coordinator = new RunCoordinator({
    storage,
    // As main.ts registers it.
    graphs: { chat: { graph, replyNodes: new Set([RESPOND_NODE]) } },
    events,
    clock: { now: () => new Date() },
    logger: silentLogger,
    defaultModel: 'demo',
    modelLabel: (spec) => (spec === 'demo' ? DEMO_MODEL_NAME : spec),
  });
  const now = () => new Date().toISOString();
  const agent: AgentRecord = await storage.agents.create({ id: 'bench', userId: USER, name: 'bench', kind: 'chat', systemPrompt: SYSTEM_PROMPT, model: 'demo', settings: {} }, now());
  let threadId = '';
  let delivered = 0;
  const settings = (runId: string): RunSettings => ({ runId, threadId, userId: USER, agentId: agent.id, trigger: 'user', model: 'demo', systemPrompt: SYSTEM_PROMPT });

  return {
    variant: 'vigil',
    async seed(size) {
      threadId = randomUUID();
      await storage.threads.create({ id: threadId, userId: USER, agentId: agent.id, title: `${size} messages` }, now());
      // A connected client: every event goes somewhere, as in a live session.
      events.subscribe(threadId, () => void delivered++);
      if (size === 0) return;
      // Grow the checkpoint in one invoke (size - 1 messages in, the reply out): the saver
      // writes the thread's history with it, as it would have turn by turn.
      // A thread this long has had its older messages folded into the conversation summary
      // turn by turn; seeded without one, the first turns would each fold a slice of the
      // backlog (a summary model call per turn), which no long-lived thread does.
      // Replies adopted as they would have been (I13), so the coverage names their ids in state.
      const seedMessages = conversation(size - 1, size).map(adoptMessage);
      const state = (await graph.invoke({ messages: seedMessages, ...caughtUpSummary(seedMessages) }, runConfig(settings('seed')))) as ChatStateValue;
      const thread = await storage.threads.get(USER, threadId);
      if (thread?.messageCount !== size || state.messages.length !== size) {
        throw new Error(`seeding ${size}: state ${state.messages.length}, history ${thread?.messageCount}`);
      }
      await settle(backend, bytes, analyze);
    },
    async turn(index) {
      const context = {
        runId: randomUUID(),
        threadId,
        userId: USER,
        agentId: agent.id,
        trigger: 'user' as const,
        meta: {},
        requestedAt: now(),
        correlationId: randomUUID(),
      };
      const outcome = await coordinator.run({ context, agent, input: new HumanMessage({ id: randomUUID(), content: userTurnText(index) }) });
      if (outcome.run.status !== 'succeeded') throw new Error(`vigil run ${outcome.run.status}: ${outcome.run.errorMessage ?? ''}`);
      if (outcome.messages.length !== 2) throw new Error(`vigil run stored ${outcome.messages.length} messages, expected 2`);
    },
    async stateLength() {
      const snapshot = await graph.getState(runConfig(settings('check')));
      const length = (snapshot.values as ChatStateValue).messages.length;
      const thread = await storage.threads.get(USER, threadId);
      if (thread?.messageCount !== length) throw new Error(`history ${thread?.messageCount} ≠ state ${length}`);
      return length;
    },
    async lastMessagesJson(count) {
      const snapshot = await graph.getState(runConfig(settings('check')));
      return jsonBytes((snapshot.values as ChatStateValue).messages.slice(-count));
    },
    bytes,
    vacuum,
    tableBytes,
    checkpoints: () => checkpoints(threadId),
    reads,
  };
}

/**
 * The summary state of a thread whose backlog has been folded: the summary (about as
 * long as the demo model's) covers all but the newest messages, the newest ones within
 * the share of the default 32,000-token budget a fold keeps (keepRecent 0.4 of the
 * messages' room). Nothing for a thread that fits its budget.
 */
function caughtUpSummary(messages: readonly BaseMessage[]): Pick<ChatStateValue, 'summary' | 'summaryCoverage'> | Record<string, never> {
  const counter = new TokenCounter();
  const keep = 0.4 * (32_000 - 4_096 - 2_000 - 500);
  let recent = 0;
  let first = messages.length;
  while (first > 0 && recent + counter.message(messages[first - 1]!).tokens <= keep) recent += counter.message(messages[--first]!).tokens;
  // Start the recent messages at a person's message, as a fold leaves them.
  while (first < messages.length && messages[first]!.getType() !== 'human') first++;
  if (first === 0) return {};
  const summary = `The person and the assistant discussed ${first} messages' worth of topics. ${userTurnText(1).repeat(12)}`;
  return {
    summary,
    summaryCoverage: {
      firstMessageId: messages[0]!.id!,
      lastMessageId: messages[first - 1]!.id!,
      messageCount: first,
      folds: Math.ceil(first / 200),
      updatedAt: new Date().toISOString(),
      model: 'demo',
      tokens: counter.text(summary),
    },
  };
}

// ---------- LangGraph's saver used directly ----------

const PlainState = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
});
const DeltaState = new StateSchema({ messages: MessagesDeltaValue });

export async function langGraphHarness(options: BenchOptions, backend: BackendName, variant: Exclude<Variant, 'vigil'>): Promise<TurnHarness> {
  const { saver, bytes, checkpoints, analyze } = variant === 'store' ? await openStoreSaver(options, backend) : await openSaver(options, backend, variant);
  const store = variant === 'store' ? (saver as ThreadSaver) : undefined;
  const reads = countReads(saver);
  const model = new DemoChatModel({ tokenDelayMs: 0 });
  async function respond(state: { messages: BaseMessage[] }, config: RunnableConfig) {
    // Same shape of model call as vigil's respond node: a system message, then the thread.
    const reply = await model.invoke([new SystemMessage(SYSTEM_PROMPT), ...state.messages], config);
    return { messages: [reply] };
  }
  const graph =
    variant !== 'delta'
      ? new StateGraph(PlainState).addNode('respond', respond).addEdge(START, 'respond').addEdge('respond', END).compile({ checkpointer: saver })
      : new StateGraph(DeltaState).addNode('respond', respond).addEdge(START, 'respond').addEdge('respond', END).compile({ checkpointer: saver });
  let threadId = '';
  // store: a run's way of storing a turn (its input first, then the input's steps held until the reply's checkpoint).
  const held = store === undefined ? {} : { [HOLD_SUPERSEDED_WRITES]: true, [HOLD_INPUT_STEP]: true };
  const config = () => ({ configurable: { thread_id: threadId, ...held }, ...(variant === 'exit' ? { durability: 'exit' as const } : {}) });
  return {
    variant,
    async seed(size) {
      threadId = randomUUID();
      if (size > 0) await graph.invoke({ messages: conversation(size - 1, size) }, config());
      await settle(backend, bytes, analyze);
    },
    async turn(index) {
      const message = new HumanMessage({ id: randomUUID(), content: userTurnText(index) });
      await store?.storeInput(threadId, [message], undefined);
      await graph.invoke({ messages: [message] }, config());
      await store?.settle(threadId);
    },
    async stateLength() {
      const snapshot = await graph.getState(config());
      return (snapshot.values as { messages: BaseMessage[] }).messages.length;
    },
    async lastMessagesJson(count) {
      const snapshot = await graph.getState(config());
      return jsonBytes((snapshot.values as { messages: BaseMessage[] }).messages.slice(-count));
    },
    bytes,
    checkpoints: () => checkpoints(threadId),
    reads,
  };
}

interface OpenedSaver {
  saver: BaseCheckpointSaver;
  bytes: () => Promise<number>;
  analyze: () => Promise<void>;
  checkpoints: (threadId: string) => Promise<number>;
}

/**
 * After seeding, for every variant alike: a thread's months of turns are one write here, an
 * 11 MB transaction at 10,000 messages, which no thread ever makes. Its WAL is folded into the
 * database file (as SQLite's automatic checkpoints do over a thread's life; a WAL that large
 * slowed every later commit about threefold), and PostgreSQL's planner gets its statistics
 * (as autovacuum's ANALYZE would).
 */
async function settle(backend: BackendName, bytes: () => Promise<number>, analyze: () => Promise<void>): Promise<void> {
  if (backend === 'sqlite') await bytes();
  else await analyze();
}

/** vigil's saver alone, on the same one-node graph: the storage a turn costs, without the run's other work. */
async function openStoreSaver(options: BenchOptions, backend: BackendName): Promise<OpenedSaver> {
  const { storage, bytes, checkpoints, analyze } = await openBenchStorage(options, backend, 'turn-store');
  return { saver: storage.checkpointer, bytes, analyze, checkpoints };
}

async function openSaver(options: BenchOptions, backend: BackendName, label: string): Promise<OpenedSaver> {
  if (backend === 'sqlite') {
    const file = join(await tempDir(options, `turn-${label}`), 'langgraph.sqlite');
    // WAL, as vigil's SQLite storage uses, so the two differ in what they store, not how.
    // LangGraph's SqliteSaver needs better-sqlite3 (a native addon vigil no longer
    // installs); its line-by-line port to node:sqlite stands in for it (measured within
    // noise of the original on the same workload before the switch).
    const database = openNodeSqlite(file);
    options.onCleanup(async () => {
      database.close();
    });
    return { saver: new NodeSqliteSaver(database), bytes: () => sqliteBytes(file), analyze: async () => undefined, checkpoints: (threadId) => sqliteCheckpointCount(file, threadId) };
  }
  const url = options.postgresUrl!;
  const schema = benchSchema(options, url);
  const saver = PostgresSaver.fromConnString(url, { schema });
  options.onCleanup(() => saver.end());
  await saver.setup();
  return { saver, bytes: () => schemaBytes(url, schema), analyze: () => analyzeSchema(url, schema), checkpoints: (threadId) => postgresCheckpointCount(url, schema, threadId) };
}

/** Counts the saver's getTuple calls (on this instance only): how many checkpoints a turn reads. */
function countReads(saver: BaseCheckpointSaver): () => number {
  let count = 0;
  const getTuple = saver.getTuple.bind(saver);
  saver.getTuple = (config) => {
    count++;
    return getTuple(config);
  };
  return () => count;
}

/** Raw JSON of messages, one by one (LangChain's serialised form, as a saver stores it). */
function jsonBytes(messages: readonly BaseMessage[]): number {
  return messages.reduce((sum, message) => sum + Buffer.byteLength(JSON.stringify(message)), 0);
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const frame = error.stack?.split('\n').find((line) => line.includes('node_modules/@langchain'))?.trim();
  return `${error.name}: ${error.message}${frame ? ` (${frame.replace(/^at /, 'at ').replace(/.*node_modules\//, '')})` : ''}`;
}
