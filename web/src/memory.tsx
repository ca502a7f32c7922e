import { useEffect, useState } from 'react';
import { api, type Agent, type Memory } from './api.js';
import { AgentSelect, DeleteButton } from './shared.js';

export function MemoryView({ agents }: { agents: Agent[] }) {
  const [agentId, setAgentId] = useState(agents[0]?.id ?? 'default');
  const [query, setQuery] = useState('');
  const [memories, setMemories] = useState<Memory[]>([]);
  const [error, setError] = useState<string | undefined>();

  const load = async () => {
    try {
      const q = query.trim() ? `&q=${encodeURIComponent(query.trim())}` : '';
      setMemories((await api<{ memories: Memory[] }>('GET', `/api/agents/${encodeURIComponent(agentId)}/memories?limit=100${q}`)).memories);
      setError(undefined);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
      setMemories([]);
    }
  };
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
              then={load}
              gone="That memory was already deleted."
            >
              Delete memory
            </DeleteButton>
          </li>
        ))}
        {memories.length === 0 && !error && <li className="muted">No memories.</li>}
      </ul>
    </main>
  );
}
