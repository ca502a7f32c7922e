import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { api, ApiError, newRequestId, type Agent, type ClientFrame, type Hook, type LiveConnection, type Message, type Run, type Schedule, type Thread, type VigilEvent } from './api.js';
import { ActionButton, AgentSelect, DeleteButton, ErrorNote, useOnline } from './shared.js';
import { Markdown, textOf } from './markdown.js';
import { Inspector } from './inspector.js';
import { whyOf, type TriggerNames } from './why.js';
import { ThreadApprovals } from './approvals.js';
// A value, not only a type, from the server: the API's own limit (a module with no imports), bundled.
import { MESSAGE_MAX_CHARACTERS } from '../../src/http/limits.js';

const SEEN_PREFIX = 'vigil.seen.';
/** Messages per page of history: the newest page when a thread opens, more on "Load earlier messages". */
const HISTORY_PAGE = 50;
/** Threads per page of the list: the newest page (polled), more on "Show more threads". */
const THREAD_PAGE = 50;
/** How close to the bottom (px) still counts as reading the newest messages. */
const AT_BOTTOM_PX = 8;

function selectedFromHash(): string | undefined {
  const [view, id] = location.hash.slice(1).split('/');
  return view === 'chat' && id ? decodeURIComponent(id) : undefined;
}

/** A thread has an unseen autonomous message: something visible arrived after the person's last word and after they last looked. */
function hasUnseenAutonomous(thread: Thread): boolean {
  if (!thread.lastMessageAt) return false;
  const seen = localStorage.getItem(SEEN_PREFIX + thread.id) ?? '';
  const afterPerson = !thread.lastUserActivityAt || thread.lastMessageAt > thread.lastUserActivityAt;
  return afterPerson && thread.lastMessageAt > seen && thread.messageCount > 1;
}

/**
 * Whether Escape belongs to the focused element (typing in a field, a list open): the
 * app's own Escape (closing the inspector) leaves it alone.
 */
function escapeBelongsTo(target: EventTarget | null): boolean {
  return target instanceof Element && target.closest('input:not([type=checkbox], [type=radio], [type=button], [type=submit], [type=reset]), textarea, select, [contenteditable]:not([contenteditable=false])') !== null;
}

function markSeen(threadId: string): void {
  localStorage.setItem(SEEN_PREFIX + threadId, new Date().toISOString());
}

