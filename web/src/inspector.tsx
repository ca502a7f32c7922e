import { useCallback, useEffect, useState } from 'react';
import { api, type AutonomyPolicy, type LiveConnection, type Run, type Thread, type ThreadAutonomy, type ThreadContext } from './api.js';
import { PlansSection } from './plans.js';
import { ActionButton, countdown, JsonBlock, useLiveLoad, useNow } from './shared.js';
import { whyOf, type TriggerNames } from './why.js';

function duration(run: Run): string {
  if (!run.endedAt) return 'running';
  const ms = Date.parse(run.endedAt) - Date.parse(run.startedAt);
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Per thread: why things happened (runs with their meta), what will happen (timers), and the limits on it. */
export function Inspector({
  thread,
  live,
  names,
  showInternal,
  onShowInternal,
  onClose,
  focusRun,
}: {
  thread: Thread;
  live: LiveConnection;
  names: TriggerNames;
  showInternal: boolean;
  onShowInternal: (value: boolean) => void;
  onClose: () => void;
  /** A run to open at: its envelope shown, scrolled to and focused. */
  focusRun?: string | undefined;
}) {
  const [runs, setRuns] = useState<Run[]>([]);
  const [autonomy, setAutonomy] = useState<ThreadAutonomy | undefined>();
  const [policy, setPolicy] = useState<AutonomyPolicy | undefined>();
  const now = useNow();

  const load = useCallback(async () => {
    const [runList, status, agentPolicy] = await Promise.all([
      api<{ runs: Run[] }>('GET', `/api/threads/${thread.id}/runs?limit=50`),
      api<ThreadAutonomy>('GET', `/api/threads/${thread.id}/autonomy`).catch(() => undefined),
      api<{ policy: AutonomyPolicy }>('GET', `/api/agents/${thread.agentId}/autonomy`).catch(() => undefined),
    ]);
    setRuns([...runList.runs].reverse());
    setAutonomy(status);
    setPolicy(agentPolicy?.policy);
  }, [thread.id, thread.agentId]);

  useLiveLoad(live, load, { threadId: thread.id, types: ['timer.', 'run.'] });

  const focusLoaded = runs.some((run) => run.id === focusRun);
  useEffect(() => {
    if (!focusRun || !focusLoaded) return;
    const item = document.getElementById(`run-${focusRun}`);
    const envelope = item?.querySelector<HTMLDetailsElement>('details.envelope');
    if (envelope) envelope.open = true;
    const received = item?.querySelector<HTMLDetailsElement>('details.model-inputs');
    if (received) received.open = true;
    item?.scrollIntoView({ block: 'nearest' });
    item?.focus();
  }, [focusRun, focusLoaded]);

  return (
    <aside id="inspector" className="inspector" aria-label="Inspector">
      <div className="pane-bar">
        <h2>Inspector</h2>
        <button type="button" onClick={onClose}>
          Close inspector
        </button>
      </div>
      <label className="toggle">
        <input type="checkbox" checked={showInternal} onChange={(event) => onShowInternal(event.target.checked)} /> Show internal messages
      </label>

      <section aria-labelledby="timers-heading">
        <h3 id="timers-heading">Pending follow-ups</h3>
        {autonomy && (
          <p>
            Autonomy {autonomy.enabled ? 'on' : 'off'} for this agent{autonomy.paused ? ', paused on this thread' : ''}.{' '}
            <ActionButton className="small" action={async () => setAutonomy(await api<ThreadAutonomy>('POST', `/api/threads/${thread.id}/autonomy/${autonomy.paused ? 'resume' : 'pause'}`))}>
              {autonomy.paused ? 'Resume here' : 'Pause here'}
            </ActionButton>
          </p>
        )}
        {autonomy?.pending.length ? (
          <ul className="timers">
            {autonomy.pending.map((timer) => (
              <li key={timer.id}>
                <span>
                  {timer.triggerType.replace(/_/g, ' ')} in <strong className="countdown">{countdown(timer.dueAt, now)}</strong>
                </span>
                <span className="muted">{timer.reason}</span>
                <ActionButton
                  className="small danger"
                  errorPrefix="Not cancelled:"
                  action={async () => {
                    await api('DELETE', `/api/threads/${thread.id}/timers/${timer.id}`);
                    await load();
                  }}
                  onGone={load}
                  gone="That follow-up was already gone."
                  alreadyDone={{ TIMER_NOT_PENDING: 'That follow-up already ran (or was stopped elsewhere), so there was nothing to cancel.' }}
                >
                  Cancel follow-up
                </ActionButton>
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">None pending.</p>
        )}
      </section>

      {policy && (
        <section aria-labelledby="policy-heading">
          <h3 id="policy-heading">Autonomy limits</h3>
          <dl className="policy">
            <dt>Per silence</dt>
            <dd>{policy.maxPerSilence} follow-ups</dd>
            <dt>Per day (thread)</dt>
            <dd>{policy.maxPerDay}</dd>
            <dt>Model calls per day</dt>
            <dd>{policy.modelCallsPerDay}</dd>
            <dt>Quiet hours</dt>
            <dd>{policy.quietHours ? `${policy.quietHours.start}–${policy.quietHours.end} ${policy.timeZone} (${policy.quietHours.mode})` : 'none'}</dd>
            <dt>Follow-ups today</dt>
            <dd>{runs.filter((run) => run.trigger === 'autonomy' && run.startedAt.slice(0, 10) === new Date().toISOString().slice(0, 10)).length} of {policy.maxPerDay}</dd>
          </dl>
        </section>
      )}

      <PlansSection threadId={thread.id} live={live} />

      <NextCallSection threadId={thread.id} live={live} />

      <section aria-labelledby="runs-heading">
        <h3 id="runs-heading">Runs</h3>
        <ol className="runs">
          {runs.map((run) => (
            <li key={run.id} id={`run-${run.id}`} tabIndex={-1} className={`run ${run.status}${run.id === focusRun ? ' focused' : ''}`}>
              <div>
                <strong>{run.trigger}</strong> · {run.status} · {duration(run)}
                {whyOf(run, names) && <span className="why">{whyOf(run, names)}</span>}
              </div>
              {run.error && (
                <p className="field-error">
                  {run.error.code}: {run.error.message}
                </p>
              )}
              {run.reason && <p className="muted">{run.reason}</p>}
              <details className="envelope">
                <summary>Envelope the model read</summary>
                {run.envelope.shown && run.envelope.json ? (
                  <>
                    <p className="muted">
                      {run.envelope.bytes} bytes of 4096 · {run.envelope.stage === 'full' ? 'complete' : `cut to fit (${run.envelope.stage})`} · the run nonce is not stored and shows as a stand-in
                    </p>
                    <JsonBlock value={run.envelope.json} />
                  </>
                ) : (
                  <p className="muted">None: {run.trigger} runs reach the model without an envelope (the message itself is the context).</p>
                )}
              </details>
              <ModelInputs run={run} />
              <details className="meta">
                <summary>Envelope and meta</summary>
                <JsonBlock value={{ trigger: run.trigger, meta: run.meta, model: run.model, correlationId: run.correlationId, requestedAt: run.requestedAt, startedAt: run.startedAt, endedAt: run.endedAt }} />
              </details>
            </li>
          ))}
        </ol>
      </section>
    </aside>
  );
}

/**
 * What each of a run's model calls received, as recorded when the run ended: tokens per
 * part and the stretch of history the model read (its texts are in the conversation, with
 * internal messages shown by the toggle above).
 */
function ModelInputs({ run }: { run: Run }) {
  if (run.modelInputs.length === 0) return null;
  return (
    <details className="model-inputs">
      <summary>What the model received ({run.modelInputs.length === 1 ? '1 call' : `${run.modelInputs.length} calls`})</summary>
      <ol>
        {run.modelInputs.map((call, index) => (
          <li key={index}>
            {call.inputTokens} of {call.inputLimit} input tokens · system prompt {call.systemTokens} · envelope {call.envelopeTokens ?? 'none'} · summary{' '}
            {call.summary ? `${call.summary.tokens} (covers ${call.summary.coveredMessages} messages)` : 'none'} · {call.window.count} messages ({call.window.tokens} tokens
            {call.window.summarized ? `, ${call.window.summarized} summarised` : ''}
            {call.window.trimmed ? `, ${call.window.trimmed} left out` : ''}
            {call.window.cut ? ', newest cut to fit' : ''})
            <JsonBlock value={{ model: call.model, at: call.at, firstMessageId: call.window.firstMessageId, lastMessageId: call.window.lastMessageId }} />
          </li>
        ))}
      </ol>
    </details>
  );
}

/**
 * What the next model call on the thread would receive (I14), part by part with token
 * counts: the system prompt, the envelope (built per run), the summary standing in for
 * older messages, and the recent messages that fit. History keeps every message.
 */
function NextCallSection({ threadId, live }: { threadId: string; live: LiveConnection }) {
  const [context, setContext] = useState<ThreadContext | undefined>();
  const load = useCallback(async () => setContext(await api<ThreadContext>('GET', `/api/threads/${threadId}/context`).catch(() => undefined)), [threadId]);
  useLiveLoad(live, load, { threadId, types: ['run.end'] });
  if (!context) return null;
  const { budget, system, envelope, summary, messages, memories, tools } = context;
  return (
    <section aria-labelledby="context-heading" className="next-call">
      <h3 id="context-heading">Next model call</h3>
      <p className="muted">
        {context.inputTokens} of {budget.inputLimit} input tokens ({budget.maxTokens} in the window from {budget.source.replace('_', ' ')}, {budget.answerTokens} kept for the answer)
      </p>
      <table className="context-parts">
        <caption className="visually-hidden">Tokens per part of the next model call</caption>
        <thead>
          <tr>
            <th scope="col">Part</th>
            <th scope="col">Tokens</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <th scope="row">System prompt</th>
            <td>{system.tokens}</td>
          </tr>
          <tr>
            <th scope="row">Envelope</th>
            <td>{envelope.shown ? envelope.tokens : 'none'}</td>
          </tr>
          <tr>
            <th scope="row">Recalled memories{memories.count > 0 ? ` (${memories.count})` : ''}</th>
            <td>{memories.count > 0 ? memories.tokens : 'none'}</td>
          </tr>
          <tr>
            <th scope="row">Tool definitions{tools.count > 0 ? ` (${tools.count})` : ''}</th>
            <td>{tools.count > 0 ? tools.tokens : 'none'}</td>
          </tr>
          <tr>
            <th scope="row">Summary{summary?.coverage ? ` (covers ${summary.coverage.messageCount} messages)` : ''}</th>
            <td>{summary ? summary.tokens : 'none'}</td>
          </tr>
          <tr>
            <th scope="row">
              Messages ({messages.window.length} of {messages.inThread}
              {messages.summarized ? `, ${messages.summarized} summarised` : ''}
              {messages.trimmed ? `, ${messages.trimmed} left out` : ''})
            </th>
            <td>{messages.tokens}</td>
          </tr>
        </tbody>
      </table>
      <p className="muted">Envelope: {envelope.note}.</p>
      <details>
        <summary>System prompt</summary>
        <JsonBlock value={system.text} />
      </details>
      {summary && (
        <details>
          <summary>Summary (internal, written by the system)</summary>
          <JsonBlock value={summary.text} />
        </details>
      )}
      <details>
        <summary>Messages sent</summary>
        <ol className="window">
          {messages.window.map((message, index) => (
            <li key={message.id ?? index}>
              {message.type} · {message.tokens} tokens{message.cut ? ' · cut' : ''}
              {message.mediaReplaced ? ' · media replaced' : ''}
            </li>
          ))}
        </ol>
      </details>
    </section>
  );
}
