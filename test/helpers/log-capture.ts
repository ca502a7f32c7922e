import { Writable } from 'node:stream';
import { createLogger, type LoggerBundle } from '../../src/adapters/logging/create-logger.js';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/**
 * A real pino logger whose JSON lines a test can read back: parsed, and as written (a
 * line with a key twice parses fine, keeping the last; only the raw text shows it).
 */
export function captureLogs(level = 'debug'): LoggerBundle & { lines: LogLine[]; raw: string[] } {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        raw.push(line);
        lines.push(JSON.parse(line) as LogLine);
      }
      callback();
    },
  });
  return { ...createLogger(level, stream), lines, raw };
}

/**
 * The keys of a JSON object's top level, in order, duplicates included: a small
 * tokenizer over the raw text (JSON.parse would silently keep the last of a pair).
 */
export function topLevelKeys(json: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let index = 0; index < json.length; index++) {
    const char = json[index];
    if (char === '"') {
      let end = index + 1;
      while (json[end] !== '"') end += json[end] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) keys.push(JSON.parse(json.slice(index, end + 1)) as string);
      expectKey = false;
      index = end;
    } else if (char === '{' || char === '[') {
      depth++;
      expectKey = char === '{' && depth === 1;
    } else if (char === '}' || char === ']') depth--;
    else if (char === ',' && depth === 1) expectKey = true;
  }
  return keys;
}
