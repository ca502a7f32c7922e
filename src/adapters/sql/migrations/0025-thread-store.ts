/**
 * Version 25: one store for a thread's messages and checkpoints (issue 10: a thread's cost
 * follows what is new, not its age).
 *
 * Before, a message was kept twice (the history projection `thread_messages`, and the
 * checkpoint saver's message log), and checkpoints were rows in LangGraph's own formats,
 * keyed by the thread's text id repeated in every row and index entry. Now:
 *
 *  - `thread_keys` gives each (thread id, checkpoint namespace) a small integer, the key of
 *    every other row. Keys are never reused (AUTOINCREMENT, an identity column), so what a
 *    process remembers of a key's rows stays true for as long as the key exists, and a
 *    thread deleted and made again with the same id is a new key.
 *  - `thread_messages` holds each version of each message once, numbered in the thread
 *    (`seq`), in the serializer's form packed (message-row-codec.ts). A row the thread's
 *    history shows carries its `visibility`, run and time; every other row (a later version
 *    of a message, a subgraph's messages) has none. History is these rows, so it can no more
 *    fall out of step with the checkpoints than they with each other: both are written in
 *    one transaction. History shows a message id once: the saver's writes check it (one
 *    writer per thread), through an index on a 32-bit hash of the id (`id_hash`, see
 *    message-id-hash.ts) rather than the id itself: an entry of a few bytes, not 40.
 *  - `thread_checkpoints`: a checkpoint is its ids, the thread's last message number when it
 *    was stored (so a message written after it, accepted by a run whose checkpoint never
 *    came, is found without decoding it), and one packed body holding the checkpoint's
 *    skeleton (message lists as ranges of numbers) with its metadata.
 *  - `thread_checkpoint_writes`, `thread_values`: pending writes, and large channel values
 *    stored once per distinct value (the conversation summary).
 *  - `thread_history`, a view: the rows history shows, by thread id (bodies are packed).
 *
 * The old tables are renamed or left as they are here; the conversion of their rows
 * (legacy/thread-conversion.ts) moves what they hold, then drops them.
 */
import type { Migration } from './migration.js';

/**
 * On SQLite the tables are rowid tables with unique indexes, not WITHOUT ROWID: in a WITHOUT
 * ROWID table the row is the key, and a search that passes a row too large for its page (a
 * long reply, a large pending write) reads the whole row, overflow pages and all, to compare
 * keys; one seeded 10,000-message input in thread_checkpoint_writes made every checkpoint
 * read of its thread take 2.5 ms. A rowid table's search compares integers; its index holds
 * the key columns alone.
 */
const sqlite = [
  'ALTER TABLE thread_messages RENAME TO thread_messages_v1',
  `CREATE TABLE thread_keys (
    key INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    UNIQUE (thread_id, checkpoint_ns)
  )`,
  `CREATE TABLE thread_messages (
    thread_key INTEGER NOT NULL REFERENCES thread_keys (key) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    id_hash INTEGER NOT NULL,
    type TEXT NOT NULL,
    body BLOB NOT NULL,
    visibility TEXT CHECK (visibility IN ('user', 'internal')),
    run_id TEXT,
    created_at INTEGER
  )`,
  `CREATE UNIQUE INDEX thread_messages_seq ON thread_messages (thread_key, seq)`,
  `CREATE INDEX thread_messages_history_id ON thread_messages (thread_key, id_hash) WHERE visibility IS NOT NULL`,
  // History as rows (for operators and SQL checks): the bodies are packed, see message-row-codec.ts.
  `CREATE VIEW thread_history AS
    SELECT k.thread_id, m.seq, m.message_id, m.type, m.visibility, m.run_id, m.created_at
    FROM thread_messages m JOIN thread_keys k ON k.key = m.thread_key
    WHERE k.checkpoint_ns = '' AND m.visibility IS NOT NULL`,
  `CREATE TABLE thread_checkpoints (
    thread_key INTEGER NOT NULL REFERENCES thread_keys (key) ON DELETE CASCADE,
    checkpoint_id TEXT NOT NULL,
    parent_id TEXT,
    last_seq INTEGER NOT NULL,
    body BLOB NOT NULL
  )`,
  `CREATE UNIQUE INDEX thread_checkpoints_id ON thread_checkpoints (thread_key, checkpoint_id)`,
  `CREATE TABLE thread_checkpoint_writes (
    thread_key INTEGER NOT NULL REFERENCES thread_keys (key) ON DELETE CASCADE,
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    task_path TEXT NOT NULL
  )`,
  `CREATE UNIQUE INDEX thread_checkpoint_writes_id ON thread_checkpoint_writes (thread_key, checkpoint_id, task_id, idx)`,
  `CREATE TABLE thread_values (
    thread_key INTEGER NOT NULL REFERENCES thread_keys (key) ON DELETE CASCADE,
    hash TEXT NOT NULL,
    type TEXT NOT NULL,
    value BLOB NOT NULL
  )`,
  `CREATE UNIQUE INDEX thread_values_hash ON thread_values (thread_key, hash)`,
];

