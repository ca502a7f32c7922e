/**
 * Version 1: agents, threads with their message projection, runs, and memories with
 * full-text search.
 */
import type { Migration } from './migration.js';

export const coreMigration: Migration = {
  version: 1,
  name: 'agents_threads_messages_runs_memories',
  statements: {
    sqlite: [
      `CREATE TABLE agents (
        user_id TEXT NOT NULL,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('chat', 'planner')),
        system_prompt TEXT NOT NULL,
        model TEXT,
        settings TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user_id, id)
      )`,
      `CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        title TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_user_activity_at TEXT,
        visible_count INTEGER NOT NULL DEFAULT 0,
        last_visible_preview TEXT,
        last_visible_at TEXT,
        message_count INTEGER NOT NULL DEFAULT 0
      )`,
      `CREATE INDEX threads_user_updated ON threads (user_id, updated_at DESC, id DESC)`,
      `CREATE TABLE thread_messages (
        thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        message_id TEXT NOT NULL,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        additional_kwargs TEXT NOT NULL,
        response_metadata TEXT NOT NULL,
        visibility TEXT NOT NULL CHECK (visibility IN ('user', 'internal')),
        run_id TEXT,
        preview TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (thread_id, seq),
        UNIQUE (thread_id, message_id)
      ) WITHOUT ROWID`,
      `CREATE INDEX thread_messages_visible ON thread_messages (thread_id, seq) WHERE visibility = 'user'`,
      `CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        trigger TEXT NOT NULL,
        meta TEXT NOT NULL,
        correlation_id TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        error_code TEXT,
        error_message TEXT,
        model TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ended_at TEXT
      )`,
      `CREATE INDEX runs_thread_started ON runs (thread_id, started_at)`,
      // An explicit INTEGER PRIMARY KEY: VACUUM may renumber an implicit rowid, which
      // would detach the external-content FTS index from its rows.
      `CREATE TABLE memories (
        row_id INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL
      )`,
      `CREATE INDEX memories_namespace ON memories (user_id, agent_id, created_at)`,
      `CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content,
        content = 'memories',
        content_rowid = 'row_id',
        tokenize = 'porter unicode61 remove_diacritics 2'
      )`,
      `CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content) VALUES (new.row_id, new.content);
      END`,
      `CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.row_id, old.content);
      END`,
      `CREATE TRIGGER memories_fts_update AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.row_id, old.content);
        INSERT INTO memories_fts (rowid, content) VALUES (new.row_id, new.content);
      END`,
    ],
    postgres: [
      `CREATE TABLE agents (
        user_id text NOT NULL,
        id text NOT NULL,
        name text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('chat', 'planner')),
        system_prompt text NOT NULL,
        model text,
        settings jsonb NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, id)
      )`,
      `CREATE TABLE threads (
        id text PRIMARY KEY,
        user_id text NOT NULL,
        agent_id text NOT NULL,
        title text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        last_user_activity_at timestamptz,
        visible_count integer NOT NULL DEFAULT 0,
        last_visible_preview text,
        last_visible_at timestamptz,
        message_count integer NOT NULL DEFAULT 0
      )`,
      `CREATE INDEX threads_user_updated ON threads (user_id, updated_at DESC, id DESC)`,
      // json, not jsonb, for message fields and run meta: json keeps the exact text
      // (key order, duplicate keys, escaped NULs) so metadata comes back bit for bit (I3).
      `CREATE TABLE thread_messages (
        thread_id text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        message_id text NOT NULL,
        type text NOT NULL,
        content json NOT NULL,
        additional_kwargs json NOT NULL,
        response_metadata json NOT NULL,
        visibility text NOT NULL CHECK (visibility IN ('user', 'internal')),
        run_id text,
        preview text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (thread_id, seq),
        UNIQUE (thread_id, message_id)
      )`,
      `CREATE INDEX thread_messages_visible ON thread_messages (thread_id, seq) WHERE visibility = 'user'`,
      `CREATE TABLE runs (
        id text PRIMARY KEY,
        thread_id text NOT NULL,
        user_id text NOT NULL,
        agent_id text NOT NULL,
        trigger text NOT NULL,
        meta json NOT NULL,
        correlation_id text NOT NULL,
        status text NOT NULL,
        reason text,
        error_code text,
        error_message text,
        model text NOT NULL,
        requested_at timestamptz NOT NULL,
        started_at timestamptz NOT NULL,
        ended_at timestamptz
      )`,
      `CREATE INDEX runs_thread_started ON runs (thread_id, started_at)`,
      `CREATE TABLE memories (
        id text PRIMARY KEY,
        user_id text NOT NULL,
        agent_id text NOT NULL,
        content text NOT NULL,
        created_at timestamptz NOT NULL,
        search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
      )`,
      `CREATE INDEX memories_namespace ON memories (user_id, agent_id, created_at)`,
      `CREATE INDEX memories_search ON memories USING GIN (search)`,
    ],
  },
};
