/**
 * The checkpoint saver vigil used on SQLite before the thread store (migration 25), kept so
 * the conversion (thread-conversion.ts) can read what it wrote: LangGraph's SqliteSaver
 * (ported to node:sqlite, see ../checkpoint-sqlite-base.ts) with
 *
 *  - checkpoint documents packed against a dictionary (checkpoint-document-codec.ts);
 *  - message lists stored as references into the thread's message log, `checkpoint_messages`
 *    (message-log.ts), and messages in pending writes too;
 *  - channel values of 128 bytes or more stored once per distinct value, by hash, in
 *    `checkpoint_values`.
 *
 * Only what reading and writing that format needs is kept. The checkpoint cache, the gate on
 * the storage's transactions and the holding back of superseded writes were how the running
 * server used it; the conversion runs at open, alone, and tests write the old format with it
 * call by call, which is what the held writes did for any caller that did not ask.
 */
import { createHash } from 'node:crypto';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { Checkpoint, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { NodeSqliteSaver } from '../checkpoint-sqlite-base.js';
import { inSyncTransaction } from '../node-sqlite.js';
import { packCheckpointDocument, unpackCheckpointDocument } from './checkpoint-document-codec.js';
import { MessageLog, type MessageLogLimits } from './message-log.js';
import { rangesOf } from '../message-ranges.js';
import { storedValueHash } from '../stored-reference.js';
import { SQLITE_MESSAGE_LOG_DDL, SqliteMessageLogStore } from './message-log-sqlite.js';

/**
 * Channel values other than message lists (the conversation summary, recalled memories)
 * are stored once per distinct value, by content hash, and a checkpoint keeps the hash:
 * SqliteSaver stores every channel in every checkpoint, so a 2,000-token summary was
 * copied into each of a turn's four checkpoints. (PostgresSaver's checkpoint_blobs does
 * the same per channel version.) Small values stay inline.
 */
const VALUES_DDL = `CREATE TABLE IF NOT EXISTS checkpoint_values (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  hash TEXT NOT NULL,
  type TEXT NOT NULL,
  value BLOB NOT NULL,
  PRIMARY KEY (thread_id, checkpoint_ns, hash)
)`;
/** The key of the reference a checkpoint stores in place of a channel value kept in checkpoint_values. */
export const STORED_VALUE_REF = 'vigil:value';
/** Serialised values below this many bytes stay in the checkpoint. */
const INLINE_VALUE_BYTES = 128;

export class LegacySqliteSaver extends NodeSqliteSaver {
  #log: MessageLog | undefined;
  #insertValue: StatementSync | undefined;
  #readValue: StatementSync | undefined;
  readonly #logLimits: Partial<MessageLogLimits> | undefined;

  constructor(db: DatabaseSync, options: { messageLog?: Partial<MessageLogLimits> } = {}) {
    super(db);
    this.#logLimits = options.messageLog;
  }

  /**
   * Its tables (CREATE TABLE IF NOT EXISTS, as the old server did at every open) and
   * statements: call before anything else, and only on a database that should have them.
   */
  prepare(): void {
    this.setup();
    for (const statement of SQLITE_MESSAGE_LOG_DDL) this.db.exec(statement);
    this.db.exec(VALUES_DDL);
    this.#log = new MessageLog(new SqliteMessageLogStore(this.db), this.serde, this.#logLimits);
    this.#insertValue = this.db.prepare('INSERT OR IGNORE INTO checkpoint_values (thread_id, checkpoint_ns, hash, type, value) VALUES (?, ?, ?, ?, ?)');
    this.#readValue = this.db.prepare('SELECT type, value FROM checkpoint_values WHERE thread_id = ? AND checkpoint_ns = ? AND hash = ?');
  }

  /** getTuple with every message from its row, nothing from or into the log's memory. */
  getTupleFromStorage(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return this.readTuple(config, true);
  }

  override async deleteThread(threadId: string): Promise<void> {
    await super.deleteThread(threadId);
    if (this.#log === undefined) return;
    inSyncTransaction(this.db, () => {
      this.db.prepare('DELETE FROM checkpoint_messages WHERE thread_id = ?').run(threadId);
      this.db.prepare('DELETE FROM checkpoint_values WHERE thread_id = ?').run(threadId);
    });
    this.#log.forgetThread(String(threadId));
  }

  /** Packed against a dictionary of typical checkpoints (see checkpoint-document-codec.ts). */
  protected override storedDocument(document: Uint8Array): Uint8Array {
    return packCheckpointDocument(document);
  }

  protected override loadedDocument(stored: Uint8Array): Uint8Array {
    return unpackCheckpointDocument(stored);
  }

  /** Message lists go to the thread's message log; the checkpoint keeps a reference (see message-log.ts). */
  protected override async prepareForStorage(threadId: string, checkpointNs: string, checkpoint: Checkpoint): Promise<Checkpoint> {
    if (this.#log === undefined) return checkpoint;
    const values = await this.#log.toStored(String(threadId), checkpointNs, checkpoint.channel_values);
    const stored: Record<string, unknown> = { ...values };
    for (const [channel, value] of Object.entries(values)) {
      if (value === undefined || (typeof value !== 'string' && typeof value !== 'object') || value === null || rangesOf(value) !== undefined) continue;
      // Wrapped in an array: stored and loaded as it would be inside the checkpoint's document.
      const [type, dumped] = await this.serde.dumpsTyped([value]);
      const bytes = typeof dumped === 'string' ? new TextEncoder().encode(dumped) : dumped;
      if (bytes.byteLength < INLINE_VALUE_BYTES) continue;
      const hash = createHash('sha256').update(type).update('\0').update(bytes).digest('base64url');
      this.#insertValue!.run(String(threadId), checkpointNs, hash, type, bytes);
      stored[channel] = { [STORED_VALUE_REF]: hash };
    }
    return { ...checkpoint, channel_values: stored };
  }

  protected override async prepareWritesForStorage(threadId: string, checkpointNs: string, values: unknown[]): Promise<unknown[]> {
    return this.#log === undefined ? values : this.#log.toStoredWrites(threadId, checkpointNs, values);
  }

  protected override async restoreWritesFromStorage(threadId: string, checkpointNs: string, values: unknown[], fresh: boolean): Promise<unknown[]> {
    return this.#log === undefined ? values : this.#log.fromStoredWrites(threadId, checkpointNs, values, { fresh });
  }

  protected override async restoreFromStorage(threadId: string, checkpointNs: string, checkpoint: Checkpoint, fresh: boolean): Promise<Checkpoint> {
    if (this.#log === undefined) return checkpoint;
    const values: Record<string, unknown> = { ...(checkpoint.channel_values ?? {}) };
    for (const [channel, value] of Object.entries(values)) {
      const hash = storedValueHash(value, STORED_VALUE_REF);
      if (hash === undefined) continue;
      const row = this.#readValue!.get(String(threadId), checkpointNs, hash) as { type: string; value: Uint8Array } | undefined;
      if (row === undefined) throw new Error(`checkpoint value ${hash} of thread ${threadId} is missing`);
      values[channel] = ((await this.serde.loadsTyped(row.type, row.value)) as unknown[])[0];
    }
    return { ...checkpoint, channel_values: await this.#log.fromStored(String(threadId), checkpointNs, values, { fresh }) };
  }
}