/**
 * PostgreSQL keeps the same tables with two differences, each worth tens of bytes a turn
 * (a row costs 28 bytes there before its first column, an index entry 12):
 *  - checkpoint ids are `uuid` (16 bytes, not 37): LangGraph makes every checkpoint id a
 *    UUID (uuid6), and a uuid orders as its lowercase text does;
 *  - `created_at` and `id_hash` come before the variable-length columns, where they need no
 *    padding.
 */
const postgres = [
  'ALTER TABLE thread_messages RENAME TO thread_messages_v1',
  // Index names are the schema's: the old table's go with it under names of their own.
  'ALTER INDEX thread_messages_pkey RENAME TO thread_messages_v1_pkey',
  'ALTER INDEX thread_messages_thread_id_message_id_key RENAME TO thread_messages_v1_thread_id_message_id_key',
  'ALTER INDEX thread_messages_visible RENAME TO thread_messages_v1_visible',
  `CREATE TABLE thread_keys (
    key integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    thread_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    UNIQUE (thread_id, checkpoint_ns)
  )`,
  `CREATE TABLE thread_messages (
    thread_key integer NOT NULL REFERENCES thread_keys (key) ON DELETE CASCADE,
    seq integer NOT NULL,
    created_at timestamptz,
    id_hash integer NOT NULL,
    message_id text NOT NULL,
    type text NOT NULL,
    body bytea NOT NULL,
    visibility text CHECK (visibility IN ('user', 'internal')),
    run_id text,
    PRIMARY KEY (thread_key, seq)
  )`,
  `CREATE INDEX thread_messages_history_id ON thread_messages (thread_key, id_hash) WHERE visibility IS NOT NULL`,
  // History as rows (for operators and SQL checks): the bodies are packed, see message-row-codec.ts.
  `CREATE VIEW thread_history AS
    SELECT k.thread_id, m.seq, m.message_id, m.type, m.visibility, m.run_id, m.created_at
    FROM thread_messages m JOIN thread_keys k ON k.key = m.thread_key
    WHERE k.checkpoint_ns = '' AND m.visibility IS NOT NULL`,
  `CREATE TABLE thread_checkpoints (
    thread_key integer NOT NULL REFERENCES thread_keys (key) ON DELETE CASCADE,
    checkpoint_id uuid NOT NULL,
    parent_id uuid,
    last_seq integer NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (thread_key, checkpoint_id)
  )`,
  `CREATE TABLE thread_checkpoint_writes (
    thread_key integer NOT NULL REFERENCES thread_keys (key) ON DELETE CASCADE,
    checkpoint_id uuid NOT NULL,
    task_id text NOT NULL,
    idx integer NOT NULL,
    channel text NOT NULL,
    type text,
    value bytea,
    task_path text NOT NULL,
    PRIMARY KEY (thread_key, checkpoint_id, task_id, idx)
  )`,
  `CREATE TABLE thread_values (
    thread_key integer NOT NULL REFERENCES thread_keys (key) ON DELETE CASCADE,
    hash text NOT NULL,
    type text NOT NULL,
    value bytea NOT NULL,
    PRIMARY KEY (thread_key, hash)
  )`,
];

export const threadStoreMigration: Migration = {
  version: 25,
  name: 'thread-store',
  statements: { sqlite, postgres },
};
