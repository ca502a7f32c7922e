import { autonomyBudgetSuite } from './autonomy-budget.suite.js';

autonomyBudgetSuite(() => ({ kind: 'sqlite' }));
