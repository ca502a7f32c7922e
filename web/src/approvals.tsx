import { useCallback, useState } from 'react';
import { api, ApiError, type Approval, type ApprovalDecisionBody, type LiveConnection } from './api.js';
import { countdown, ErrorNote, formatTime, JsonBlock, useLiveLoad, useNow } from './shared.js';

const APPROVAL_EVENTS = ['approval.'];

const STATUS_TEXT: Record<Approval['status'], string> = {
  pending: 'waiting for you',
  approved: 'approved',
  edited: 'approved with edited arguments',
  rejected: 'rejected',
  expired: 'expired: nobody answered in time (not a refusal)',
  superseded: 'superseded by a new message',
};

/** Why a decision was refused, in words a person can act on. */
function refusal(error: unknown): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  if (error.status === 409) return 'Someone (or another channel) decided first; this request is no longer pending.';
  if (error.status === 400) return 'The server refused these arguments; fix them and try again.';
  return undefined;
}

/**
 * One tool call waiting for a person (I16): the tool, its arguments as stored (secrets
 * redacted), the deadline counting down, and the three decisions. Used in a thread and
 * in the inbox across threads.
 */
export function ApprovalCard({ approval, onDecided, threadLink }: { approval: Approval; onDecided: (approval: Approval) => void; threadLink?: boolean }) {
  const now = useNow();
  const [mode, setMode] = useState<'idle' | 'edit' | 'reject'>('idle');
  const [argumentsText, setArgumentsText] = useState(() => JSON.stringify(approval.arguments, null, 2));
  const [message, setMessage] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const id = approval.id;
  const pending = approval.status === 'pending';

  const decide = async (body: ApprovalDecisionBody) => {
    setBusy(true);
    try {
      const decided = await api<Approval>('POST', `/api/approvals/${id}/decision`, body);
      setError(undefined);
      setMode('idle');
      onDecided(decided);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };

  const submitEdit = () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(argumentsText);
    } catch {
      setError(new Error('The arguments are not valid JSON.'));
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      setError(new Error('The arguments must be a JSON object.'));
      return;
    }
    void decide({ decision: 'edit', arguments: parsed as Record<string, unknown> });
  };

  return (
    <article className={`approval ${approval.status}`} aria-labelledby={`approval-${id}-title`} data-approval-id={id}>
      <header>
        <h3 id={`approval-${id}-title`}>
          Run tool <code>{approval.tool}</code>?
        </h3>
        <span className="muted">
          {STATUS_TEXT[approval.status]}
          {pending && (
            <>
              {' · expires in '}
              <strong className="countdown">{countdown(approval.expiresAt, now)}</strong>
            </>
          )}
          {!pending && approval.decidedAt ? ` · ${formatTime(approval.decidedAt)}` : ''}
          {approval.attended ? '' : ' · asked while you were away'}
          {approval.executed ? ` · ${approval.outcome === 'succeeded' ? 'ran' : approval.outcome === 'failed' ? 'ran, and failed' : 'ran (outcome not recorded)'}` : ''}
        </span>
      </header>
      <p className="muted">Arguments (secrets redacted):</p>
      <JsonBlock value={approval.editedArguments ?? approval.arguments} />
      {approval.message && <p className="muted">Message: {approval.message}</p>}
      {threadLink && (
        <p>
          <a href={`#chat/${encodeURIComponent(approval.threadId)}`}>Open the thread</a>
        </p>
      )}
      <ErrorNote error={error} prefix={refusal(error)} />
      {pending && mode === 'edit' && (
        <div className="field">
          <label htmlFor={`approval-${id}-arguments`}>Edited arguments (JSON)</label>
          <textarea id={`approval-${id}-arguments`} className="code" rows={5} autoFocus value={argumentsText} onChange={(event) => setArgumentsText(event.target.value)} />
          <p className="muted">Values shown as [redacted] are sent as that text unless you replace them.</p>
        </div>
      )}
      {pending && mode === 'reject' && (
        <div className="field">
          <label htmlFor={`approval-${id}-message`}>Message for the agent (optional)</label>
          <textarea id={`approval-${id}-message`} rows={2} autoFocus value={message} onChange={(event) => setMessage(event.target.value)} />
        </div>
      )}
      {pending && (
        <div className="actions">
          {mode === 'idle' && (
            <>
              <button type="button" disabled={busy} onClick={() => void decide({ decision: 'approve' })}>
                Approve
              </button>
              <button type="button" className="secondary" disabled={busy} onClick={() => setMode('edit')}>
                Edit arguments
              </button>
              <button type="button" className="danger" disabled={busy} onClick={() => setMode('reject')}>
                Reject
              </button>
            </>
          )}
          {mode === 'edit' && (
            <button type="button" disabled={busy} onClick={submitEdit}>
              Approve with these arguments
            </button>
          )}
          {mode === 'reject' && (
            <button type="button" className="danger" disabled={busy} onClick={() => void decide({ decision: 'reject', ...(message.trim() ? { message: message.trim() } : {}) })}>
              Reject with message
            </button>
          )}
          {mode !== 'idle' && (
            <button type="button" className="secondary" disabled={busy} onClick={() => { setMode('idle'); setError(undefined); }}>
              Cancel
            </button>
          )}
        </div>
      )}
    </article>
  );
}

