import { randomUUID } from 'node:crypto';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { Logger } from 'pino';
import type { ApprovalGate } from '../../app/approvals/approval-ports.js';
import { toolCallSignature } from '../../domain/planner/loop-bounds.js';
import { redact, redactString } from '../../domain/redaction.js';
import { outcomeForModel, type ApprovalRecord } from '../../domain/tools/approval.js';
import { awaitStepApproval, runApprovedCall, unaskableCall } from '../tools/tool-approval.js';
import { approvalTimeoutFor, isAttended, toolModeFor, type ToolMode } from '../../domain/tools/tool-settings.js';
import { runSettingsOf, type ActiveRunSettings } from '../run-settings.js';
import type { ToolSchema } from '../context/token-counter.js';
import type { ChatToolboxSource, RunTools } from './chat-toolbox.js';

/**
 * The chat agent's bounded tool loop: respond (model) → tools → respond, until the model
 * answers in text. Calls of one step run in parallel; a throwing tool becomes an error
 * tool message; arguments and results are redacted before they are stored; the steps of
 * one turn and identical calls are bounded (I9); a call the policy marks `ask` waits for a
 * person through LangGraph's interrupt(), durably in the checkpoint, and runs only once
 * approved, exactly once, with exactly the approved arguments (I16).
 */
export const TOOLS_NODE = 'tools';

/** The longest tool result the model (and the history) receives. */
const MAX_RESULT_CHARS = 16_000;

export interface ToolLoopDependencies {
  tools: ChatToolboxSource;
  /** Absent: a tool that asks for approval is refused (nothing can ask a person). */
  approvals?: ApprovalGate;
  logger: Logger;
}

/** `invalid`: why the model's arguments could not be read (LangChain's invalid_tool_calls); such a call is answered, never run. */
type ToolCall = { id?: string; name: string; args: Record<string, unknown>; invalid?: string };

export type { ToolApprovalInterrupt } from '../tools/tool-approval.js';

export class ToolLoop {
  constructor(private readonly deps: ToolLoopDependencies) {}

  /**
   * The model with the run's tools bound, or the model alone: when the agent offers no
   * tools, the model cannot call tools, or the turn used up its steps (I9: it must answer).
   */
  async bindModel(model: BaseChatModel, messages: readonly BaseMessage[], run: ActiveRunSettings): Promise<BaseChatModel | ReturnType<NonNullable<BaseChatModel['bindTools']>>> {
    return bindTools(model, await this.offeredTools(model, messages, run));
  }

  /**
   * The tools this call binds: none when the agent offers no tools, the model cannot call
   * tools, or the turn used up its steps (I9: it must answer).
   */
  async offeredTools(model: BaseChatModel, messages: readonly BaseMessage[], run: ActiveRunSettings): Promise<ToolSchema[]> {
    if (typeof model.bindTools !== 'function') return [];
    const tools = await this.deps.tools.forAgent(run.userId, run.agentId, run);
    if (!tools) return [];
    if (toolStepsOfTurn(messages) >= tools.settings.maxSteps) return [];
    const attended = isAttended(run.trigger);
    return tools.toolbox.descriptors.filter((tool) => toolModeFor(tools.settings, tool.name, attended) !== 'deny').map(({ name, description, parameters }) => ({ name, description, parameters }));
  }

  /** After the model: its tool calls go to the tools node, within the turn's step bound (I9). */
  async route(messages: readonly BaseMessage[], run: ActiveRunSettings): Promise<'tools' | 'end'> {
    const last = messages.at(-1);
    if (!last || !AIMessage.isInstance(last) || callsOf(last).length === 0) return 'end';
    const tools = await this.deps.tools.forAgent(run.userId, run.agentId);
    if (!tools) return 'end';
    return toolStepsOfTurn(messages) > tools.settings.maxSteps ? 'end' : 'tools';
  }

