import type { StructuredToolInterface } from '@langchain/core/tools';
import { toJsonSchema } from '@langchain/core/utils/json_schema';
import { isInteropZodSchema } from '@langchain/core/utils/types';
import type { Clock, MemoryNamespace, MemoryStore } from '../../app/ports.js';
import { textOf } from '../../domain/message-content.js';
import type { PlannerSettings } from '../../domain/planner/planner-settings.js';
import { createBuiltInTools, type ToolRun } from './built-in-tools.js';
import type { McpClientPool } from './mcp-client-pool.js';

export interface ToolDescriptor {
  name: string;
  description: string;
  source: 'built-in' | 'mcp';
  /** The MCP server it comes from. */
  server: string | null;
  /** JSON schema of its arguments. */
  parameters: Record<string, unknown>;
}

/** The tools of one run: what the planner may call, and how to call them. */
export interface Toolbox {
  readonly descriptors: readonly ToolDescriptor[];
  /** Configured MCP servers whose tools could not be loaded, and why. */
  readonly unavailable: ReadonlyArray<{ server: string; error: string }>;
  has(name: string): boolean;
  /** Why these arguments do not fit the tool's schema, or null when they do (an edited approval is checked here). */
  validate(name: string, args: Record<string, unknown>): string | null;
  /** The tool's output as text; throws when the tool fails or its arguments are invalid. */
  call(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<string>;
}

export interface ToolboxFactory {
  /** `run`: the run the tools serve (absent when they are only listed). */
  toolboxFor(input: { namespace: MemoryNamespace; settings: PlannerSettings; run?: ToolRun | undefined }): Promise<Toolbox>;
}

/** Built-in tools plus the agent's MCP servers' tools (from the shared pool). */
export class PlannerToolboxFactory implements ToolboxFactory {
  constructor(private readonly deps: { memories: MemoryStore; clock: Clock; mcp: McpClientPool }) {}

  async toolboxFor(input: { namespace: MemoryNamespace; settings: PlannerSettings; run?: ToolRun | undefined }): Promise<Toolbox> {
    const builtIn = createBuiltInTools({ namespace: input.namespace, run: input.run, memories: this.deps.memories, clock: this.deps.clock, fetch: input.settings.fetch });
    const servers = await this.deps.mcp.toolsOf(input.settings.mcpServers);
    const entries: ToolEntry[] = builtIn.map((tool) => ({ tool, descriptor: describe(tool, 'built-in', null) }));
    for (const server of servers) for (const tool of server.tools) entries.push({ tool, descriptor: describe(tool, 'mcp', server.server) });
    return toolboxOf(entries, servers.filter((server) => server.error !== undefined).map((server) => ({ server: server.server, error: server.error ?? '' })));
  }
}

type ToolEntry = { tool: StructuredToolInterface; descriptor: ToolDescriptor };

/** A toolbox with more built-in tools (e.g. a chat run's check-in tools, which need its thread). */
export function withTools(toolbox: Toolbox, tools: StructuredToolInterface[]): Toolbox {
  const extra = toolboxOf(tools.map((tool) => ({ tool, descriptor: describe(tool, 'built-in', null) })), []);
  return {
    descriptors: [...toolbox.descriptors, ...extra.descriptors],
    unavailable: toolbox.unavailable,
    has: (name) => extra.has(name) || toolbox.has(name),
    validate: (name, args) => (extra.has(name) ? extra.validate(name, args) : toolbox.validate(name, args)),
    call: (name, args, signal) => (extra.has(name) ? extra.call(name, args, signal) : toolbox.call(name, args, signal)),
  };
}

/** A toolbox without some tools (those an approval policy denies): not offered, and not callable. */
export function withoutTools(toolbox: Toolbox, names: readonly string[]): Toolbox {
  const removed = new Set(names);
  const missing = (name: string) => `no tool named "${name}"`;
  return {
    descriptors: toolbox.descriptors.filter((tool) => !removed.has(tool.name)),
    unavailable: toolbox.unavailable,
    has: (name) => !removed.has(name) && toolbox.has(name),
    validate: (name, args) => (removed.has(name) ? missing(name) : toolbox.validate(name, args)),
    call: async (name, args, signal) => {
      if (removed.has(name)) throw new Error(missing(name));
      return toolbox.call(name, args, signal);
    },
  };
}

function toolboxOf(entries: ToolEntry[], unavailable: Toolbox['unavailable']): Toolbox {
  const byName = new Map(entries.map((entry) => [entry.descriptor.name, entry.tool]));
  return {
    descriptors: entries.map((entry) => entry.descriptor),
    unavailable,
    has: (name) => byName.has(name),
    validate: (name, args) => {
      const tool = byName.get(name);
      if (!tool) return `no tool named "${name}"`;
      const schema: unknown = tool.schema;
      if (!isInteropZodSchema(schema)) return null; // an MCP tool's JSON schema: its server checks the call
      const checked = (schema as { safeParse(value: unknown): { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } } }).safeParse(args);
      return checked.success ? null : (checked.error?.issues ?? []).map((issue) => `${issue.path.map(String).join('.') || '(arguments)'}: ${issue.message}`).join('; ');
    },
    call: async (name, args, signal) => {
      const tool = byName.get(name);
      if (!tool) throw new Error(`no tool named "${name}"`);
      const output: unknown = await tool.invoke(args, signal ? { signal } : {});
      return outputText(output);
    },
  };
}

function describe(tool: StructuredToolInterface, source: ToolDescriptor['source'], server: string | null): ToolDescriptor {
  const schema: unknown = tool.schema;
  const parameters = isInteropZodSchema(schema) ? toJsonSchema(schema) : schema;
  return { name: tool.name, description: tool.description, source, server, parameters: (parameters ?? {}) as Record<string, unknown> };
}

/** MCP tools answer content blocks; built-ins answer JSON text. */
function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) {
    const text = textOf(output);
    return text || JSON.stringify(output);
  }
  if (output && typeof output === 'object' && 'content' in output) return outputText((output as { content: unknown }).content);
  return JSON.stringify(output) ?? '';
}
