import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/adapters/logging/create-logger.js';

function loggerWriting(secrets: readonly (string | undefined)[]) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  });
  return { logger: createLogger('debug', stream, { secrets }).logger, lines };
}

describe('configured secrets never reach a log line', () => {
  it('takes them out of any field, nested error messages and stacks included, as written and as JSON escapes them', () => {
    const botToken = '123456789:AAbbccddeeffgghhiijjkkll';
    const quoted = 'a"token\\with-escapes-1234';
    const { logger, lines } = loggerWriting([botToken, quoted, undefined]);
    const cause = new Error(`request to http://127.0.0.1:1/bot${botToken}/sendMessage failed, reason: socket hang up`);
    logger.error({ err: Object.assign(new Error("Network request for 'sendMessage' failed!"), { error: cause }), note: `key ${quoted}` }, 'telegram send failed');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(botToken);
    expect(lines[0]).not.toContain(JSON.stringify(quoted).slice(1, -1));
    const parsed = JSON.parse(lines[0]!) as { err: { error: { message: string } }; note: string };
    expect(parsed.err.error.message).toBe('request to http://127.0.0.1:1/bot[redacted]/sendMessage failed, reason: socket hang up');
    expect(parsed.note).toBe('key [redacted]');
  });

  it('leaves lines alone when no secret is configured', () => {
    const { logger, lines } = loggerWriting([]);
    logger.info({ value: 'plain' }, 'hello');
    expect(JSON.parse(lines[0]!)).toMatchObject({ value: 'plain', msg: 'hello' });
  });
});
