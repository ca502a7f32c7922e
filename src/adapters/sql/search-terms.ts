/**
 * Turns a person's text into full-text query terms that cannot be misread as query
 * syntax: only runs of letters, marks and digits survive, so quotes, parentheses, `*`,
 * `NEAR(`, `:`, `&`, `|`, `!` and the like are separators, never operators.
 */
const WORD = /[\p{L}\p{N}][\p{L}\p{M}\p{N}]*/gu;
/** Enough words for any sensible query; bounds the SQL a very long message builds. */
const MAX_TERMS = 32;
const MAX_TERM_LENGTH = 64;

export function searchTerms(query: string): string[] {
  const words = query.normalize('NFKC').toLowerCase().match(WORD) ?? [];
  const unique = [...new Set(words.filter((word) => word.length <= MAX_TERM_LENGTH))];
  return unique.slice(0, MAX_TERMS);
}

/**
 * FTS5 MATCH expression: each term a quoted string (a phrase, never an operator, so even
 * "or" or "near" is a plain word), any of them may match; bm25 ranks documents that
 * match more, and rarer, terms higher.
 */
export function fts5MatchExpression(terms: readonly string[]): string {
  return terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(' OR ');
}
