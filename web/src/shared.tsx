import { useCallback, useEffect, useId, useRef, useState, type ButtonHTMLAttributes, type ReactNode } from 'react';
import { api, ApiError, type Agent, type LiveConnection, type Thread, type VigilEvent } from './api.js';

/** A clock that ticks every second, for countdowns. */
export function useNow(intervalMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const tick = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(tick);
  }, [intervalMs]);
  return now;
}

/** "9 min 58 s" until a time (0 s once it passed). */
export function countdown(dueAt: string, now: number): string {
  const seconds = Math.max(0, Math.round((Date.parse(dueAt) - now) / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  return minutes < 60 ? `${minutes} min ${seconds % 60} s` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/**
 * Load now, and again whenever the live connection reports an event that matters (of a
 * thread, when one is given; a type in `types` or starting with a prefix ending in '.'),
 * and every `pollMs` when given (for things no subscribed stream reports).
 */
export function useLiveLoad(live: LiveConnection, load: () => Promise<void>, options: { threadId?: string; types: string[]; pollMs?: number }): void {
  const { threadId, types, pollMs } = options;
  const key = types.join(',');
  const matters = useCallback(
    (event: VigilEvent) => {
      if (threadId !== undefined && (!('threadId' in event) || event.threadId !== threadId)) return false;
      return key.split(',').some((type) => (type.endsWith('.') ? event.type.startsWith(type) : event.type === type));
    },
    [threadId, key],
  );
  useEffect(() => {
    void load();
    const off = live.on((event) => {
      if (matters(event)) void load();
    });
    const poll = pollMs ? setInterval(() => void load(), pollMs) : undefined;
    return () => {
      off();
      if (poll) clearInterval(poll);
    };
  }, [live, load, matters, pollMs]);
}

/** Whether the live connection is up, as React state. */
export function useOnline(live: LiveConnection): boolean {
  const [online, setOnline] = useState(live.isOnline);
  useEffect(() => {
    setOnline(live.isOnline);
    return live.onStatus(setOnline);
  }, [live]);
  return online;
}

/**
 * The connection's state, said (role=status, present from the start so screen readers hear
 * it change): "Offline — reconnecting…" while the server cannot be reached, nothing once
 * it is back.
 */
export function ConnectionStatus({ live }: { live: LiveConnection }) {
  const online = useOnline(live);
  return (
    <p role="status" className="connection">
      {online ? '' : 'Offline — reconnecting…'}
    </p>
  );
}

/** A refused request, plainly: its stable code and the server's message. */
export function ErrorNote({ error, prefix, id }: { error: unknown; prefix?: string; id?: string }) {
  if (!error) return null;
  const text = error instanceof ApiError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
  return (
    <p role="alert" className="field-error" id={id}>
      {prefix ? `${prefix} ` : ''}
      {text}
    </p>
  );
}

/** What an action says when it did not need doing, announced once app-wide (its control may be gone with its item). */
const announceListeners = new Set<(text: string) => void>();

export function announce(text: string): void {
  for (const listener of announceListeners) listener(text);
}

/** The app's one polite status line for `announce`: present from the start, so screen readers hear what lands in it. */
export function Announcer() {
  const [said, setSaid] = useState<{ text: string; count: number }>({ text: '', count: 0 });
  useEffect(() => {
    const listener = (text: string) => setSaid((last) => ({ text, count: last.count + 1 }));
    announceListeners.add(listener);
    return () => {
      announceListeners.delete(listener);
    };
  }, []);
  useEffect(() => {
    if (!said.text) return;
    const clear = setTimeout(() => setSaid((last) => ({ ...last, text: '' })), 10_000);
    return () => clearTimeout(clear);
  }, [said]);
  return (
    <p role="status" className="announcer">
      {said.text}
    </p>
  );
}

/**
 * What an action on an item does when the server answers 404, the item already gone
 * (deleted elsewhere): `onGone` brings the page up to date (the item leaves its list) and
 * `gone` is said (role=status) instead of an error. `alreadyDone` names refusals that mean
 * the same for the person, the action no longer needed (code → what is said), such as
 * TIMER_NOT_PENDING on cancelling a follow-up that already ran: handled like a 404.
 */
export interface GoneHandling {
  onGone?: () => unknown;
  gone?: string;
  alreadyDone?: Readonly<Record<string, string>>;
}

/** What to say instead of an error when `failure` means the action was not needed, else undefined. */
function notNeeded(failure: unknown, options: GoneHandling | undefined): string | undefined {
  if (!(failure instanceof ApiError) || !options) return undefined;
  if (options.onGone && failure.status === 404) return options.gone ?? 'Already deleted elsewhere.';
  const done = options.alreadyDone;
  return done && Object.hasOwn(done, failure.code) ? done[failure.code] : undefined;
}

/**
 * An action a control starts (a request to the API): `busy` while it is out, and what the
 * server answered when it refused, kept to show next to the control until the next try.
 * `run` resolves true when the action went through (or, with `onGone` or `alreadyDone`,
 * was not needed: the item was already gone, or the thing already done).
 */
export function useAction(): { busy: boolean; error: unknown; run: (work: () => Promise<unknown>, options?: GoneHandling) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const mounted = useRef(true);
  const out = useRef(false);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  const run = useCallback(async (work: () => Promise<unknown>, options?: GoneHandling) => {
    if (out.current) return false; // one request at a time
    out.current = true;
    setBusy(true);
    setError(undefined);
    try {
      try {
        await work();
      } catch (failure) {
        const said = notNeeded(failure, options);
        if (said === undefined) throw failure;
        announce(said);
        await options?.onGone?.();
      }
      return true;
    } catch (failure) {
      if (mounted.current) setError(failure); // a control gone with its item (deleted) shows nothing
      return false;
    } finally {
      out.current = false;
      if (mounted.current) setBusy(false);
    }
  }, []);
  const clear = useCallback(() => setError(undefined), []);
  return { busy, error, run, clear };
}

/**
 * A button that runs an action (after `confirm`, when given): marked disabled while its
 * request is out (aria-disabled, so the keyboard focus stays on it), and the server's
 * refusal, code and message, shown right after it (role=alert) and describing it. A Delete
 * passes `onGone` (and `gone`): answered 404, its item is taken off the page and that is said;
 * `alreadyDone` does the same for the refusals it names.
 */
export function ActionButton({
  action,
  confirm: question,
  errorPrefix,
  onGone,
  gone,
  alreadyDone,
  children,
  className,
  ...rest
}: Omit<ButtonHTMLAttributes<HTMLButtonElement>, 'onClick' | 'type' | 'disabled' | 'children'> &
  GoneHandling & {
    action: () => Promise<unknown>;
    confirm?: string;
    errorPrefix?: string;
    children: ReactNode;
  }) {
  const { busy, error, run } = useAction();
  const errorId = useId();
  return (
    <>
      <button
        type="button"
        className={className}
        {...rest}
        aria-disabled={busy || undefined}
        aria-busy={busy || undefined}
        aria-describedby={error ? errorId : rest['aria-describedby']}
        onClick={() => {
          if (busy || (question !== undefined && !confirm(question))) return;
          void run(action, { onGone, gone, alreadyDone });
        }}
      >
        {children}
      </button>
      <ErrorNote id={errorId} error={error} prefix={errorPrefix} />
    </>
  );
}

/**
 * The delete button every list shares: asks first (when `confirm` is given), sends DELETE to
 * `path`, then `then` (a reload, or taking the item off the page); an item already deleted
 * (404) is said with `gone` and handled the same way.
 */
export function DeleteButton({
  path,
  then,
  className,
  ...rest
}: Omit<Parameters<typeof ActionButton>[0], 'action' | 'onGone' | 'errorPrefix'> & { path: string; then: () => unknown }) {
  return (
    <ActionButton
      {...rest}
      className={className ?? 'danger'}
      errorPrefix="Not deleted:"
      action={async () => {
        await api('DELETE', path);
        await then();
      }}
      onGone={then}
    />
  );
}

/** A JSON value, pretty-printed; a string that holds JSON is printed as its value. */
export function JsonBlock({ value, className }: { value: unknown; className?: string }) {
  let shown = value;
  if (typeof value === 'string') {
    try {
      shown = JSON.parse(value) as unknown;
    } catch {
      shown = value;
    }
  }
  return (
    // Focusable: a long value scrolls, and a keyboard must reach it.
    <pre className={`json${className ? ` ${className}` : ''}`} tabIndex={0}>
      {typeof shown === 'string' ? shown : JSON.stringify(shown, null, 2)}
    </pre>
  );
}

export function formatTime(iso: string): string {
  return new Date(iso).toLocaleString();
}

/** The default agent's id (DEFAULT_AGENT_ID in src/app/agent-service.ts): a new thread, schedule or webhook with no agent gets it. */
const DEFAULT_AGENT_ID = 'default';

/**
 * A choice of agent, each listed once. With `withDefault`, the first option is the default
 * agent as an empty value (the server picks it, making it for a newcomer who has none yet):
 * named as the list has it, and not listed again.
 */
export function AgentSelect({
  id,
  agents,
  withDefault,
  name,
  value,
  onChange,
}: {
  id: string;
  agents: Agent[];
  withDefault?: boolean;
  name?: string;
  value?: string;
  onChange?: (agentId: string) => void;
}) {
  return (
    <select id={id} name={name} {...(value !== undefined ? { value } : {})} {...(onChange ? { onChange: (event) => onChange(event.target.value) } : {})}>
      {withDefault && <option value="">{agents.find((agent) => agent.id === DEFAULT_AGENT_ID)?.name ?? 'Default agent'}</option>}
      {agents
        .filter((agent) => !withDefault || agent.id !== DEFAULT_AGENT_ID)
        .map((agent) => (
          <option key={agent.id} value={agent.id}>
            {agent.name}
          </option>
        ))}
    </select>
  );
}

/** An agent's name as the server has it now (its id while the list does not have it). */
export function agentName(agents: Agent[], agentId: string): string {
  return agents.find((agent) => agent.id === agentId)?.name ?? agentId;
}

/**
 * The titles of the threads a list points at, read when the list is: a thread renamed or
 * deleted elsewhere shows as it is now. `undefined` while loading.
 */
export function useThreadTitles(threadIds: Array<string | null>): Record<string, string> | undefined {
  const key = [...new Set(threadIds.filter((id): id is string => id !== null))].sort().join(',');
  const [titles, setTitles] = useState<Record<string, string> | undefined>();
  useEffect(() => {
    let current = true;
    const ids = key ? key.split(',') : [];
    void Promise.all(
      ids.map(async (id) => {
        try {
          return [id, (await api<Thread>('GET', `/api/threads/${encodeURIComponent(id)}`)).title ?? 'Untitled thread'] as const;
        } catch (failure) {
          return [id, failure instanceof ApiError && failure.status === 404 ? 'a deleted thread' : id] as const;
        }
      }),
    ).then((entries) => {
      if (current) setTitles(Object.fromEntries(entries));
    });
    return () => {
      current = false;
    };
  }, [key]);
  return titles;
}

/** Where a schedule's or webhook's runs go: its agent, and its thread or a new one each time. */
export function RunsGoTo({ agents, agentId, threadId, titles }: { agents: Agent[]; agentId: string; threadId: string | null; titles: Record<string, string> | undefined }) {
  return (
    <>
      agent <strong>{agentName(agents, agentId)}</strong> ·{' '}
      {threadId ? (
        <>
          thread <a href={`#chat/${encodeURIComponent(threadId)}`}>{titles?.[threadId] ?? '…'}</a>
        </>
      ) : (
        'a new thread each time'
      )}
    </>
  );
}
