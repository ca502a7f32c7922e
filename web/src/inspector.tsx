import { useCallback, useEffect, useState } from 'react';
import { api, type AutonomyPolicy, type Hook, type LiveConnection, type Run, type Schedule, type Thread, type ThreadAutonomy } from './api.js';
import { PlansSection } from './plans.js';
import { whyOf } from './why.js';

function duration(run: Run): string {
  if (!run.endedAt) return 'running';
  const ms = Date.parse(run.endedAt) - Date.parse(run.startedAt);
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function countdown(dueAt: string, now: number): string {
  const seconds = Math.max(0, Math.round((Date.parse(dueAt) - now) / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  return minutes < 60 ? `${minutes} min ${seconds % 60} s` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** Per thread: why things happened (runs with their meta), what will happen (timers), and the limits on it. */
export function Inspector({
  thread,
  live,
  names,
  showInternal,
  onShowInternal,
  onClose,
}: {
  thread: Thread;
  live: LiveConnection;
  names: { schedules: Schedule[]; hooks: Hook[] };
  showInternal: boolean;
  onShowInternal: (value: boolean) => void;
  onClose: () => void;
}) {
  const [runs, setRuns] = useState<Run[]>([]);
  const [autonomy, setAutonomy] = useState<ThreadAutonomy | undefined>();
  const [policy, setPolicy] = useState<AutonomyPolicy | undefined>();
  const [now, setNow] = useState(Date.now());

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

  useEffect(() => {
    void load();
    const off = live.on((event) => {
      if ('threadId' in event && event.threadId === thread.id && (event.type.startsWith('timer.') || event.type.startsWith('run.'))) void load();
    });
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => {
      off();
      clearInterval(tick);
    };
  }, [load, live, thread.id]);

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
            <button type="button" className="small" onClick={async () => setAutonomy(await api<ThreadAutonomy>('POST', `/api/threads/${thread.id}/autonomy/${autonomy.paused ? 'resume' : 'pause'}`))}>
              {autonomy.paused ? 'Resume here' : 'Pause here'}
            </button>
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
                <button
                  type="button"
                  className="small danger"
                  onClick={async () => {
                    await api('DELETE', `/api/threads/${thread.id}/timers/${timer.id}`);
                    await load();
                  }}
                >
                  Cancel follow-up
                </button>
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

      <section aria-labelledby="runs-heading">
        <h3 id="runs-heading">Runs</h3>
        <ol className="runs">
          {runs.map((run) => (
            <li key={run.id} className={`run ${run.status}`}>
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
              <details>
                <summary>Envelope and meta</summary>
                <pre>{JSON.stringify({ trigger: run.trigger, meta: run.meta, model: run.model, correlationId: run.correlationId, requestedAt: run.requestedAt, startedAt: run.startedAt, endedAt: run.endedAt }, null, 2)}</pre>
              </details>
            </li>
          ))}
        </ol>
      </section>
    </aside>
  );
}