  /** The tools node. */
  async runTools(messages: readonly BaseMessage[], config: RunnableConfig): Promise<BaseMessage[]> {
    const run = runSettingsOf(config);
    const log = this.deps.logger.child({ threadId: run.threadId, runId: run.runId });
    const last = messages.at(-1);
    if (!last || !AIMessage.isInstance(last) || !last.id) return [];
    const calls = callsOf(last).map((call) => ({ ...call, id: call.id ?? randomUUID() }));
    if (calls.length === 0) return [];
    const tools = await this.deps.tools.forAgent(run.userId, run.agentId, run);
    if (!tools) return calls.map((call) => toolMessage(call, 'the agent no longer exists', 'error', { status: 'failed' }));
    const attended = isAttended(run.trigger);
    const earlier = signaturesOfTurn(messages.slice(0, -1));
    const plans = calls.map((call) => this.plan(call, tools, attended, earlier));

    const asks = plans.filter((plan) => plan.mode === 'ask' && plan.refusal === undefined);
    let decided = new Map<string, ApprovalRecord>();
    if (asks.length > 0) {
      const gate = this.deps.approvals;
      if (!gate) {
        for (const plan of asks) plan.refusal = 'this tool needs a person\'s approval and nobody can be asked here';
      } else {
        // Throws (interrupt) while any call is pending; the step runs again once all are decided.
        decided = await awaitStepApproval(
          gate,
          {
            run,
            step: last.id,
            attended,
            calls: asks.map((plan) => ({ toolCallId: plan.call.id, tool: plan.call.name, args: plan.call.args, timeoutMs: approvalTimeoutFor(tools.settings, plan.call.name, attended) })),
          },
          log,
        );
      }
    }
    return Promise.all(plans.map((plan) => this.execute(plan, tools, decided.get(plan.call.id), config, log)));
  }

  private plan(call: ToolCall & { id: string }, tools: RunTools, attended: boolean, earlier: Map<string, number>): CallPlan {
    const mode = toolModeFor(tools.settings, call.name, attended);
    if (call.invalid !== undefined) {
      return { call, mode, status: 'invalid', refusal: `the arguments of this ${call.name} call are not valid JSON (${call.invalid}); it was not run. Call it again with a JSON object as its arguments.` };
    }
    if (!tools.toolbox.has(call.name)) return { call, mode, refusal: `there is no tool named "${call.name}"` };
    if (mode === 'deny') return { call, mode, refusal: `the tool "${call.name}" is not permitted for this agent` };
    const repeats = earlier.get(toolCallSignature(call.name, call.args)) ?? 0;
    if (repeats >= tools.settings.maxIdenticalCalls) {
      return { call, mode, refusal: `refused: this exact ${call.name} call was already made ${repeats} times in this turn; use its earlier result` };
    }
    if (mode === 'ask') {
      // A call that could not run as asked is not put to a person (who could only approve a
      // failure): the model gets the schema's complaint at once, as an allowed call's would.
      const refusal = unaskableCall(tools.toolbox, call.name, call.args);
      if (refusal !== null) return { call, mode, status: 'invalid', refusal };
    }
    return { call, mode };
  }

  private async execute(plan: CallPlan, tools: RunTools, record: ApprovalRecord | undefined, config: RunnableConfig, log: Logger): Promise<ToolMessage> {
    const { call } = plan;
    if (plan.refusal !== undefined) return toolMessage(call, plan.refusal, 'error', { status: plan.status ?? 'refused' });
    if (plan.mode !== 'ask') return this.invoke(call, call.args, tools, config, log);
    const outcome = await runApprovedCall(this.deps.approvals!, record, call.args, async (args) => {
      const result = await this.invoke(call, args, tools, config, log);
      return { ok: result.status !== 'error', output: String(result.content) };
    });
    const meta = { status: outcome.status, ...(outcome.approvalId ? { approvalId: outcome.approvalId } : {}), ...(outcome.args ? { args: outcome.args } : {}) };
    return toolMessage(call, outcome.output, outcome.ran && outcome.ok ? 'success' : 'error', meta);
  }

  private async invoke(call: ToolCall & { id: string }, args: Record<string, unknown>, tools: RunTools, config: RunnableConfig, log: Logger): Promise<ToolMessage> {
    try {
      const output = await tools.toolbox.call(call.name, args, config.signal);
      return toolMessage(call, output, 'success', { status: 'succeeded', args });
    } catch (error) {
      if (config.signal?.aborted) throw error;
      const message = error instanceof Error ? error.message : String(error);
      log.info({ tool: call.name, toolCallId: call.id, error: redactString(message).slice(0, 500) }, 'a tool call failed; the model is told');
      return toolMessage(call, `the tool failed: ${message}`, 'error', { status: 'failed', args });
    }
  }
}