/** A thread's pending approvals, above its message box; live through the thread's events. */
export function ThreadApprovals({ threadId, live }: { threadId: string; live: LiveConnection }) {
  const [pending, setPending] = useState<Approval[]>([]);
  const load = useCallback(async () => {
    setPending((await api<{ approvals: Approval[] }>('GET', `/api/approvals?threadId=${encodeURIComponent(threadId)}&status=pending`)).approvals);
  }, [threadId]);
  useLiveLoad(live, load, { threadId, types: APPROVAL_EVENTS });
  if (pending.length === 0) return null;
  return (
    <section className="thread-approvals" aria-label="Waiting for your approval">
      {pending.map((approval) => (
        <ApprovalCard key={approval.id} approval={approval} onDecided={() => void load()} />
      ))}
    </section>
  );
}

/** The inbox across threads: every approval request, newest first, pending ones to decide. */
export function ApprovalsView({ live }: { live: LiveConnection }) {
  const [status, setStatus] = useState<'pending' | 'all'>('pending');
  const [approvals, setApprovals] = useState<Approval[]>([]);
  const [error, setError] = useState<unknown>();
  const load = useCallback(async () => {
    try {
      setApprovals((await api<{ approvals: Approval[] }>('GET', `/api/approvals?limit=100${status === 'pending' ? '&status=pending' : ''}`)).approvals);
      setError(undefined);
    } catch (failure) {
      setError(failure);
    }
  }, [status]);
  // Requests come from threads this page is not subscribed to: poll as well.
  useLiveLoad(live, load, { types: APPROVAL_EVENTS, pollMs: 4000 });

  return (
    <main className="page">
      <h1>Approvals</h1>
      <div className="form inline">
        <label htmlFor="approvals-status">Show</label>
        <select id="approvals-status" value={status} onChange={(event) => setStatus(event.target.value as 'pending' | 'all')}>
          <option value="pending">Waiting for a decision</option>
          <option value="all">All requests</option>
        </select>
      </div>
      <ErrorNote error={error} />
      {approvals.length === 0 ? (
        <p className="muted">{status === 'pending' ? 'Nothing is waiting for you.' : 'No approval requests yet.'}</p>
      ) : (
        <ul className="cards">
          {approvals.map((approval) => (
            <li key={approval.id} className="card">
              <ApprovalCard approval={approval} threadLink onDecided={() => void load()} />
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}

/** How many requests wait for a decision, beside the Approvals link: polled, and on every approval event. */
export function PendingApprovalsBadge({ live }: { live: LiveConnection }) {
  const [count, setCount] = useState(0);
  const load = useCallback(async () => {
    setCount((await api<{ approvals: Approval[] }>('GET', '/api/approvals?status=pending&limit=100').catch(() => ({ approvals: [] }))).approvals.length);
  }, []);
  useLiveLoad(live, load, { types: APPROVAL_EVENTS, pollMs: 10_000 });
  if (count === 0) return null;
  return <span className="badge">{count === 100 ? '100+' : count}<span className="visually-hidden"> waiting</span></span>;
}