export function ChatView({ agents, live, onAgentsChanged }: { agents: Agent[]; live: LiveConnection; onAgentsChanged: () => Promise<void> }) {
  const [threads, setThreads] = useState<Thread[]>([]);
  const [selected, setSelected] = useState<string | undefined>(selectedFromHash);
  const [names, setNames] = useState<TriggerNames>({ schedules: [], hooks: [], loaded: false });
  const [showThreads, setShowThreads] = useState(false);
  const [showInspector, setShowInspector] = useState(false);
  /** The run of the reply a person asked about ("Inspect" on a reply): the inspector opens at it. */
  const [focusRun, setFocusRun] = useState<string | undefined>();
  const [showInternal, setShowInternal] = useState(false);
  const [newAgent, setNewAgent] = useState('');
  const inspectorToggle = useRef<HTMLButtonElement>(null);

  // Escape closes the inspector (focus back on its toggle), unless the key means something where the focus is.
  useEffect(() => {
    if (!showInspector) return;
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || event.defaultPrevented || escapeBelongsTo(event.target)) return;
      event.preventDefault();
      setShowInspector(false);
      setFocusRun(undefined);
      inspectorToggle.current?.focus();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [showInspector]);

  /** Where the list goes on after its first page (null: nothing more). */
  const [firstCursor, setFirstCursor] = useState<string | null>(null);
  /** Pages past the first, loaded on "Show more threads", and where the next one starts. */
  const [more, setMore] = useState<{ threads: Thread[]; cursor: string | null } | undefined>();
  const [loadingMore, setLoadingMore] = useState(false);
  const [moreError, setMoreError] = useState<unknown>();
  /** The thread opened by its address when the loaded pages do not hold it (or why it could not be read). */
  const [linked, setLinked] = useState<Thread | { id: string; error: unknown } | undefined>();

  const reloadThreads = useCallback(async () => {
    const page = await api<{ threads: Thread[]; nextCursor: string | null }>('GET', `/api/threads?limit=${THREAD_PAGE}`);
    setThreads(page.threads);
    setFirstCursor(page.nextCursor);
  }, []);

  const nextCursor = more ? more.cursor : firstCursor;
  const showMore = async () => {
    if (!nextCursor || loadingMore) return;
    setLoadingMore(true);
    try {
      const page = await api<{ threads: Thread[]; nextCursor: string | null }>('GET', `/api/threads?limit=${THREAD_PAGE}&cursor=${encodeURIComponent(nextCursor)}`);
      setMore((current) => ({ threads: [...(current?.threads ?? []), ...page.threads], cursor: page.nextCursor }));
      setMoreError(undefined);
    } catch (failure) {
      setMoreError(failure);
    } finally {
      setLoadingMore(false);
    }
  };

  /** A thread renamed or deleted from the list: the pages past the first and the linked one follow. */
  const changed = (thread: Thread, deleted = false) => {
    const update = (list: Thread[]) => (deleted ? list.filter((entry) => entry.id !== thread.id) : list.map((entry) => (entry.id === thread.id ? thread : entry)));
    setMore((current) => current && { ...current, threads: update(current.threads) });
    setLinked((current) => (current && current.id === thread.id ? (deleted ? undefined : thread) : current));
  };

  useEffect(() => {
    void reloadThreads();
    const names = async () => {
      const [schedules, hooks] = await Promise.all([
        api<{ schedules: Schedule[] }>('GET', '/api/schedules').catch(() => ({ schedules: [] })),
        api<{ hooks: Hook[] }>('GET', '/api/hooks?limit=100').catch(() => ({ hooks: [] })),
      ]);
      setNames({ schedules: schedules.schedules, hooks: hooks.hooks, loaded: true });
    };
    void names();
    // Threads that are not open change too (a schedule's new thread, a follow-up): poll the list.
    const poll = setInterval(() => void reloadThreads(), 4000);
    const onHash = () => setSelected(selectedFromHash());
    addEventListener('hashchange', onHash);
    return () => {
      clearInterval(poll);
      removeEventListener('hashchange', onHash);
    };
  }, [reloadThreads]);

  const open = (threadId: string) => {
    location.hash = `chat/${encodeURIComponent(threadId)}`;
    setShowThreads(false);
  };

  const create = async () => {
    const thread = await api<Thread>('POST', '/api/threads', newAgent ? { agentId: newAgent } : {});
    await reloadThreads().catch(() => undefined); // the list polls again; the new thread opens anyway
    open(thread.id);
  };

  // The list: the first page (polled), then the pages shown on request, each thread once (one that moved up is in the first page).
  const firstIds = new Set(threads.map((thread) => thread.id));
  const listed = [...threads, ...(more?.threads ?? []).filter((thread) => !firstIds.has(thread.id))];
  const inList = listed.find((thread) => thread.id === selected);
  const current = inList ?? (linked && linked.id === selected && !('error' in linked) ? linked : undefined);

  // A thread opened by its address that the loaded pages do not hold (a link, an older thread): read it on its own.
  useEffect(() => {
    if (!selected || inList || (linked && linked.id === selected)) return;
    let still = true;
    api<Thread>('GET', `/api/threads/${encodeURIComponent(selected)}`).then(
      (thread) => still && setLinked(thread),
      (error: unknown) => still && setLinked({ id: selected, error }),
    );
    return () => {
      still = false;
    };
  }, [selected, inList, linked]);
  const linkedError = linked && linked.id === selected && 'error' in linked ? linked.error : undefined;

  // A thread of an agent this page has not listed (a newcomer's first thread made the default
  // agent; an agent made elsewhere): list the agents again, once per such id, to name it.
  const askedFor = useRef(new Set<string>());
  const unknownAgent = current && !agents.some((agent) => agent.id === current.agentId) ? current.agentId : undefined;
  useEffect(() => {
    if (!unknownAgent || askedFor.current.has(unknownAgent)) return;
    askedFor.current.add(unknownAgent);
    void onAgentsChanged().catch(() => undefined);
  }, [unknownAgent, onAgentsChanged]);

  return (
    <div className={`chat-layout${showInspector ? ' with-inspector' : ''}`}>
      <aside className={`threads${showThreads ? ' open' : ''}`} aria-label="Threads">
        <div className="new-thread">
          <label htmlFor="new-thread-agent">Agent for a new thread</label>
          <AgentSelect id="new-thread-agent" agents={agents} withDefault value={newAgent} onChange={setNewAgent} />
          <ActionButton action={create} errorPrefix="No new thread:">
            New thread
          </ActionButton>
        </div>
        <ul className="thread-list">
          {listed.map((thread) => (
            <ThreadItem
              key={thread.id}
              thread={thread}
              active={thread.id === selected}
              onOpen={() => open(thread.id)}
              onChanged={(renamed) => {
                changed(renamed);
                void reloadThreads();
              }}
              onDeleted={() => {
                if (thread.id === selected) location.hash = 'chat';
                changed(thread, true);
                void reloadThreads();
              }}
            />
          ))}
          {listed.length === 0 && <li className="empty">No threads yet.</li>}
        </ul>
        {nextCursor && (
          <button type="button" className="secondary show-more" disabled={loadingMore} aria-busy={loadingMore} onClick={() => void showMore()}>
            Show more threads
          </button>
        )}
        <ErrorNote error={moreError} prefix="More threads did not load:" />
      </aside>
      <main className="conversation-pane">
        <div className="pane-bar">
          <button type="button" className="mobile-only" aria-expanded={showThreads} onClick={() => setShowThreads((value) => !value)}>
            Threads
          </button>
          <h1>{current ? current.title ?? 'Untitled thread' : 'Chat'}</h1>
          {current && (
            <>
              <AgentTag agents={agents} thread={current} />
              <button type="button" ref={inspectorToggle} aria-expanded={showInspector} aria-controls="inspector" onClick={() => setShowInspector((value) => !value)}>
                Inspector
              </button>
            </>
          )}
        </div>
        {current ? (
          <Conversation
            key={current.id}
            thread={current}
            agents={agents}
            live={live}
            names={names}
            showInternal={showInternal}
            onActivity={reloadThreads}
            onInspect={(runId) => {
              setFocusRun(runId);
              setShowInspector(true);
            }}
          />
        ) : linkedError ? (
          <ErrorNote error={linkedError} prefix="This thread could not be opened:" />
        ) : (
          <p className="hint">{selected ? 'Loading the thread…' : 'Pick a thread or start a new one.'}</p>
        )}
      </main>
      {current && showInspector && (
        <Inspector
          thread={current}
          live={live}
          names={names}
          showInternal={showInternal}
          onShowInternal={setShowInternal}
          focusRun={focusRun}
          onClose={() => {
            setShowInspector(false);
            setFocusRun(undefined);
          }}
        />
      )}
    </div>
  );
}

