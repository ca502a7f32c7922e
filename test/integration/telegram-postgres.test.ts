import { describePostgres, postgresTarget } from '../helpers/postgres.js';
import { telegramSuite } from './telegram.suite.js';

const postgres = await postgresTarget();

describePostgres('Telegram channel on PostgreSQL', postgres, () => {
  telegramSuite(() => ({ kind: 'postgres', url: postgres.url }));
});
