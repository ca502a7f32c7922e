import { useEffect, useRef, useState } from 'react';
import { api, ApiError, type Agent, type AgentTools, type AutonomyPolicy, type PlannerSettings } from './api.js';
import { Field, fieldError, formError } from './fields.js';
import { DeleteButton, ErrorNote } from './shared.js';

const PATHS = ['/id', '/name', '/kind', '/model', '/systemPrompt', '/autonomy'];

export function AgentsView({ agents, onChange }: { agents: Agent[]; onChange: () => Promise<void> }) {
  const [editing, setEditing] = useState<Agent | 'new' | undefined>();
  return (
    <main className="page">
      <h1>Agents</h1>
      <button type="button" onClick={() => setEditing('new')}>
        New agent
      </button>
      <ul className="cards">
        {agents.map((agent) => (
          <li key={agent.id} className="card">
            <h2>{agent.name}</h2>
            <p className="muted">
              {agent.id} · {agent.kind} · {agent.model ?? 'server default model'}
            </p>
            <button type="button" onClick={() => setEditing(agent)}>
              Edit {agent.name}
            </button>
            <DeleteButton
              confirm={`Delete agent "${agent.name}" with its threads, schedules and webhooks?`}
              path={`/api/agents/${agent.id}`}
              then={onChange}
              gone={`Agent "${agent.name}" was already deleted.`}
            >
              Delete {agent.name}
            </DeleteButton>
          </li>
        ))}
      </ul>
      {editing && (
        <AgentForm
          key={editing === 'new' ? 'new' : editing.id}
          agent={editing === 'new' ? undefined : editing}
          onDone={async () => {
            setEditing(undefined);
            await onChange();
          }}
          onCancel={() => setEditing(undefined)}
        />
      )}
    </main>
  );
}

