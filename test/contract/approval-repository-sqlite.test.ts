import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe } from 'vitest';
import { openStorage } from '../../src/adapters/storage-factory.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';
import { approvalRepositoryContract } from './approval-repository.contract.js';

const logger = pino({ level: 'silent' });

describe('approval records: SQLite', () => {
  let dataDir: string | undefined;
  beforeAll(async () => {
    dataDir = await makeTempDir('vigil-approvals-');
  });
  afterAll(async () => {
    await removeTempDir(dataDir);
  });
  approvalRepositoryContract('SQLite', () => openStorage({ dataDir: join(dataDir!, 'data'), logger }));
});
