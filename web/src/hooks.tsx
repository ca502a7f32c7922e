import { useEffect, useState } from 'react';
import { api, type Agent, type CreatedHook, type Hook } from './api.js';
import { Field, fieldError, formError } from './fields.js';

const PATHS = ['/name', '/taskTemplate', '/agentId', '/payloadFields'];

/** A signed delivery with the tools every shell has: the secret signs "<timestamp>.<body>". */
export function curlExample(hook: CreatedHook, origin: string): string {
  return [
    `BODY='{"event":"push","repository":"vigil"}'`,
    'TS=$(date +%s)',
    `SIG=$(printf '%s.%s' "$TS" "$BODY" | openssl dgst -sha256 -hmac '${hook.secret}' | sed 's/^.* //')`,
    `curl -X POST '${origin}${hook.deliveryUrl}' \\`,
    `  -H 'content-type: application/json' \\`,
    `  -H "x-vigil-timestamp: $TS" \\`,
    `  -H "x-vigil-delivery: $(date +%s%N)" \\`,
    `  -H "x-vigil-signature: sha256=$SIG" \\`,
    `  -d "$BODY"`,
  ].join('\n');
}

export function HooksView({ agents }: { agents: Agent[] }) {
  const [hooks, setHooks] = useState<Hook[]>([]);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<CreatedHook | undefined>();
  const [copied, setCopied] = useState(false);

  const load = async () => setHooks((await api<{ hooks: Hook[] }>('GET', '/api/hooks?limit=100')).hooks);
  useEffect(() => {
    void load();
  }, []);

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
          <select id="hook-agent" name="agentId">
            <option value="">Default agent</option>
            {agents.map((agent) => (
              <option key={agent.id} value={agent.id}>
                {agent.name}
              </option>
            ))}
          </select>
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
          <textarea id="curl-example" readOnly rows={9} value={example} />
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
              POST {hook.deliveryUrl} · {hook.agentId}
            </p>
            <p>{hook.taskTemplate}</p>
            <button
              type="button"
              className="danger"
              onClick={async () => {
                if (!confirm(`Delete webhook "${hook.name}"?`)) return;
                await api('DELETE', `/api/hooks/${hook.id}`);
                await load();
              }}
            >
              Delete {hook.name}
            </button>
          </li>
        ))}
      </ul>
    </main>
  );
}