function AgentForm({ agent, onDone, onCancel }: { agent: Agent | undefined; onDone: () => Promise<void>; onCancel: () => void }) {
  const [error, setError] = useState<unknown>();
  // The refusal not tied to one field (above the form): it goes once the person edits any field, as what was refused is no longer what the form holds.
  const [generalEdited, setGeneralEdited] = useState(false);
  const [policy, setPolicy] = useState<AutonomyPolicy | undefined>();
  const [planner, setPlanner] = useState<{ settings: PlannerSettings; tools: AgentTools } | undefined>();
  const [plannerError, setPlannerError] = useState<string | undefined>();
  const [refusals, setRefusals] = useState(0); // counted, so the focus moves on a refusal, not when an error clears
  const refused = () => setRefusals((count) => count + 1);
  const [loadError, setLoadError] = useState<unknown>();
  const [loadAttempt, setLoadAttempt] = useState(0);
  const isPlanner = agent?.kind === 'planner';
  const formRef = useRef<HTMLFormElement>(null);
  const loading = Boolean(agent && (!policy || (isPlanner && !planner)));
  // Opened: the keyboard starts at the first field.
  useEffect(() => {
    if (!loading) formRef.current?.querySelector<HTMLElement>('input, select, textarea')?.focus();
  }, [loading]);
  // Refused: the keyboard goes to the first field in error (or to the message above the form).
  useEffect(() => {
    if (refusals === 0) return;
    formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"], .form-error')?.focus();
  }, [refusals]);
  // What the form starts from; a refusal (the agent deleted elsewhere, a server error) is shown with Try again.
  useEffect(() => {
    if (!agent) return;
    let current = true;
    setLoadError(undefined);
    const failed = (failure: unknown) => {
      if (current) setLoadError(failure);
    };
    api<{ policy: AutonomyPolicy }>('GET', `/api/agents/${agent.id}/autonomy`).then((answer) => current && setPolicy(answer.policy), failed);
    if (agent.kind === 'planner') {
      Promise.all([api<PlannerSettings>('GET', `/api/agents/${agent.id}/planner`), api<AgentTools>('GET', `/api/agents/${agent.id}/tools`)]).then(
        ([settings, tools]) => current && setPlanner({ settings, tools }),
        failed,
      );
    }
    return () => {
      current = false;
    };
  }, [agent, loadAttempt]);
  if (loading && agent) {
    if (!loadError) return <p role="status">Loading {agent.name}…</p>;
    return (
      <section className="form" aria-label={`Edit ${agent.name}`}>
        <h2>Edit {agent.name}</h2>
        <ErrorNote error={loadError} prefix={`${agent.name} could not be loaded:`} />
        <div className="actions">
          <button type="button" onClick={() => setLoadAttempt((attempt) => attempt + 1)}>
            Try again
          </button>
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </section>
    );
  }

  return (
    <form
      ref={formRef}
      className="form"
      aria-label={agent ? `Edit ${agent.name}` : 'New agent'}
      noValidate
      onChange={() => setGeneralEdited(true)}
      onSubmit={async (event) => {
        event.preventDefault();
        const form = new FormData(event.currentTarget);
        const text = (name: string) => String(form.get(name) ?? '');
        const followUpSeconds = Number(text('followUpSeconds'));
        const delayMs = Math.round(followUpSeconds * 1000);
        const autonomy = {
          ...(policy ?? {}),
          enabled: form.get('autonomyEnabled') === 'on',
          delaysMs: { check_in: delayMs, question_unanswered: delayMs, task_incomplete: delayMs, waiting_for_decision: delayMs },
          minDelayMs: Math.min(delayMs, policy?.minDelayMs ?? delayMs),
          maxPerDay: Number(text('maxPerDay')),
        };
        const body = {
          name: text('name'),
          systemPrompt: text('systemPrompt'),
          model: text('model') || null,
          autonomy,
        };
        let plannerSettings: unknown;
        if (isPlanner) {
          try {
            plannerSettings = JSON.parse(text('plannerSettings'));
          } catch {
            setPlannerError('not valid JSON');
            refused();
            return;
          }
        }
        try {
          if (agent) await api('PATCH', `/api/agents/${agent.id}`, body);
          else await api('POST', '/api/agents', { id: text('id'), kind: text('kind'), ...body });
          setError(undefined);
        } catch (failure) {
          setError(failure);
          setGeneralEdited(false);
          refused();
          return;
        }
        if (agent && isPlanner) {
          try {
            await api('PUT', `/api/agents/${agent.id}/planner`, plannerSettings);
            setPlannerError(undefined);
          } catch (failure) {
            // The server names the refused key: /mcpServers/<name>/url, /budgets/maxSteps, …
            setPlannerError(failure instanceof ApiError ? failure.details.map((detail) => `${detail.path} ${detail.message}`).join('; ') || failure.message : String(failure));
            refused();
            return;
          }
        }
        await onDone();
      }}
    >
      <h2>{agent ? `Edit ${agent.name}` : 'New agent'}</h2>
      {!generalEdited && formError(error, PATHS) && (
        <p role="alert" className="field-error form-error" tabIndex={-1}>
          {formError(error, PATHS)}
        </p>
      )}
      {!agent && (
        <Field id="agent-id" label="Id" error={fieldError(error, '/id')} hint="lowercase letters, digits, _ and -">
          <input id="agent-id" name="id" required aria-invalid={Boolean(fieldError(error, '/id'))} />
        </Field>
      )}
      <Field id="agent-name" label="Name" error={fieldError(error, '/name')}>
        <input id="agent-name" name="name" defaultValue={agent?.name ?? ''} aria-invalid={Boolean(fieldError(error, '/name'))} />
      </Field>
      {!agent && (
        <Field id="agent-kind" label="Kind (planner mode)" error={fieldError(error, '/kind')}>
          <select id="agent-kind" name="kind" defaultValue="chat">
            <option value="chat">chat</option>
            <option value="planner">planner</option>
          </select>
        </Field>
      )}
      <Field id="agent-model" label="Model" error={fieldError(error, '/model')} hint='empty: the server default; "demo", "openai:<model>" or "anthropic:<model>"'>
        <input id="agent-model" name="model" defaultValue={agent?.model ?? ''} aria-invalid={Boolean(fieldError(error, '/model'))} />
      </Field>
      <Field id="agent-prompt" label="System prompt" error={fieldError(error, '/systemPrompt')}>
        <textarea id="agent-prompt" name="systemPrompt" rows={4} defaultValue={agent?.systemPrompt ?? 'You are a helpful assistant. Answer clearly and briefly.'} />
      </Field>
      <fieldset>
        <legend>Autonomy</legend>
        <label className="toggle">
          <input type="checkbox" name="autonomyEnabled" defaultChecked={policy?.enabled ?? false} /> Follow up on its own
        </label>
        <Field id="agent-delay" label="Follow-up delay (seconds)" error={fieldError(error, '/autonomy/delaysMs') ?? fieldError(error, '/autonomy/minDelayMs')}>
          <input id="agent-delay" name="followUpSeconds" type="number" min="0" step="1" defaultValue={String((policy?.delaysMs.question_unanswered ?? 3_600_000) / 1000)} />
        </Field>
        <Field id="agent-per-day" label="Follow-ups per day" error={fieldError(error, '/autonomy/maxPerDay')}>
          <input id="agent-per-day" name="maxPerDay" type="number" defaultValue={String(policy?.maxPerDay ?? 5)} />
        </Field>
      </fieldset>
      {isPlanner && planner && (
        <fieldset>
          <legend>Planner: tools and MCP servers</legend>
          <Field id="agent-planner" label="Planner settings (JSON: budgets, fetch, mcpServers, overlord)" error={plannerError}>
            <textarea id="agent-planner" name="plannerSettings" rows={10} className="code" defaultValue={JSON.stringify(planner.settings, null, 2)} aria-invalid={Boolean(plannerError)}
              onChange={() => setPlannerError(undefined)} // what was refused is no longer what the field holds
            />
          </Field>
          <p>Tools it can call now:</p>
          <ul className="tools">
            {planner.tools.tools.map((tool) => (
              <li key={tool.name}>
                <code>{tool.name}</code> <span className="muted">({tool.source === 'mcp' ? `MCP ${tool.server}` : 'built-in'})</span>
              </li>
            ))}
            {planner.tools.unavailable.map((server) => (
              <li key={server.server} className="field-error">
                MCP server {server.server} unavailable: {server.error}
              </li>
            ))}
          </ul>
        </fieldset>
      )}
      <div className="actions">
        <button type="submit">Save agent</button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
