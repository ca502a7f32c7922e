/**
 * PostgreSQL memory search finds what SQLite's finds. Until now the `search` column was
 * `to_tsvector('english', content)`, which keeps an email address, URL, host, path or
 * version as one lexeme (`alice@example.com`, `v1.2.3-beta`), so no part of it (`alice`,
 * `1.2.3`) found the memory; kept accents (`café` was not found by `cafe`); and dropped
 * English stop words, so a query of stop words only matched nothing. SQLite's FTS5
 * (`unicode61 remove_diacritics 2`) splits at every punctuation mark, folds accents and
 * keeps every word.
 *
 * Nothing here needs an extension (`unaccent` needs CREATE EXTENSION, which a user's
 * database may not grant): a SQL function folds and splits the text, a text search
 * configuration stems English without a stop-word list, and both need only the CREATE
 * privilege on the schema that creating the tables needed. The search column is made
 * again from them (PostgreSQL cannot change a generated column's expression before 17),
 * which computes it for every existing memory: they are all searchable after this.
 * The query side (memory-store.ts) folds its words with the same function, so a query and
 * a memory are always cut into words alike.
 *
 * vigil_memory_search_text, in order: drops free-standing combining accents (U+0300–036F,
 * as FTS5 does whatever the letter); decomposes (NFKD) and drops the accents of Latin
 * letters only (`é` → `e`, `ł` stays, as FTS5's table does; Cyrillic `й` and Greek `ά`
 * keep theirs, they are other letters there), and composes again (NFC, so Hangul and
 * accented non-Latin letters are whole letters for the parser); then turns ASCII and
 * Latin-1 punctuation and symbols, general punctuation, arrows and other symbols, CJK
 * punctuation and emoji into spaces, so a compound token is its words. The classes are
 * explicit code point ranges, never [[:alnum:]], whose meaning depends on the database's
 * locale. normalize() needs a UTF8 database (PostgreSQL 13 or later).
 *
 * SQLite is unchanged: FTS5 already does all of this.
 */
import type { Migration } from './migration.js';

const FOLD_AND_SPLIT = String.raw`CREATE FUNCTION vigil_memory_search_text(content text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$
    SELECT regexp_replace(
      normalize(regexp_replace(normalize(regexp_replace(content, '[\u0300-\u036f]+', '', 'g'), NFKD), '(?<=[A-Za-z\u00c0-\u024f\u1e00-\u1eff])[\u0300-\u036f]+', '', 'g'), NFC),
      '[!-/:-@[-${'`'}{-~\u00a1-\u00bf\u00d7\u00f7\u2000-\u206f\u2190-\u2bff\u3000-\u3004\u3008-\u3020\U0001f000-\U0001faff]+', ' ', 'g')
  $$`;

export const memorySearchWordsMigration: Migration = {
  version: 24,
  name: 'memory-search-words',
  statements: {
    sqlite: [],
    postgres: [
      FOLD_AND_SPLIT,
      // English stemming as the built-in english configuration does it, without its stop-word list.
      `CREATE TEXT SEARCH DICTIONARY vigil_english_stem (TEMPLATE = pg_catalog.snowball, Language = english)`,
      `CREATE TEXT SEARCH CONFIGURATION vigil_memory_search (COPY = pg_catalog.english)`,
      `ALTER TEXT SEARCH CONFIGURATION vigil_memory_search ALTER MAPPING REPLACE pg_catalog.english_stem WITH vigil_english_stem`,
      // Drops the column's GIN index with it.
      `ALTER TABLE memories DROP COLUMN search`,
      `ALTER TABLE memories ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('vigil_memory_search', vigil_memory_search_text(content))) STORED`,
      `CREATE INDEX memories_search ON memories USING GIN (search)`,
    ],
  },
};