/** Which agent answers the open thread (new threads take the agent chosen in the list). */
function AgentTag({ agents, thread }: { agents: Agent[]; thread: Thread }) {
  const agent = agents.find((candidate) => candidate.id === thread.agentId);
  return <span className="agent-tag">{agent?.name ?? thread.agentId}</span>;
}

function ThreadItem({ thread, active, onOpen, onChanged, onDeleted }: { thread: Thread; active: boolean; onOpen: () => void; onChanged: (thread: Thread) => void; onDeleted: () => void }) {
  const [renaming, setRenaming] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const renameButton = useRef<HTMLButtonElement>(null);
  /** Whether the rename form was just left without saving: the focus goes back to Rename. */
  const [cancelled, setCancelled] = useState(false);
  useEffect(() => {
    if (!cancelled) return;
    renameButton.current?.focus();
    setCancelled(false);
  }, [cancelled]);
  const cancel = () => {
    setRenaming(false);
    setError(undefined);
    setCancelled(true);
  };
  const unseen = !active && hasUnseenAutonomous(thread);
  const title = thread.title ?? 'Untitled thread';
  if (renaming) {
    return (
      <li>
        <form
          className="rename"
          onKeyDown={(event) => {
            if (event.key !== 'Escape') return;
            event.preventDefault();
            cancel();
          }}
          onSubmit={async (event) => {
            event.preventDefault();
            const value = String(new FormData(event.currentTarget).get('title') ?? '').trim();
            try {
              const renamed = await api<Thread>('PATCH', `/api/threads/${thread.id}`, { title: value || null });
              setRenaming(false);
              onChanged(renamed);
            } catch (failure) {
              setError(failure instanceof ApiError ? failure.fieldError('/title') ?? failure.message : String(failure));
            }
          }}
        >
          <label htmlFor={`rename-${thread.id}`}>New title</label>
          <input id={`rename-${thread.id}`} name="title" defaultValue={thread.title ?? ''} autoFocus maxLength={200} />
          {error && <p className="field-error" role="alert">{error}</p>}
          <button type="submit">Save</button>
          <button type="button" onClick={cancel}>
            Cancel
          </button>
        </form>
      </li>
    );
  }
  return (
    <li className={active ? 'active' : undefined}>
      <button type="button" className="thread-open" aria-current={active ? 'true' : undefined} onClick={onOpen}>
        <span className="thread-title">{title}</span>
        {unseen && <span className="unseen" aria-label="new autonomous message">●</span>}
        <span className="thread-preview">{thread.preview ?? 'No messages yet'}</span>
      </button>
      <div className="thread-actions">
        <button type="button" ref={renameButton} className="small" aria-label={`Rename ${title}`} onClick={() => setRenaming(true)}>
          Rename
        </button>
        <DeleteButton
          className="small danger"
          aria-label={`Delete ${title}`}
          confirm={`Delete "${title}" and its messages?`}
          path={`/api/threads/${thread.id}`}
          then={onDeleted}
          gone={`"${title}" was already deleted.`}
        >
          Delete
        </DeleteButton>
      </div>
    </li>
  );
}

