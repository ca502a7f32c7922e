import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api, ApiError, LiveConnection, onUnauthorized, storeToken, storedToken, type Agent } from './api.js';
import { ChatView } from './chat.js';
import { AgentsView } from './agents.js';
import { SchedulesView } from './schedules.js';
import { HooksView } from './hooks.js';
import { MemoryView } from './memory.js';
import { ApprovalsView, PendingApprovalsBadge } from './approvals.js';
import { Announcer, ConnectionStatus } from './shared.js';

type View = 'chat' | 'approvals' | 'agents' | 'schedules' | 'webhooks' | 'memory';
const VIEWS: Array<{ id: View; label: string }> = [
  { id: 'chat', label: 'Chat' },
  { id: 'approvals', label: 'Approvals' },
  { id: 'agents', label: 'Agents' },
  { id: 'schedules', label: 'Schedules' },
  { id: 'webhooks', label: 'Webhooks' },
  { id: 'memory', label: 'Memory' },
];

export function App() {
  const [state, setState] = useState<'checking' | 'signed-out' | 'signed-in'>('checking');
  const [agents, setAgents] = useState<Agent[]>([]);
  const [view, setView] = useState<View>(() => (VIEWS.find((entry) => `#${entry.id}` === location.hash.split('/')[0])?.id ?? 'chat'));
  const [signInError, setSignInError] = useState<string | undefined>();
  const signedIn = useRef(false);
  signedIn.current = state === 'signed-in';

  const reloadAgents = useCallback(async () => setAgents((await api<{ agents: Agent[] }>('GET', '/api/agents')).agents), []);

  const check = async () => {
    try {
      await reloadAgents();
      setState('signed-in');
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        if (storedToken()) setSignInError('That token was not accepted.');
        setState('signed-out');
      } else throw error;
    }
  };

  useEffect(() => {
    void check();
  }, []);

  // Any 401 once signed in (the token revoked, replaced or removed elsewhere): back to sign-in, saying why.
  useEffect(
    () =>
      onUnauthorized(() => {
        if (!signedIn.current) return;
        signedIn.current = false;
        storeToken(null);
        setSignInError('Your session has ended: the server no longer accepts your token. Sign in again.');
        setState('signed-out');
      }),
    [],
  );

  useEffect(() => {
    const onHash = () => setView(VIEWS.find((entry) => `#${entry.id}` === location.hash.split('/')[0])?.id ?? 'chat');
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);

  const live = useMemo(() => (state === 'signed-in' ? new LiveConnection() : undefined), [state]);
  useEffect(() => {
    live?.connect();
    return () => live?.close();
  }, [live]);

  if (state === 'checking') return <p className="loading">Loading…</p>;
  if (state === 'signed-out') {
    return (
      <main className="sign-in">
        <h1>vigil</h1>
        <form
          onSubmit={(event) => {
            event.preventDefault();
            const token = String(new FormData(event.currentTarget).get('token') ?? '').trim();
            storeToken(token || null);
            setSignInError(undefined);
            void check();
          }}
        >
          <label htmlFor="token">Access token</label>
          <input id="token" name="token" type="password" autoComplete="current-password" required autoFocus aria-invalid={Boolean(signInError)} aria-describedby={signInError ? 'token-error' : undefined} />
          {signInError && (
            <p id="token-error" role="alert" className="field-error">
              {signInError}
            </p>
          )}
          <button type="submit">Sign in</button>
        </form>
      </main>
    );
  }

  return (
    <div className="app">
      <header className="top">
        <span className="brand">vigil</span>
        <nav aria-label="Main">
          {VIEWS.map((entry) => (
            <a key={entry.id} href={`#${entry.id}`} aria-current={view === entry.id ? 'page' : undefined}>
              {entry.label}
              {entry.id === 'approvals' && live && <PendingApprovalsBadge live={live} />}
            </a>
          ))}
        </nav>
        {storedToken() && (
          <button
            type="button"
            className="link"
            onClick={() => {
              storeToken(null);
              location.hash = '';
              location.reload();
            }}
          >
            Sign out
          </button>
        )}
      </header>
      <Announcer />
      {live && <ConnectionStatus live={live} />}
      {view === 'chat' && live && <ChatView agents={agents} live={live} onAgentsChanged={reloadAgents} />}
      {view === 'approvals' && live && <ApprovalsView live={live} />}
      {view === 'agents' && <AgentsView agents={agents} onChange={reloadAgents} />}
      {view === 'schedules' && <SchedulesView agents={agents} onAgentsChanged={reloadAgents} />}
      {view === 'webhooks' && <HooksView agents={agents} onAgentsChanged={reloadAgents} />}
      {view === 'memory' && <MemoryView agents={agents} />}
    </div>
  );
}
