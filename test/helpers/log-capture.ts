import { Writable } from 'node:stream';
import { createLogger, type LoggerBundle } from '../../src/adapters/logging/create-logger.js';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** A real pino logger whose JSON lines a test can read back. */
export function captureLogs(level = 'debug'): LoggerBundle & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as LogLine);
      callback();
    },
  });
  return { ...createLogger(level, stream), lines };
}
