import { randomUUID } from 'node:crypto';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { Logger } from 'pino';
import type { PlanHeartbeats, PlanRepository } from '../../app/plans/plan-ports.js';
import type { AgentRepository, ChatModelResolver, Clock, EventBus, MemoryStore } from '../../app/ports.js';
import type { VigilEvent } from '../../domain/events.js';
import { toolCallSignature } from '../../domain/planner/loop-bounds.js';
import { plannerSettingsOf, plannerSettingsSchema, type PlannerSettings } from '../../domain/planner/planner-settings.js';
import { isAttended, plannerSettingsWithTools, toolModeFor, toolSettingsOf, toolSettingsSchema, type ToolMode, type ToolSettings } from '../../domain/tools/tool-settings.js';
import type { ApprovalGate } from '../../app/approvals/approval-ports.js';
import type { ApprovalRecord } from '../../domain/tools/approval.js';
import { runApprovedCall } from '../tools/tool-approval.js';
import type { PlannerMetadata } from '../../domain/planner/planner-state.js';
import type { Stop } from '../../domain/planner/run-bounds.js';
import { redact, redactString } from '../../domain/redaction.js';
import { ContextWindow, type DecisionOutput } from '../context/context-window.js';
import { decisionMessages, type PlannerRole } from './planner-prompts.js';
import type { DecisionMessages } from './structured-decision.js';
import { runSettingsOf, type ActiveRunSettings } from '../run-settings.js';
import { withoutTools, type Toolbox, type ToolboxFactory } from '../tools/planner-toolbox.js';

export interface PlannerGraphDependencies {
  checkpointer: BaseCheckpointSaver;
  memories: MemoryStore;
  agents: AgentRepository;
  plans: PlanRepository;
  models: ChatModelResolver;
  toolboxes: ToolboxFactory;
  /** Plan progress events (plan.create, step.*, critic.decide, plan.complete) go here — never through state. */
  events: EventBus;
  /** The overlord's per-thread heartbeat timer. */
  heartbeats: PlanHeartbeats;
  clock: Clock;
  logger: Logger;
  memoryLimit?: number;
  /** Fits the model calls that read the conversation into the agent's context budget (I14). */
  context?: ContextWindow;
  /**
   * The same approval gate the chat tool loop uses (I16). Absent: a tool whose policy is
   * `ask` is refused (nothing can ask a person).
   */
  approvals?: ApprovalGate;
}

/** A tool call the planner makes; `id` and `ask` when it went through the approval path. */
export interface PlannerToolCall {
  id?: string;
  tool: string;
  args: Record<string, unknown>;
  ask?: boolean;
  /** Answered at once with this, never run nor asked (an asking call whose arguments do not fit its tool). */
  refusal?: string;
}

/** What one node call knows about its run. */
export interface RunScope {
  run: ActiveRunSettings;
  config: RunnableConfig;
  log: Logger;
  now(): string;
}

/** Per-output caps: the tables keep more than the state, the state more than a prompt. */
export const TOOL_OUTPUT_STORED_CHARS = 16_000;
export const TOOL_OUTPUT_STATE_CHARS = 1_500;

/** The plan a run of this process is working on, for announcing its stop when the run is cancelled. */
export interface PlanInWork {
  planId: string;
  userId: string;
  threadId: string;
  agentId: string;
}

/** Helpers every node shares; built once per graph, closing over the dependencies. */
export class PlannerRuntime {
  /**
   * runId → the plan it works on, from recall until complete (or a failure). Plain
   * in-process bookkeeping beside the graph, never in its state (I10).
   */
  readonly inWork = new Map<string, PlanInWork>();

  readonly context: ContextWindow;

  constructor(readonly deps: PlannerGraphDependencies) {
    this.context = deps.context ?? new ContextWindow({ models: deps.models, logger: deps.logger, clock: deps.clock, agents: deps.agents });
  }

  scope(config: RunnableConfig): RunScope {
    const run = runSettingsOf(config);
    return { run, config, log: this.deps.logger.child({ threadId: run.threadId, runId: run.runId }), now: () => this.deps.clock.now().toISOString() };
  }

