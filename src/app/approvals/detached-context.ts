import { AsyncLocalStorageProviderSingleton } from '@langchain/core/singletons';

/**
 * Run `work` outside any LangGraph run's async context. A job scheduled from inside a graph
 * node (an approval's deadline) would otherwise carry that run's config in async local
 * storage into the timer that delivers it, and a run started there would look like a
 * subgraph of the old one and find no checkpoint to resume.
 */
export function detached<T>(work: () => T): T {
  return AsyncLocalStorageProviderSingleton.getInstance().run(undefined, work);
}
