import { randomUUID } from 'node:crypto';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';
import type { Clock, MemoryNamespace, MemoryStore } from '../../app/ports.js';
import type { FetchToolSettings } from '../../domain/planner/planner-settings.js';
import { fetchWithinLimits } from './http-fetch.js';

export const BUILT_IN_TOOL_NAMES = ['memory_search', 'memory_write', 'current_time', 'http_fetch'] as const;

/** The run tools serve: what memory_write saves is recorded as the agent's, from it. */
export interface ToolRun {
  runId: string;
  threadId: string;
}

export interface BuiltInToolContext {
  /** The run's (user, agent) memory namespace: the tools never reach another. */
  namespace: MemoryNamespace;
  /** Absent when the tools are only listed. */
  run?: ToolRun | undefined;
  memories: MemoryStore;
  clock: Clock;
  fetch: FetchToolSettings;
}

/**
 * The tools every planner has. They close over the run's namespace and settings; they
 * are built per run and never stored in graph state (I10).
 */
export function createBuiltInTools(context: BuiltInToolContext): StructuredToolInterface[] {
  const { namespace, memories, clock, run } = context;
  const tools: StructuredToolInterface[] = [
    tool(
      async ({ query, limit }) => {
        const hits = await memories.search(namespace, query, { limit: limit ?? 5 });
        return JSON.stringify(hits.map((hit) => ({ id: hit.id, content: hit.content, score: Number(hit.score.toFixed(4)) })));
      },
      {
        name: 'memory_search',
        description: "Full-text search of this agent's long-term memory about the person. Returns matching memories, best first.",
        schema: z.object({ query: z.string().min(1).max(1000), limit: z.number().int().min(1).max(20).optional() }),
      },
    ),
    tool(
      async ({ content }) => {
        if (!run) throw new Error('memory_write runs only within a run');
        const memory = await memories.add(namespace, { id: randomUUID(), content, origin: { by: 'agent', runId: run.runId, threadId: run.threadId } }, clock.now().toISOString());
        return JSON.stringify({ saved: true, id: memory.id });
      },
      {
        name: 'memory_write',
        description: "Save a fact to this agent's long-term memory about the person, for later runs.",
        schema: z.object({ content: z.string().trim().min(1).max(4000) }),
      },
    ),
    tool(
      async ({ timeZone }) => {
        const now = clock.now();
        const zone = timeZone ?? 'UTC';
        let local: string;
        try {
          local = new Intl.DateTimeFormat('en-GB', { timeZone: zone, dateStyle: 'full', timeStyle: 'long' }).format(now);
        } catch {
          throw new Error(`unknown time zone "${zone}"`);
        }
        return JSON.stringify({ iso: now.toISOString(), timeZone: zone, local });
      },
      {
        name: 'current_time',
        description: 'The current date and time, in UTC or an IANA time zone such as "Europe/Paris".',
        schema: z.object({ timeZone: z.string().max(64).optional() }),
      },
    ),
  ];
  if (context.fetch.allowedHosts.length > 0) {
    tools.push(
      tool(
        async ({ url }, config) => JSON.stringify(await fetchWithinLimits(url, context.fetch, config?.signal)),
        {
          name: 'http_fetch',
          description: `GET a web page or API over HTTP(S). Only these hosts are reachable: ${context.fetch.allowedHosts.join(', ')}. Bodies over ${context.fetch.maxBytes} bytes are cut.`,
          schema: z.object({ url: z.string().min(1).max(4000) }),
        },
      ),
    );
  }
  return tools;
}
