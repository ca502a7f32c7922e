/**
 * The deepest a JSON request body may nest objects and arrays: the body itself is level 1,
 * so `{"metadata":{"a":[]}}` is 3 levels deep. No request vigil understands comes near it
 * (LangGraph metadata, tool arguments, settings), and everything past the door that walks
 * a value recursively (JSON.stringify when a record is stored, zod, the model's client)
 * stays far from the stack's limit: a body 5,000 levels deep used to fail there, as a 500,
 * after part of the request had been written.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `value` nests objects and arrays more than `limit` levels deep (a scalar is
 * level 0). Iterative, with its own stack: the input it exists to refuse cannot exhaust
 * the call stack here.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const current = values.pop();
    const depth = depths.pop() as number;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > limit) return true;
    for (const item of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof item === 'object' && item !== null) {
        values.push(item);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}
