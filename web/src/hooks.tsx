import { useEffect, useState } from 'react';
import { api, type Agent, type CreatedHook, type Hook, type HookDelivery } from './api.js';
import { Field, fieldError, formError } from './fields.js';
import { AgentSelect, DeleteButton, ErrorNote, formatTime, RunsGoTo, useThreadTitles } from './shared.js';

const PATHS = ['/name', '/taskTemplate', '/agentId', '/payloadFields'];

/**
 * A delivery signed per Standard Webhooks with the tools every shell has (bash, openssl,
 * curl): the key is the base64 part of the secret; the signature covers
 * "<id>.<timestamp>.<raw body>".
 */
export function curlExample(hook: CreatedHook, origin: string): string {
  return [
    `SECRET='${hook.secret}'`,
    `BODY='{"event":"push","repository":"vigil"}'`,
    'ID="msg_$(date +%s%N)"',
    'TS=$(date +%s)',
    `KEY=$(printf '%s' "\${SECRET#whsec_}" | base64 -d | od -An -v -tx1 | tr -d ' \\n')`,
    `SIG=$(printf '%s.%s.%s' "$ID" "$TS" "$BODY" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$KEY" -binary | base64)`,
    `curl -sS -X POST '${origin}${hook.deliveryUrl}' \\`,
    `  -H 'content-type: application/json' \\`,
    `  -H "webhook-id: $ID" \\`,
    `  -H "webhook-timestamp: $TS" \\`,
    `  -H "webhook-signature: v1,$SIG" \\`,
    `  -d "$BODY"`,
  ].join('\n');
}

/** A hook's accepted deliveries, each with the run it started; loaded when opened. */
function HookDeliveries({ hook }: { hook: Hook }) {
  const [deliveries, setDeliveries] = useState<HookDelivery[] | undefined>();
  const [error, setError] = useState<unknown>();
  const load = async () => {
    try {
      setDeliveries((await api<{ deliveries: HookDelivery[] }>('GET', `/api/hooks/${hook.id}/deliveries?limit=50`)).deliveries);
      setError(undefined);
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <details
      className="deliveries"
      onToggle={(event) => {
        if ((event.currentTarget as HTMLDetailsElement).open) void load();
      }}
    >
      <summary>Deliveries of {hook.name}</summary>
      <ErrorNote error={error} />
      {deliveries && deliveries.length === 0 && <p className="muted">No deliveries yet.</p>}
      {deliveries && deliveries.length > 0 && (
        <table className="delivery-table">
          <caption className="visually-hidden">Deliveries of {hook.name}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Delivery id</th>
              <th scope="col">Run</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((delivery) => (
              <tr key={delivery.deliveryId}>
                <td>{formatTime(delivery.receivedAt)}</td>
                <td>
                  <code>{delivery.deliveryId}</code>
                </td>
                <td>
                  {delivery.threadId ? <a href={`#chat/${encodeURIComponent(delivery.threadId)}`}>{delivery.runStatus ?? 'starting'}</a> : (delivery.runStatus ?? 'starting')}
                  {delivery.runReason ? <span className="muted"> ({delivery.runReason})</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <button type="button" className="small secondary" onClick={() => void load()}>
        Refresh deliveries
      </button>
    </details>
  );
}

export function HooksView({ agents, onAgentsChanged }: { agents: Agent[]; onAgentsChanged: () => Promise<void> }) {
  const [hooks, setHooks] = useState<Hook[]>([]);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<CreatedHook | undefined>();
  const [copied, setCopied] = useState(false);

  const load = async () => setHooks((await api<{ hooks: Hook[] }>('GET', '/api/hooks?limit=100')).hooks);
  useEffect(() => {
    void load();
    void onAgentsChanged().catch(() => undefined); // named as they are now, not as at sign-in
  }, []);
  const titles = useThreadTitles(hooks.map((hook) => hook.threadId));

  const example = created ? curlExample(created, location.origin) : '';

  return (
    <main className="page">
      <h1>Webhooks</h1>
      <form
        className="form"
        aria-label="New webhook"
        noValidate
        onSubmit={async (event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          const agentId = String(form.get('agentId') ?? '');
          try {
            setCreated(await api<CreatedHook>('POST', '/api/hooks', { name: String(form.get('name') ?? ''), taskTemplate: String(form.get('taskTemplate') ?? ''), ...(agentId ? { agentId } : {}) }));
            setCopied(false);
            setError(undefined);
            await load();
          } catch (failure) {
            setError(failure);
          }
        }}
      >
        <h2>New webhook</h2>
        {formError(error, PATHS) && <p role="alert" className="field-error">{formError(error, PATHS)}</p>}
        <Field id="hook-name" label="Name" error={fieldError(error, '/name')}>
          <input id="hook-name" name="name" />
        </Field>
        <Field id="hook-agent" label="Agent" error={fieldError(error, '/agentId')}>
          <AgentSelect id="hook-agent" name="agentId" agents={agents} withDefault />
        </Field>
        <Field id="hook-template" label="Task template" error={fieldError(error, '/taskTemplate')} hint="placeholders: {{payload.<path>}}, {{hook.name}}, {{delivery.id}}">
          <textarea id="hook-template" name="taskTemplate" rows={3} defaultValue="A {{payload.event}} arrived for {{payload.repository}}. Summarise it." />
        </Field>
        <button type="submit">Create webhook</button>
      </form>

      {created && (
        <section className="secret" aria-labelledby="secret-heading">
          <h2 id="secret-heading">Secret for {created.name} (shown once)</h2>
          <p>
            <code data-testid="hook-secret">{created.secret}</code>
          </p>
          <label htmlFor="curl-example">Signed curl example</label>
          <textarea id="curl-example" readOnly rows={12} value={example} />
          <button
            type="button"
            onClick={async () => {
              await navigator.clipboard?.writeText(example).catch(() => undefined);
              setCopied(true);
            }}
          >
            Copy curl example
          </button>
          {copied && <span role="status"> Copied.</span>}
        </section>
      )}

      <ul className="cards">
        {hooks.map((hook) => (
          <li key={hook.id} className="card">
            <h2>{hook.name}</h2>
            <p className="muted">
              POST {hook.deliveryUrl} · <RunsGoTo agents={agents} agentId={hook.agentId} threadId={hook.threadId} titles={titles} />
            </p>
            <p>{hook.taskTemplate}</p>
            <HookDeliveries hook={hook} />
            <DeleteButton
              confirm={`Delete webhook "${hook.name}"?`}
              path={`/api/hooks/${hook.id}`}
              then={load}
              gone={`Webhook "${hook.name}" was already deleted.`}
            >
              Delete {hook.name}
            </DeleteButton>
          </li>
        ))}
      </ul>
    </main>
  );
}
