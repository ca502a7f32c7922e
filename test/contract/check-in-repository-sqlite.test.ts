import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe } from 'vitest';
import { openStorage } from '../../src/adapters/storage-factory.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { checkInRepositoryContract } from './check-in-repository.contract.js';

const logger = pino({ level: 'silent' });

describe('check-in records: SQLite', () => {
  let dataDir: string | undefined;
  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-check-ins-');
  });
  afterAll(async () => {
    await removeTempDir(dataDir);
  });
  checkInRepositoryContract('SQLite', () => openStorage({ dataDir: join(dataDir!, 'data'), logger }));
});