/** What a failed run was, by its trigger, for a failure that is not the person's own message. */
const FAILED_RUN: Record<string, string> = {
  autonomy: 'The follow-up',
  cron: 'The scheduled run',
  webhook: "The webhook's run",
  channel: "The chat channel's run",
  heartbeat: "The overlord's heartbeat run",
};

/**
 * A failed run, as the person reads it. Only a person's own message can be sent again; a run nobody started
 * (a follow-up, a schedule, a webhook) has no retry in the API: say which run failed, and offer no Retry that
 * would resend the person's last message.
 */
function failureOf(trigger: string, code: string, message: string, retry: string | undefined): { code: string; message: string; what?: string; retry?: string } {
  if (trigger === 'user') return { code, message, ...(retry ? { retry } : {}) };
  return { code, message, what: `${FAILED_RUN[trigger] ?? `The ${trigger} run`} failed and is not retried (the API has no retry for it); your messages are unaffected.` };
}

interface Draft {
  messageId: string;
  runId: string;
  text: string;
}

/**
 * A message the person sent that has not landed in the thread yet: shown as theirs, marked
 * pending, until the server adds it (it waits for a reply that is still running), or put
 * back in the message box if the server refuses it.
 */
interface Pending {
  key: number;
  content: string;
  /** The frame that sends it: while the connection is lost it waits in the LiveConnection, and can be taken back. */
  frame: ClientFrame;
  /** The person's messages with the same text already shown when it was sent: not this one. */
  before: ReadonlySet<string>;
}

let pendingKeys = 0;

/** Which pending messages have landed: each is matched to a newer message of the person's with its text, in order. */
function landedPending(pending: readonly Pending[], messages: readonly Message[]): Set<number> {
  const landed = new Set<number>();
  const used = new Set<string>();
  for (const entry of pending) {
    const match = messages.find((message) => message.role === 'user' && !entry.before.has(message.id) && !used.has(message.id) && textOf(message.content) === entry.content);
    if (match) {
      used.add(match.id);
      landed.add(entry.key);
    }
  }
  return landed;
}

const count = (value: number) => value.toLocaleString('en');