interface CallPlan {
  call: ToolCall & { id: string };
  mode: ToolMode;
  refusal?: string;
  /** The recorded status of a refused call, when not `refused`. */
  status?: string;
}

function toolMessage(call: ToolCall & { id: string }, content: string, status: 'success' | 'error', meta: { status: string; approvalId?: string; args?: Record<string, unknown> }): ToolMessage {
  const text = redactString(content);
  return new ToolMessage({
    id: randomUUID(),
    tool_call_id: call.id,
    name: call.name,
    status,
    content: text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}\n[cut at ${MAX_RESULT_CHARS} characters]` : text,
    // What history shows of the call (redacted): part of the agent's turn, never the person's.
    additional_kwargs: { tool_name: call.name, tool_arguments: redact(meta.args ?? call.args), tool_status: meta.status, ...(meta.approvalId ? { approval_id: meta.approvalId } : {}) },
  });
}

/** The messages since the turn's task (the last human message). */
function turnOf(messages: readonly BaseMessage[]): readonly BaseMessage[] {
  let start = messages.length;
  while (start > 0 && messages[start - 1]!.getType() !== 'human') start -= 1;
  return messages.slice(start);
}

/**
 * A reply's tool calls, those whose arguments LangChain could not parse (invalid_tool_calls)
 * included: they are answered like any other call, and count toward the turn's bounds (I9),
 * or a model that keeps sending unreadable calls would never be stopped.
 */
function callsOf(message: AIMessage): ToolCall[] {
  const valid: ToolCall[] = (message.tool_calls ?? []).map((call) => ({ ...(call.id ? { id: call.id } : {}), name: call.name, args: (call.args ?? {}) as Record<string, unknown> }));
  // The unreadable text is kept (shown in history, redacted, and part of the call's signature for maxIdenticalCalls).
  const invalid: ToolCall[] = (message.invalid_tool_calls ?? []).map((call) => ({
    ...(call.id ? { id: call.id } : {}),
    name: call.name ?? 'unknown',
    args: { invalid_arguments: (call.args ?? '').slice(0, 500) },
    invalid: (call.error ?? 'unparseable arguments').slice(0, 200),
  }));
  return [...valid, ...invalid];
}

const hasCalls = (message: BaseMessage): boolean => {
  const fields = message as Partial<AIMessage>;
  return (fields.tool_calls?.length ?? 0) > 0 || (fields.invalid_tool_calls?.length ?? 0) > 0;
};

/** Where a list's tool calls are, which calls have results, and whether any call is invalid. */
interface ToolScan {
  /** The list scanned (a copy), to tell that a later list extends it. */
  readonly snapshot: readonly BaseMessage[];
  readonly calls: readonly number[];
  readonly results: ReadonlySet<string>;
  readonly invalid: boolean;
}

/** The last scan of a thread's list, by its first message (a thread's list keeps its first message). */
const toolScans = new WeakMap<object, ToolScan>();

/**
 * The list's tool calls and results: the last scan of a list this one extends (the same
 * instances up to its length: a pointer compare each), plus the messages after it.
 */
function toolScanOf(messages: readonly BaseMessage[]): ToolScan {
  const first = messages[0];
  const previous = first === undefined ? undefined : toolScans.get(first);
  let from = 0;
  let calls: number[] = [];
  let results = new Set<string>();
  let invalid = false;
  if (previous !== undefined && previous.snapshot.length <= messages.length) {
    let same = 0;
    while (same < previous.snapshot.length && messages[same] === previous.snapshot[same]) same++;
    if (same === previous.snapshot.length) {
      from = same;
      calls = [...previous.calls];
      results = new Set(previous.results);
      invalid = previous.invalid;
    }
  }
  for (let index = from; index < messages.length; index++) {
    const message = messages[index]!;
    if (hasCalls(message)) {
      calls.push(index);
      if (((message as Partial<AIMessage>).invalid_tool_calls?.length ?? 0) > 0) invalid = true;
    } else if (ToolMessage.isInstance(message)) results.add(message.tool_call_id);
  }
  const scan = { snapshot: messages.slice(), calls, results, invalid };
  if (first !== undefined) toolScans.set(first, scan);
  return scan;
}

/** How many model replies of this turn asked for tools. */
export function toolStepsOfTurn(messages: readonly BaseMessage[]): number {
  return turnOf(messages).filter((message) => AIMessage.isInstance(message) && hasCalls(message)).length;
}

function signaturesOfTurn(messages: readonly BaseMessage[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const message of turnOf(messages)) {
    if (!AIMessage.isInstance(message)) continue;
    for (const call of callsOf(message)) {
      const signature = toolCallSignature(call.name, call.args ?? {});
      counts.set(signature, (counts.get(signature) ?? 0) + 1);
    }
  }
  return counts;
}

/**
 * The model's input with every tool call answered: a call left without a result (a person
 * wrote while it waited for approval, which supersedes it; or a bound ended the turn) gets
 * a result saying so, right after the message that made it, as providers require. A call
 * whose arguments were not valid JSON (invalid_tool_calls) is shown to the model as a call
 * with empty arguments, so that its error result answers a call the provider knows of (a
 * provider's converter sends only `tool_calls`). For the model call only: the saved history
 * keeps what happened.
 */
export function closeDanglingToolCalls(messages: readonly BaseMessage[]): BaseMessage[] {
  // Most threads: no tool call at all, or none left open; the list is handed on as it is
  // (nothing downstream changes it). Known from the scan of the turn before, extended by
  // the messages since (toolScanOf): a property read per message of a long thread cost
  // half a millisecond a turn at 10,000 messages.
  const scan = toolScanOf(messages);
  if (scan.calls.length === 0) return messages as BaseMessage[];
  if (!scan.invalid && scan.calls.every((index) => callsOf(messages[index] as AIMessage).every((call) => !call.id || scan.results.has(call.id)))) return messages as BaseMessage[];
  const answered = new Set(messages.filter(ToolMessage.isInstance).map((message) => message.tool_call_id));
  const result: BaseMessage[] = [];
  for (const [index, original] of messages.entries()) {
    if (!AIMessage.isInstance(original) || !hasCalls(original)) {
      result.push(original);
      continue;
    }
    const message = withInvalidCallsAsCalls(original);
    result.push(message);
    const open = message.tool_calls!.filter((call) => call.id && !answered.has(call.id));
    if (open.length === 0) continue;
    const laterHuman = messages.slice(index + 1).some((later) => later.getType() === 'human');
    for (const call of open) {
      const content = laterHuman
        ? outcomeForModel({ status: 'superseded', tool: call.name, message: null })
        : `This ${call.name} call was not run: the turn reached its tool step limit.`;
      result.push(new ToolMessage({ id: `closed-${call.id}`, tool_call_id: call.id!, name: call.name, status: 'error', content }));
    }
  }
  return result;
}

function withInvalidCallsAsCalls(message: AIMessage): AIMessage {
  const invalid = (message.invalid_tool_calls ?? []).filter((call) => call.id);
  if (invalid.length === 0) return message;
  return new AIMessage({
    ...(message.id ? { id: message.id } : {}),
    content: message.content,
    name: message.name,
    additional_kwargs: message.additional_kwargs,
    response_metadata: message.response_metadata,
    tool_calls: [...(message.tool_calls ?? []), ...invalid.map((call) => ({ id: call.id!, name: call.name ?? 'unknown', args: {}, type: 'tool_call' as const }))],
    invalid_tool_calls: [],
  });
}

/** The model with these tools bound (as OpenAI-style function definitions), or the model alone when there are none. */
export function bindTools(model: BaseChatModel, tools: readonly ToolSchema[]): BaseChatModel | ReturnType<NonNullable<BaseChatModel['bindTools']>> {
  if (tools.length === 0 || typeof model.bindTools !== 'function') return model;
  return model.bindTools(tools.map((tool) => ({ type: 'function' as const, function: { name: tool.name, description: tool.description, parameters: tool.parameters } })));
}

/** Why a chat run stopped early (I9): its last reply still asks for tools, so a bound ended the turn. */
export function toolLoopEndReason(values: unknown): string | null {
  const messages = (values as { messages?: unknown } | null)?.messages;
  const last = Array.isArray(messages) ? (messages.at(-1) as BaseMessage | undefined) : undefined;
  return last && AIMessage.isInstance(last) && hasCalls(last) ? 'the turn reached its tool step limit' : null;
}
