/**
 * What retention needs to find old schedule fires and old LangGraph-protocol run rows
 * without reading their whole tables: both grew for as long as a server ran (a schedule
 * firing every minute adds half a million fires a year).
 */
import type { Migration } from './migration.js';

const STATEMENTS = [`CREATE INDEX schedule_fires_ended ON schedule_fires (ended_at)`, `CREATE INDEX protocol_runs_created ON protocol_runs (created_at)`];

export const retentionFireProtocolIndexesMigration: Migration = {
  version: 22,
  name: 'retention-fire-protocol-indexes',
  statements: { sqlite: STATEMENTS, postgres: STATEMENTS },
};
