import { useEffect, useState } from 'react';
import { api, type Agent, type Memory } from './api.js';
import { AgentSelect, DeleteButton } from './shared.js';

/** Memories per page: the newest page, more on "Show older memories". */
const MEMORY_PAGE = 100;

export function MemoryView({ agents }: { agents: Agent[] }) {
  const [agentId, setAgentId] = useState(agents[0]?.id ?? 'default');
  const [query, setQuery] = useState('');
  const [memories, setMemories] = useState<Memory[]>([]);
  /**
   * Where the list goes on (older memories), and whose list it is; null on its last page and
   * for a search (one ranked page). It pages the list on screen, not what the search box or
   * the agent picker say now (a query typed but not searched, another agent still loading).
   */
  const [more, setMore] = useState<{ agentId: string; cursor: string } | null>(null);
  const cursor = more?.agentId === agentId ? more.cursor : null;
  const [loadingMore, setLoadingMore] = useState(false);
  const [error, setError] = useState<string | undefined>();

  /** The first page (of the list, or of the search typed), or the list's page after `after`. */
  const page = (of: string, after?: { agentId: string; cursor: string }) => {
    // Only a list has a cursor: the API refuses one beside q.
    const q = !after && query.trim() ? `&q=${encodeURIComponent(query.trim())}` : '';
    const from = after ? `&cursor=${encodeURIComponent(after.cursor)}` : '';
    return api<{ memories: Memory[]; nextCursor: string | null }>('GET', `/api/agents/${encodeURIComponent(of)}/memories?limit=${MEMORY_PAGE}${q}${from}`);
  };
  const load = async () => {
    const of = agentId;
    try {
      const first = await page(of);
      setMemories(first.memories);
      setMore(first.nextCursor ? { agentId: of, cursor: first.nextCursor } : null);
      setError(undefined);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
      setMemories([]);
      setMore(null);
    }
  };
  const showOlder = async () => {
    if (!more || !cursor || loadingMore) return;
    setLoadingMore(true);
    try {
      const next = await page(more.agentId, more);
      setMemories((current) => [...current, ...next.memories]);
      setMore(next.nextCursor ? { agentId: more.agentId, cursor: next.nextCursor } : null);
      setError(undefined);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setLoadingMore(false);
    }
  };
  /** A memory deleted (or found already gone) leaves the page; older pages loaded stay. */
  const dropped = (id: string) => setMemories((current) => current.filter((memory) => memory.id !== id));
  useEffect(() => {
    void load();
  }, [agentId]);

  return (
    <main className="page">
      <h1>Memory</h1>
      <form
        className="form inline"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          void load();
        }}
      >
        <label htmlFor="memory-agent">Agent</label>
        <AgentSelect id="memory-agent" agents={agents} value={agentId} onChange={setAgentId} />
        <label htmlFor="memory-query">Search memories</label>
        <input id="memory-query" type="search" value={query} onChange={(event) => setQuery(event.target.value)} />
        <button type="submit">Search</button>
      </form>
      {error && <p role="alert" className="field-error">{error}</p>}
      <ul className="cards">
        {memories.map((memory) => (
          <li key={memory.id} className="card">
            <p>{memory.content}</p>
            <p className="muted">
              {new Date(memory.createdAt).toLocaleString()}
              {memory.origin?.by === 'api' && ' · saved by you'}
              {memory.origin?.by === 'agent' && (
                <>
                  {' · noted by the agent in '}
                  {memory.origin.threadId ? <a href={`#chat/${memory.origin.threadId}`}>a conversation</a> : 'a conversation since deleted'}
                </>
              )}
              {memory.score !== undefined ? ` · score ${memory.score.toFixed(2)}` : ''}
            </p>
            <DeleteButton
              path={`/api/memories/${memory.id}`}
              then={() => dropped(memory.id)}
              gone="That memory was already deleted."
            >
              Delete memory
            </DeleteButton>
          </li>
        ))}
        {memories.length === 0 && !error && <li className="muted">No memories.</li>}
      </ul>
      {cursor && (
        <button type="button" className="secondary show-more" disabled={loadingMore} aria-busy={loadingMore} onClick={() => void showOlder()}>
          Show older memories
        </button>
      )}
    </main>
  );
}