function Conversation({
  thread,
  agents,
  live,
  names,
  showInternal,
  onActivity,
  onInspect,
}: {
  thread: Thread;
  agents: Agent[];
  live: LiveConnection;
  names: TriggerNames;
  showInternal: boolean;
  onActivity: () => void;
  onInspect: (runId: string) => void;
}) {
  const [messages, setMessages] = useState<Message[]>([]);
  const [runs, setRuns] = useState<Record<string, Run>>({});
  const [drafts, setDrafts] = useState<Draft[]>([]);
  const [activeRun, setActiveRun] = useState<{ runId: string; trigger: string } | undefined>();
  const [failure, setFailure] = useState<{ code: string; message: string; what?: string; retry?: string } | undefined>();
  /** Each run's trigger, from its run.start: whose run a failure ends decides what Retry could mean. */
  const triggers = useRef(new Map<string, string>());
  const [text, setText] = useState('');
  /** Messages sent that have not landed yet (oldest first). */
  const [pending, setPending] = useState<Pending[]>([]);
  /** Whether the person tried to send a message longer than the API takes (said until the text is short enough). */
  const [triedTooLong, setTriedTooLong] = useState(false);
  const lastSent = useRef<string | undefined>(undefined);
  const logRef = useRef<HTMLDivElement>(null);
  const composerRef = useRef<HTMLTextAreaElement>(null);
  const agent = agents.find((candidate) => candidate.id === thread.agentId);

  const runsRef = useRef(runs);
  runsRef.current = runs;

  // A pending message is shown until its own lands (live, or in history reloaded after a reconnect), never beside it.
  const landed = landedPending(pending, messages);
  const waiting = pending.filter((entry) => !landed.has(entry.key));
  const waitingRef = useRef(waiting);
  waitingRef.current = waiting;
  const landedKeys = [...landed].join(',');
  useEffect(() => {
    if (!landedKeys) return;
    const gone = new Set(landedKeys.split(',').map(Number));
    setPending((current) => current.filter((entry) => !gone.has(entry.key)));
  }, [landedKeys]);

  const loadRuns = useCallback(async () => {
    const list = (await api<{ runs: Run[] }>('GET', `/api/threads/${thread.id}/runs?limit=100`)).runs;
    setRuns(Object.fromEntries(list.map((run) => [run.id, run])));
    return list;
  }, [thread.id]);

  /** Where the next older page starts (null: the thread's first message is loaded). */
  const [olderCursor, setOlderCursor] = useState<string | null>(null);
  const [loadingEarlier, setLoadingEarlier] = useState(false);
  /** Whether the view follows what arrives: the person is at the bottom (not scrolled up to read). */
  const following = useRef(true);
  const [awayFromBottom, setAwayFromBottom] = useState(false);
  /** A message on screen and its offset in the log, kept in place as earlier messages are put above it. */
  const anchor = useRef<{ id: string; offset: number } | undefined>(undefined);

  /**
   * The newest page. `fresh` (opening, or internal messages shown or hidden): it replaces
   * what was loaded, and earlier pages are loaded again on request. Otherwise (back after a
   * dropped connection) it is merged: earlier pages stay. Either way a message that arrived
   * live while the page was on its way is newer than it, and stays.
   */
  const loadHistory = useCallback(
    async (fresh: boolean) => {
      const page = await api<{ messages: Message[]; nextCursor: string | null }>('GET', `/api/threads/${thread.id}/history?limit=${HISTORY_PAGE}${showInternal ? '&include=internal' : ''}`);
      setMessages((current) => {
        const loaded = new Set(page.messages.map((message) => message.id));
        const firstAt = page.messages[0]?.createdAt ?? '';
        const lastAt = page.messages.at(-1)?.createdAt ?? '';
        const earlier = fresh ? [] : current.filter((message) => !loaded.has(message.id) && message.createdAt < firstAt);
        return [...earlier, ...page.messages, ...current.filter((message) => !loaded.has(message.id) && message.createdAt > lastAt)];
      });
      if (fresh) setOlderCursor(page.nextCursor);
      return page.messages;
    },
    [thread.id, showInternal],
  );

  const loadEarlier = async () => {
    if (!olderCursor || loadingEarlier) return;
    setLoadingEarlier(true);
    try {
      const page = await api<{ messages: Message[]; nextCursor: string | null }>(
        'GET',
        `/api/threads/${thread.id}/history?limit=${HISTORY_PAGE}&cursor=${encodeURIComponent(olderCursor)}${showInternal ? '&include=internal' : ''}`,
      );
      const log = logRef.current;
      const first = log?.querySelector<HTMLElement>('article[data-message-id]');
      if (log && first) anchor.current = { id: first.dataset.messageId!, offset: first.getBoundingClientRect().top - log.getBoundingClientRect().top };
      setMessages((current) => {
        const shown = new Set(current.map((message) => message.id));
        return [...page.messages.filter((message) => !shown.has(message.id)), ...current];
      });
      setOlderCursor(page.nextCursor);
    } catch (failure) {
      setFailure({ code: failure instanceof ApiError ? failure.code : 'HTTP_ERROR', message: `Earlier messages did not load: ${failure instanceof Error ? failure.message : String(failure)}` });
    } finally {
      setLoadingEarlier(false);
    }
  };

  /** The newest page as loaded at opening (or when internal messages were shown or hidden). */
  const historyLoaded = useRef<Promise<Message[]>>(Promise.resolve([]));
  useEffect(() => {
    const history = loadHistory(true);
    historyLoaded.current = history;
    history.catch(() => undefined);
  }, [loadHistory]);

  // Opening: the thread's runs say whether a reply is under way, and the subscription starts
  // where the loaded history ends. A reply still running (the page reloaded, the thread
  // reopened) is replayed from its start: its draft whole, its Stop button back. Otherwise
  // the events after the newest run ended (its own stream is in history; an approval of it
  // decided since is not), so that a run starting meanwhile is not missed.
  useEffect(() => {
    let current = true;
    const runList = loadRuns();
    runList.then(
      (list) => {
        if (!current) return;
        const running = list.find((run) => run.status === 'running');
        if (running) {
          triggers.current.set(running.id, running.trigger);
          setActiveRun((live) => live ?? { runId: running.id, trigger: running.trigger });
        }
        const newest = list[0];
        const ofRun = (event: VigilEvent, run: Run) => 'runId' in event && event.runId === run.id;
        const streamOf = (event: VigilEvent, run: Run) => ofRun(event, run) && (event.type.startsWith('run.') || event.type.startsWith('message.'));
        live.subscribe(
          thread.id,
          running
            ? (event) => event.at >= running.startedAt || ofRun(event, running)
            : newest
              ? (event) => event.at >= (newest.endedAt ?? newest.startedAt) && !streamOf(event, newest)
              : () => true,
        );
      },
      () => {
        if (current) live.subscribe(thread.id);
      },
    );
    // Opened after its newest run failed (a follow-up while the thread was not open, a reply before a reload), with
    // nothing newer since: the failure is said as it would have been live. Once per opening, not when internal messages are toggled.
    Promise.all([historyLoaded.current, runList]).then(([shown, list]) => {
      if (!current) return;
      const newest = list[0];
      if (newest?.status !== 'failed') return;
      const ended = newest.endedAt ?? newest.startedAt;
      if (shown.some((message) => message.createdAt > ended)) return;
      const said = failureOf(newest.trigger, newest.error?.code ?? 'RUN_FAILED', newest.error?.message ?? newest.reason ?? 'The reply failed.', undefined);
      setFailure((live) => live ?? said); // one said live meanwhile is newer
    }, () => undefined);
    markSeen(thread.id);
    return () => {
      current = false;
      live.send({ type: 'thread.unsubscribe', threadId: thread.id });
    };
  }, [live, loadRuns, thread.id]);

  // A thread opened is a thread to write in: the keyboard lands in its message box.
  useEffect(() => {
    composerRef.current?.focus();
  }, [thread.id]);

  // Back after a dropped connection: what came in beyond the server's replay window is in history.
  useEffect(
    () =>
      live.onReconnect(() => {
        void loadHistory(false);
        void loadRuns();
      }),
    [live, loadHistory, loadRuns],
  );

  useEffect(() => {
    const off = live.on((event: VigilEvent) => {
      if ('threadId' in event && event.threadId !== thread.id) return;
      switch (event.type) {
        case 'run.start':
          triggers.current.set(event.runId, event.trigger);
          setActiveRun({ runId: event.runId, trigger: event.trigger });
          if (event.trigger !== 'user') void loadRuns();
          break;
        case 'message.delta':
          setDrafts((current) => {
            const existing = current.find((draft) => draft.messageId === event.messageId);
            if (existing) return current.map((draft) => (draft === existing ? { ...draft, text: draft.text + event.delta } : draft));
            return [...current, { messageId: event.messageId, runId: event.runId, text: event.delta }];
          });
          break;
        case 'message.retracted':
          // What streamed under this id will not become a message (the stream broke and the run retries, or it was cut short): it goes now.
          setDrafts((current) => current.filter((draft) => draft.messageId !== event.messageId));
          break;
        case 'message.end': {
          // The draft streamed under its own id (metadata.streamedAs) goes as the message lands, not at run.end.
          const streamedAs = event.message.metadata.streamedAs;
          setDrafts((current) => current.filter((draft) => draft.messageId !== event.message.id && draft.messageId !== streamedAs));
          setMessages((current) =>
            current.some((message) => message.id === event.message.id) ? current : [...current, { ...event.message, runId: event.runId }],
          );
          markSeen(thread.id);
          break;
        }
        case 'run.end':
          setActiveRun((current) => (current?.runId === event.runId ? undefined : current));
          setDrafts((current) => current.filter((draft) => draft.runId !== event.runId));
          if (event.status === 'failed') {
            const trigger = triggers.current.get(event.runId) ?? runsRef.current[event.runId]?.trigger ?? 'user';
            setFailure(failureOf(trigger, event.error?.code ?? 'RUN_FAILED', event.error?.message ?? event.reason ?? 'The reply failed.', lastSent.current));
          }
          void loadRuns();
          if (showInternal) void loadHistory(false);
          markSeen(thread.id);
          onActivity();
          break;
        case 'error': {
          // The server refused a frame. One of a message on its way names it (its requestId):
          // that message goes back in the box to be changed and sent again, and no Retry
          // (sending the same again would be refused the same way). Any other error (a cancel
          // that came too late) is only said: it refused none of the messages on their way.
          const refused = waitingRef.current.find((entry) => entry.frame.type === 'message.send' && event.requestId !== undefined && entry.frame.requestId === event.requestId);
          if (refused) {
            setPending((current) => current.filter((entry) => entry.key !== refused.key));
            setText((current) => (current.trim() ? `${refused.content}\n${current}` : refused.content));
            setFailure({ code: event.code, message: event.message, what: 'Your message was not sent; it is back in the message box.' });
          } else setFailure({ code: event.code, message: event.message });
          break;
        }
        default:
          break;
      }
    });
    return () => {
      off();
    };
  }, [live, thread.id, loadRuns, loadHistory, showInternal, onActivity]);

  // Before paint: earlier messages put above keep what was on screen where it was; what
  // arrives is followed only by a person at the bottom (one scrolled up to read stays put).
  useLayoutEffect(() => {
    const log = logRef.current;
    if (!log) return;
    const kept = anchor.current;
    anchor.current = undefined;
    const element = kept && log.querySelector<HTMLElement>(`[data-message-id="${CSS.escape(kept.id)}"]`);
    if (kept && element) log.scrollTop += element.getBoundingClientRect().top - log.getBoundingClientRect().top - kept.offset;
    else if (following.current) log.scrollTop = log.scrollHeight;
  }, [messages, drafts, pending]);

  const onScroll = () => {
    const log = logRef.current;
    if (!log) return;
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight <= AT_BOTTOM_PX;
    following.current = atBottom;
    setAwayFromBottom(!atBottom);
  };

  const jumpToNewest = () => {
    const log = logRef.current;
    if (!log) return;
    following.current = true;
    log.scrollTop = log.scrollHeight;
    setAwayFromBottom(false);
  };

  /** Send a message; false when it was not sent (nothing to send, or longer than the API takes): it stays where it is. */
  const send = (content: string): boolean => {
    const trimmed = content.trim();
    if (!trimmed) return false;
    if (trimmed.length > MESSAGE_MAX_CHARACTERS) {
      setTriedTooLong(true);
      return false;
    }
    setTriedTooLong(false);
    lastSent.current = trimmed;
    setFailure(undefined);
    // Writing is taking part: the view goes to the newest messages and follows the reply.
    jumpToNewest();
    const before = new Set(messages.filter((message) => message.role === 'user' && textOf(message.content) === trimmed).map((message) => message.id));
    // Named, so that the server's refusal of it (an error with its requestId) is told from any other.
    const frame: ClientFrame = { type: 'message.send', threadId: thread.id, content: trimmed, requestId: newRequestId() };
    setPending((current) => [...current, { key: ++pendingKeys, content: trimmed, frame, before }]);
    live.send(frame); // with the connection lost, it waits and goes out once the connection is back
    return true;
  };

  /** A message waiting for the connection taken back: not sent, back in the box. */
  const takeBack = (entry: Pending) => {
    if (!live.unsend(entry.frame)) return; // it went out meanwhile
    setPending((current) => current.filter((other) => other.key !== entry.key));
    setText((current) => (current.trim() ? `${entry.content}\n${current}` : entry.content));
    composerRef.current?.focus();
  };
  const online = useOnline(live);

  const tooLongShown = triedTooLong && text.trim().length > MESSAGE_MAX_CHARACTERS;

  const why = (runId: string | null) => (runId ? whyOf(runs[runId], names) : undefined);
  const activeWhy = activeRun && activeRun.trigger !== 'user' ? whyOf(runs[activeRun.runId] ?? { trigger: activeRun.trigger as Run['trigger'], meta: {} }, names) : undefined;

  return (
    <>
      <div className="log" role="log" aria-label="Conversation" aria-live="polite" ref={logRef} tabIndex={0} onScroll={onScroll}>
        {olderCursor && (
          <button type="button" className="small secondary load-earlier" disabled={loadingEarlier} aria-busy={loadingEarlier} onClick={() => void loadEarlier()}>
            Load earlier messages
          </button>
        )}
        {messages.length === 0 && drafts.length === 0 && waiting.length === 0 && <p className="hint">Say something to {agent?.name ?? 'the agent'}.</p>}
        {messages.map((message) => {
          const internal = message.visibility === 'internal';
          const reason = message.role === 'assistant' ? why(message.runId) : undefined;
          const trigger = typeof message.additionalKwargs?.trigger_type === 'string' ? message.additionalKwargs.trigger_type : undefined;
          return (
            <article key={message.id} className={`message ${message.role}${internal ? ' internal' : ''}${reason ? ' autonomous' : ''}`} data-message-id={message.id}>
              <header>
                <span className="who">{internal ? `Internal (${trigger ?? message.role})` : message.role === 'user' ? 'You' : agent?.name ?? 'Agent'}</span>
                {reason && <span className="why">{reason}</span>}
                <time dateTime={message.createdAt}>{new Date(message.createdAt).toLocaleTimeString()}</time>
                {message.role === 'assistant' && message.runId && (
                  <button type="button" className="small link" aria-label={`Inspect the reply of ${new Date(message.createdAt).toLocaleTimeString()}`} onClick={() => onInspect(message.runId!)}>
                    Inspect
                  </button>
                )}
              </header>
              {message.role === 'user' && !internal ? <p className="plain">{textOf(message.content)}</p> : <Markdown text={textOf(message.content)} />}
              {message.toolCalls?.map((call) => (
                <p key={call.id ?? call.name} className="tool-call">
                  asked to run {call.name}
                </p>
              ))}
            </article>
          );
        })}
        {drafts.map((draft) => {
          const reason = why(draft.runId) ?? (draft.runId === activeRun?.runId ? activeWhy : undefined);
          return (
            <article key={draft.messageId} className={`message assistant streaming${reason ? ' autonomous' : ''}`} aria-busy="true">
              <header>
                <span className="who">{agent?.name ?? 'Agent'}</span>
                {reason && <span className="why">{reason}</span>}
              </header>
              <Markdown text={draft.text} />
            </article>
          );
        })}
        {waiting.map((entry) => {
          // Waiting for the connection: only while it is lost (re-rendered when it is back, which sends it).
          const held = !online && live.isWaiting(entry.frame);
          return (
            <article key={`pending-${entry.key}`} className="message user pending" aria-busy="true">
              <header>
                <span className="who">You</span>
                <span className="pending-state">{held ? 'Not sent yet: waiting for the connection' : activeRun ? 'Not sent yet: waits for the reply above' : 'Sending…'}</span>
                {held && (
                  <button type="button" className="small link" onClick={() => takeBack(entry)}>
                    Don't send
                  </button>
                )}
              </header>
              <p className="plain">{entry.content}</p>
            </article>
          );
        })}
      </div>
      {awayFromBottom && (
        <div className="jump">
          <button type="button" className="small" onClick={jumpToNewest}>
            Jump to the newest messages
          </button>
        </div>
      )}
      <ThreadApprovals threadId={thread.id} live={live} />
      {failure && (
        <div className="failure" role="alert">
          {failure.what && <p>{failure.what}</p>}
          <p>
            <strong>{failure.code}</strong>: {failure.message}
          </p>
          {failure.retry && (
            <button type="button" onClick={() => send(failure.retry!)}>
              Retry
            </button>
          )}
          <button type="button" onClick={() => setFailure(undefined)}>
            Dismiss
          </button>
        </div>
      )}
      {tooLongShown && (
        <p id="message-too-long" className="field-error composer-error" role="alert">
          Not sent: a message can be at most {count(MESSAGE_MAX_CHARACTERS)} characters long, and this one has {count(text.trim().length)}. Shorten it, or send it in parts.
        </p>
      )}
      <form
        className="composer"
        onSubmit={(event) => {
          event.preventDefault();
          if (send(text)) setText('');
        }}
      >
        <label htmlFor="message" className="visually-hidden">
          Message
        </label>
        <textarea
          ref={composerRef}
          id="message"
          name="message"
          rows={2}
          value={text}
          placeholder="Write a message (Enter sends, Shift+Enter for a new line)"
          aria-invalid={tooLongShown || undefined}
          aria-describedby={tooLongShown ? 'message-too-long' : undefined}
          onChange={(event) => setText(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey) {
              event.preventDefault();
              event.currentTarget.form?.requestSubmit();
            }
          }}
        />
        {activeRun ? (
          <button type="button" className="danger" onClick={() => live.send({ type: 'run.cancel', runId: activeRun.runId })}>
            Stop
          </button>
        ) : null}
        <button type="submit" disabled={!text.trim()}>
          Send
        </button>
      </form>
    </>
  );
}
