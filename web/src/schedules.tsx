import { useEffect, useState } from 'react';
import { api, type Agent, type Fire, type Schedule } from './api.js';
import { ActionButton, AgentSelect, DeleteButton, RunsGoTo, useThreadTitles } from './shared.js';
import { Field, fieldError, formError } from './fields.js';

const PATHS = ['/name', '/timing', '/task', '/agentId'];
const localZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

export function SchedulesView({ agents, onAgentsChanged }: { agents: Agent[]; onAgentsChanged: () => Promise<void> }) {
  const [schedules, setSchedules] = useState<Schedule[]>([]);
  const [error, setError] = useState<unknown>();
  const [cron, setCron] = useState('0 9 * * *');
  const [timezone, setTimezone] = useState(localZone);
  const [preview, setPreview] = useState<{ fires: string[] } | { error: string }>({ fires: [] });
  const [fires, setFires] = useState<Record<string, Fire[]>>({});

  const load = async () => setSchedules((await api<{ schedules: Schedule[] }>('GET', '/api/schedules')).schedules);
  useEffect(() => {
    void load();
    void onAgentsChanged().catch(() => undefined); // named as they are now, not as at sign-in
  }, []);
  const titles = useThreadTitles(schedules.map((schedule) => schedule.threadId));

  // The next five fires, from the server's own cron reading, as the person types.
  useEffect(() => {
    const timeout = setTimeout(() => {
      api<{ fires: string[] }>('POST', '/api/schedules/preview', { timing: { kind: 'cron', cron, timezone }, count: 5 }).then(setPreview, (failure: unknown) =>
        setPreview({ error: failure instanceof Error ? failure.message : String(failure) }),
      );
    }, 250);
    return () => clearTimeout(timeout);
  }, [cron, timezone]);

  return (
    <main className="page">
      <h1>Schedules</h1>
      <form
        className="form"
        aria-label="New schedule"
        noValidate
        onSubmit={async (event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          const agentId = String(form.get('agentId') ?? '');
          try {
            await api('POST', '/api/schedules', {
              name: String(form.get('name') ?? ''),
              task: String(form.get('task') ?? ''),
              timing: { kind: 'cron', cron, timezone },
              ...(agentId ? { agentId } : {}),
            });
            setError(undefined);
            event.currentTarget?.reset?.();
            await load();
          } catch (failure) {
            setError(failure);
          }
        }}
      >
        <h2>New schedule</h2>
        {formError(error, PATHS) && <p role="alert" className="field-error">{formError(error, PATHS)}</p>}
        <Field id="schedule-name" label="Name" error={fieldError(error, '/name')}>
          <input id="schedule-name" name="name" />
        </Field>
        <Field id="schedule-cron" label="Cron expression" error={fieldError(error, '/timing/cron')} hint="minute hour day month weekday">
          <input id="schedule-cron" name="cron" value={cron} onChange={(event) => setCron(event.target.value)} />
        </Field>
        <Field id="schedule-tz" label="Time zone" error={fieldError(error, '/timing/timezone')}>
          <input id="schedule-tz" name="timezone" value={timezone} onChange={(event) => setTimezone(event.target.value)} />
        </Field>
        <div className="preview" aria-live="polite">
          <h3>Next 5 fires</h3>
          {'error' in preview ? (
            <p className="field-error">{preview.error}</p>
          ) : (
            <ol>
              {preview.fires.map((fire) => (
                <li key={fire}>
                  <time dateTime={fire}>{new Date(fire).toLocaleString(undefined, { timeZone: timezone, dateStyle: 'medium', timeStyle: 'short' })}</time>
                </li>
              ))}
            </ol>
          )}
        </div>
        <Field id="schedule-agent" label="Agent" error={fieldError(error, '/agentId')}>
          <AgentSelect id="schedule-agent" name="agentId" agents={agents} withDefault />
        </Field>
        <Field id="schedule-task" label="Task" error={fieldError(error, '/task')}>
          <textarea id="schedule-task" name="task" rows={3} />
        </Field>
        <button type="submit">Create schedule</button>
      </form>

      <ul className="cards">
        {schedules.map((schedule) => {
          const timing = schedule.timing as { kind: string; cron?: string; timezone?: string; at?: string };
          return (
            <li key={schedule.id} className="card">
              <h2>{schedule.name}</h2>
              <p className="muted">
                {timing.kind === 'cron' ? `${timing.cron} (${timing.timezone})` : `at ${timing.at}`} · {schedule.enabled ? 'active' : 'paused'} · <RunsGoTo agents={agents} agentId={schedule.agentId} threadId={schedule.target === 'thread' ? schedule.threadId : null} titles={titles} />
              </p>
              <p>{schedule.task}</p>
              <ActionButton
                errorPrefix={schedule.enabled ? 'Not paused:' : 'Not resumed:'}
                action={async () => {
                  await api('PATCH', `/api/schedules/${schedule.id}`, { enabled: !schedule.enabled });
                  await load();
                }}
              >
                {schedule.enabled ? 'Pause' : 'Resume'} {schedule.name}
              </ActionButton>
              <DeleteButton
                confirm={`Delete schedule "${schedule.name}"?`}
                path={`/api/schedules/${schedule.id}`}
                then={load}
                gone={`Schedule "${schedule.name}" was already deleted.`}
              >
                Delete {schedule.name}
              </DeleteButton>
              <details
                onToggle={async (event) => {
                  if ((event.currentTarget as HTMLDetailsElement).open) {
                    const answer = await api<{ fires: Fire[] }>('GET', `/api/schedules/${schedule.id}/fires`);
                    setFires((current) => ({ ...current, [schedule.id]: answer.fires }));
                  }
                }}
              >
                <summary>Run records</summary>
                <ul>
                  {(fires[schedule.id] ?? []).map((fire) => (
                    <li key={fire.id}>
                      {new Date(fire.scheduledFor).toLocaleString()} · {fire.status}
                      {fire.reason ? ` · ${fire.reason}` : ''}
                      {fire.threadId && (
                        <>
                          {' '}
                          · <a href={`#chat/${fire.threadId}`}>open thread</a>
                        </>
                      )}
                    </li>
                  ))}
                  {(fires[schedule.id] ?? []).length === 0 && <li className="muted">No fires yet.</li>}
                </ul>
              </details>
            </li>
          );
        })}
      </ul>
    </main>
  );
}