  /** The agent's planner settings; invalid settings fall back to defaults, loudly. */
  async settings(scope: RunScope): Promise<PlannerSettings> {
    const agent = await this.deps.agents.get(scope.run.userId, scope.run.agentId);
    try {
      return plannerSettingsWithTools(agent?.settings ?? {});
    } catch (error) {
      scope.log.error({ err: error, agentId: scope.run.agentId }, 'invalid planner settings; using the defaults');
      return plannerSettingsSchema.parse({});
    }
  }

  /**
   * The messages of one planner decision, bounded to the agent's context budget (I14):
   * a decision reads no thread history, but its JSON context (the request, evidence,
   * results) can outgrow the budget; it is then cut, marked, to fit, with room left for
   * the decision's output schema (`output`: the name and schema given to decide()) and,
   * on a retry, for the corrections decide() sends after them.
   */
  decisionInput(scope: RunScope, role: PlannerRole, context: Record<string, unknown>, output: DecisionOutput): DecisionMessages {
    const messages = decisionMessages(role, scope.run, context);
    return (corrections) => this.context.bound(messages, scope.run, output, corrections);
  }

  model(scope: RunScope) {
    return this.deps.models(scope.run.model);
  }

  /**
   * The agent's tool settings, in the one shape every agent kind shares (`tools.approval`,
   * …); invalid ones fall back to the defaults, loudly.
   */
  async toolSettings(scope: RunScope): Promise<ToolSettings> {
    const agent = await this.deps.agents.get(scope.run.userId, scope.run.agentId);
    try {
      return toolSettingsOf(agent?.settings ?? {});
    } catch (error) {
      scope.log.error({ err: error, agentId: scope.run.agentId }, 'invalid tool settings; using the defaults');
      return toolSettingsOf({ tools: toolSettingsSchema.parse({}) });
    }
  }

  /** The approval policy of a tool in this run (attended or not). */
  toolMode(scope: RunScope, settings: ToolSettings, tool: string): ToolMode {
    return toolModeFor(settings, tool, isAttended(scope.run.trigger));
  }

  /**
   * The run's toolbox: built-ins and the agent's MCP servers, without the tools its
   * approval policy denies for this kind of run (`deny` removes a tool from what the
   * model is offered, and a call to it finds no such tool).
   */
  async toolbox(scope: RunScope, settings?: PlannerSettings): Promise<Toolbox> {
    const resolved = settings ?? (await this.settings(scope));
    const toolbox = await this.deps.toolboxes.toolboxFor({ namespace: { userId: scope.run.userId, agentId: scope.run.agentId }, settings: resolved, run: { runId: scope.run.runId, threadId: scope.run.threadId } });
    for (const missing of toolbox.unavailable) scope.log.warn({ server: missing.server, error: missing.error }, 'MCP server tools unavailable for this run');
    const policy = await this.toolSettings(scope);
    const denied = toolbox.descriptors.filter((tool) => this.toolMode(scope, policy, tool.name) === 'deny').map((tool) => tool.name);
    return denied.length > 0 ? withoutTools(toolbox, denied) : toolbox;
  }

  emit(scope: RunScope, event: DistributiveOmit<PlanEvent, 'threadId' | 'runId' | 'at'>): void {
    this.deps.events.publish({ ...event, threadId: scope.run.threadId, runId: scope.run.runId, at: scope.now() } as VigilEvent);
  }

