/**
 * What each model call of a run received (token counts per part, the window's first and
 * last message), written with the run's end so the inspector can show it for any reply.
 */
import type { Migration } from './migration.js';

export const runModelInputsMigration: Migration = {
  version: 13,
  name: 'run-model-inputs',
  statements: {
    sqlite: [`ALTER TABLE runs ADD COLUMN model_inputs TEXT`],
    postgres: [`ALTER TABLE runs ADD COLUMN model_inputs json`],
  },
};
