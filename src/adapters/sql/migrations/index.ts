/**
 * The ordered, versioned list of schema migrations, one file per version.
 * Append only: never edit or reorder an applied migration; add a new version instead.
 */
import { coreMigration } from './0001-core.js';
import { timersMigration } from './0002-timers.js';
import { hooksChannelsMigration } from './0003-hooks-channels.js';
import { plansMigration } from './0004-plans.js';
import { schedulesMigration } from './0005-schedules.js';
import { retentionIndexesMigration } from './0006-retention-indexes.js';
import { approvalsMigration } from './0007-approvals.js';
import { checkInsMigration } from './0008-check-ins.js';
import { outboundWebhooksMigration } from './0009-outbound-webhooks.js';
import { runningRunsIndexMigration } from './0010-running-runs-index.js';
import { retentionSettledIndexesMigration } from './0011-retention-settled-indexes.js';
import { langgraphProtocolMigration } from './0012-langgraph-protocol.js';
import { runModelInputsMigration } from './0013-run-model-inputs.js';
import { threadEventsMigration } from './0014-thread-events.js';
import { dueTimerJobsMigration } from './0015-due-timer-jobs.js';
import { runCancelRequestsMigration } from './0016-run-cancel-requests.js';
import { memoryOriginMigration } from './0017-memory-origin.js';
import { approvalPositionMigration } from './0018-approval-position.js';
import { hookDeliveryThreadDeletedMigration } from './0019-hook-delivery-thread-deleted.js';
import { memoryUpdatedAtMigration } from './0020-memory-updated-at.js';
import { runThreadDeletedMigration } from './0021-run-thread-deleted.js';
import { retentionFireProtocolIndexesMigration } from './0022-retention-fire-protocol-indexes.js';
import { approvalOutcomeMigration } from './0023-approval-outcome.js';
import { memorySearchWordsMigration } from './0024-memory-search-words.js';
import { threadStoreMigration } from './0025-thread-store.js';
import { runMetaCoreOmittedMigration } from './0026-run-meta-core-omitted.js';
import type { Migration } from './migration.js';

export type { Migration } from './migration.js';

export const MIGRATIONS: readonly Migration[] = [coreMigration, timersMigration, hooksChannelsMigration, plansMigration, schedulesMigration, retentionIndexesMigration, approvalsMigration, checkInsMigration, outboundWebhooksMigration, runningRunsIndexMigration, retentionSettledIndexesMigration, langgraphProtocolMigration, runModelInputsMigration, threadEventsMigration, dueTimerJobsMigration, runCancelRequestsMigration, memoryOriginMigration, approvalPositionMigration, hookDeliveryThreadDeletedMigration, memoryUpdatedAtMigration, runThreadDeletedMigration, retentionFireProtocolIndexesMigration, approvalOutcomeMigration, memorySearchWordsMigration, threadStoreMigration, runMetaCoreOmittedMigration];