  /**
   * Make tool calls for the plan, one by one, each recorded with its result. Before each
   * call: the run's tool-call budget and the identical-call breaker (same tool, same
   * arguments, whatever their order). A tripped bound refuses the call (recorded too) and
   * returns the stop; the caller ends the run with it.
   */
  async callTools(
    scope: RunScope,
    meta: PlannerMetadata,
    toolbox: Toolbox,
    calls: ReadonlyArray<PlannerToolCall>,
    where: { planId: string; milestoneId: string | null; stepIndex: number | null },
    /** The decisions of the calls marked `ask`, by call id (see the executor). */
    decisions?: ReadonlyMap<string, ApprovalRecord>,
  ): Promise<{ updates: Pick<PlannerMetadata, 'toolCallCount' | 'toolCallSignatures' | 'toolResults'>; stop: Stop | null; outcomes: Array<{ tool: string; ok: boolean; output: string }> }> {
    let toolCallCount = meta.toolCallCount;
    const toolCallSignatures = { ...meta.toolCallSignatures };
    const toolResults = { ...meta.toolResults };
    const outcomes: Array<{ tool: string; ok: boolean; output: string }> = [];
    const { budgets } = meta;
    for (const call of calls) {
      const id = randomUUID(); // the record's own: a replayed step records its call again
      const startedAt = scope.now();
      const signature = toolCallSignature(call.tool, call.args);
      // Arguments may carry credentials (an api_key, a bearer token): the tool gets them,
      // but the record (served by the API) and the state keep them redacted like the envelope.
      const storedArgs = redact(call.args) as Record<string, unknown>;
      const previous = toolCallSignatures[signature] ?? 0;
      let stop: Stop | null = null;
      if (toolCallCount + 1 > budgets.maxToolCalls) {
        stop = { bound: 'tool_call_budget', reason: `tool-call budget spent: ${toolCallCount} tool calls this run (limit ${budgets.maxToolCalls})` };
      } else if (previous + 1 > budgets.maxIdenticalToolCalls) {
        stop = {
          bound: 'identical_tool_calls',
          reason: `repeated identical tool call: ${call.tool} with the same arguments was already made ${previous} times this run (limit ${budgets.maxIdenticalToolCalls})`,
        };
      }
      if (stop) {
        await this.deps.plans.recordToolCall({ id, ...where, runId: scope.run.runId, tool: call.tool, args: storedArgs, status: 'refused', output: null, error: stop.reason, startedAt, endedAt: scope.now() });
        scope.log.warn({ tool: call.tool, bound: stop.bound }, 'tool call refused by a bound');
        return { updates: { toolCallCount, toolCallSignatures, toolResults }, stop, outcomes };
      }
      toolCallCount += 1;
      toolCallSignatures[signature] = previous + 1;
      let ok = true;
      let output = '';
      let status: 'succeeded' | 'failed' | 'refused' = 'succeeded';
      const invoke = async (args: Record<string, unknown>): Promise<{ ok: boolean; output: string }> => {
        try {
          if (!toolbox.has(call.tool)) throw new Error(`no tool named "${call.tool}"`);
          return { ok: true, output: redactString(await toolbox.call(call.tool, args, scope.config.signal)) };
        } catch (error) {
          if (scope.config.signal?.aborted) throw error;
          return { ok: false, output: redactString(error instanceof Error ? error.message : String(error)) };
        }
      };
      if (call.refusal !== undefined) {
        ok = false;
        output = call.refusal;
        status = 'failed';
      } else if (call.ask) {
        // The chat path's approval code (I16): only an approved call runs, once, with exactly the approved arguments.
        const gate = this.deps.approvals;
        const outcome = gate
          ? await runApprovedCall(gate, call.id ? decisions?.get(call.id) : undefined, call.args, invoke)
          : { ran: false as const, ok: false, output: 'this tool needs a person\'s approval and nobody can be asked here; it was not run', status: 'refused' };
        ok = outcome.ran && outcome.ok;
        output = outcome.output;
        status = outcome.ran ? (outcome.ok ? 'succeeded' : 'failed') : 'refused';
      } else {
        ({ ok, output } = await invoke(call.args));
        status = ok ? 'succeeded' : 'failed';
      }
      // Results too (a server may echo a token): redacted before any cut, so a cut never
      // leaves half a secret; the model, the record and the state all get this text.
      output = redactString(output);
      await this.deps.plans.recordToolCall({
        id,
        ...where,
        runId: scope.run.runId,
        tool: call.tool,
        args: storedArgs,
        status,
        output: ok ? output.slice(0, TOOL_OUTPUT_STORED_CHARS) : null,
        error: ok ? null : output.slice(0, 2000),
        startedAt,
        endedAt: scope.now(),
      });
      scope.log.debug({ tool: call.tool, ok }, 'planner tool call');
      toolResults[id] = { tool: call.tool, ok, output: output.slice(0, TOOL_OUTPUT_STATE_CHARS), stepIndex: where.stepIndex };
      outcomes.push({ tool: call.tool, ok, output: output.slice(0, TOOL_OUTPUT_STATE_CHARS) });
    }
    return { updates: { toolCallCount, toolCallSignatures, toolResults }, stop: null, outcomes };
  }
}

type PlanEvent = Extract<VigilEvent, { type: 'plan.create' | 'step.start' | 'step.end' | 'critic.decide' | 'plan.complete' }>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
