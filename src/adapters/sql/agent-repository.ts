import type { Selectable } from 'kysely';
import type { AgentChanges, AgentKind, AgentRecord, AgentRepository, Iso, NewAgent } from '../../app/ports.js';
import { VigilError } from '../../domain/errors.js';
import type { AgentsTable, SqlContext } from './database.js';
import { deleteAgentOwnedRows } from './owned-rows.js';
import { decodeJsonRecord, encodeJson, isoForDatabase, isoFromDatabase } from './values.js';

export class SqlAgentRepository implements AgentRepository {
  readonly #context: SqlContext;

  constructor(context: SqlContext) {
    this.#context = context;
  }

  async create(agent: NewAgent, now: Iso): Promise<AgentRecord> {
    const at = isoForDatabase(now);
    // ON CONFLICT DO NOTHING detects the duplicate the same way on both backends, writes
    // nothing, and (unlike catching the error) leaves an enclosing PostgreSQL
    // transaction usable.
    const row = await this.#context.db
      .insertInto('agents')
      .values({
        user_id: agent.userId,
        id: agent.id,
        name: agent.name,
        kind: agent.kind,
        system_prompt: agent.systemPrompt,
        model: agent.model,
        settings: encodeJson(agent.settings),
        created_at: at,
        updated_at: at,
      })
      .onConflict((conflict) => conflict.columns(['user_id', 'id']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (row === undefined) throw new VigilError('AGENT_EXISTS', `an agent with id "${agent.id}" already exists`);
    return toAgentRecord(row);
  }

  async get(userId: string, id: string): Promise<AgentRecord | undefined> {
    const row = await this.#context.db.selectFrom('agents').selectAll().where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
    return row === undefined ? undefined : toAgentRecord(row);
  }

  async updateSetting(userId: string, id: string, key: string, value: unknown, now: Iso): Promise<AgentRecord | undefined> {
    // Read, merge, write in one transaction (FOR UPDATE on PostgreSQL): each feature owns
    // its key, and two features writing theirs at once must not lose either.
    return this.#context.transaction(async (trx) => {
      const row = await trx
        .selectFrom('agents')
        .selectAll()
        .where('user_id', '=', userId)
        .where('id', '=', id)
        .$if(this.#context.dialect === 'postgres', (query) => query.forUpdate())
        .executeTakeFirst();
      if (row === undefined) return undefined;
      const settings = { ...decodeJsonRecord(row.settings), [key]: value };
      const updated = await trx
        .updateTable('agents')
        .set({ settings: encodeJson(settings), updated_at: isoForDatabase(now) })
        .where('user_id', '=', userId)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return toAgentRecord(updated);
    });
  }

  async update(userId: string, id: string, changes: AgentChanges, now: Iso): Promise<AgentRecord | undefined> {
    const row = await this.#context.db
      .updateTable('agents')
      .set({
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.systemPrompt !== undefined ? { system_prompt: changes.systemPrompt } : {}),
        ...(changes.model !== undefined ? { model: changes.model } : {}),
        updated_at: isoForDatabase(now),
      })
      .where('user_id', '=', userId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row === undefined ? undefined : toAgentRecord(row);
  }

  async delete(userId: string, id: string): Promise<boolean> {
    return this.#context.transaction(async (trx) => {
      const result = await trx.deleteFrom('agents').where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
      if (result.numDeletedRows === 0n) return false;
      await deleteAgentOwnedRows(trx, userId, id);
      return true;
    });
  }

  async list(userId: string): Promise<AgentRecord[]> {
    const rows = await this.#context.db
      .selectFrom('agents')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    return rows.map(toAgentRecord);
  }
}

function toAgentRecord(row: Selectable<AgentsTable>): AgentRecord {
  return {
    id: row.id,
    userId: row.user_id,
    name: row.name,
    kind: row.kind as AgentKind,
    systemPrompt: row.system_prompt,
    model: row.model,
    settings: decodeJsonRecord(row.settings),
    createdAt: isoFromDatabase(row.created_at),
    updatedAt: isoFromDatabase(row.updated_at),
  };
}
