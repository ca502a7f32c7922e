import { redact, redactString } from '../redaction.js';

/** A tool call as people see it: name and arguments, secrets redacted (never the raw arguments). */
export interface ToolCallView {
  id: string | null;
  name: string;
  arguments: unknown;
}

/** The redacted view of a model message's tool calls (LangChain's `tool_calls`). */
export function toolCallViews(calls: ReadonlyArray<{ id?: string | undefined; name: string; args?: unknown }>): ToolCallView[] {
  return calls.map((call) => ({ id: call.id ?? null, name: call.name, arguments: redact(call.args ?? {}) }));
}

/**
 * The views stored in a projected message's `tool_calls` kwarg: vigil's own redacted form,
 * or a provider's raw form (function.name / function.arguments) from an older row.
 */
export function storedToolCallViews(value: unknown): ToolCallView[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry): ToolCallView[] => {
    if (!entry || typeof entry !== 'object') return [];
    const call = entry as { id?: unknown; name?: unknown; arguments?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const name = typeof call.name === 'string' ? call.name : typeof call.function?.name === 'string' ? call.function.name : undefined;
    if (name === undefined) return [];
    const args = 'arguments' in call ? call.arguments : typeof call.function?.arguments === 'string' ? redactString(call.function.arguments) : null;
    return [{ id: typeof call.id === 'string' ? call.id : null, name, arguments: args }];
  });
}
