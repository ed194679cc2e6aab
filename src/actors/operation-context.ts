// What an operation is given to do its work: the session's resident entry, the fenced commit of its lasting
// changes, the caller's observer (streamed turns) and the shutdown signal. Operations see the host only
// through this, and the host sees an operation only as a function of it (operations.ts).
import type { FastifyBaseLogger } from 'fastify';
import type { Catalogue } from '../agents/catalogue.ts';
import type { TurnFiles } from '../agents/model-messages.ts';
import type { Provider } from '../agents/provider.ts';
import { AppError } from '../errors.ts';
import type { Approver, SessionEvent } from '../machines/session.ts';
import type { MessageRecord, SessionWrite, SessionWriteResult, Store } from '../store/store.ts';
import type { AgentTools } from '../tools/agent-tools.ts';
import type { ActorMetrics } from './actor-metrics.ts';
import type { Reservation } from './admission.ts';
import type { KeyLookup } from './idempotency.ts';
import type { SessionEntry } from './resident-actors.ts';
import type { Approval } from './step-approvals.ts';

/** One operation as its runner sees it: `P` is its kind's payload. */
export interface OperationOf<P> {
  id: string;
  payload: P;
  /** The Idempotency-Key it carries, with what the caller's lookup found under it (sends only). */
  idempotency?: KeyLookup;
  /** The memory reserved for it (a turn's: admission.ts), which it resizes as it learns what it holds. */
  reservation?: Reservation;
  /** Through which family it came: the public one (`user`) is told only of its own waiting calls. */
  by?: Approver;
}

/**
 * A session write without what the host adds (the fence and the snapshot), and the machine event it implies:
 * the stored snapshot has the event applied, and the actor receives it once the write is committed.
 */
export type SessionChange = Omit<SessionWrite, 'session_id' | 'fence' | 'patch'> & {
  patch?: Omit<SessionWrite['patch'], 'snapshot'>;
  event?: SessionEvent;
  /**
   * The operation's last commit: an ACTIVITY that only moves the lifetime (not by the user) goes to the actor
   * with the operation's DONE instead of as an event of its own.
   */
  last?: boolean;
};

/** Watches one turn as it happens, for a streamed reply. Called only after what it reports is committed. */
export interface TurnObserver {
  /** The turn's first message is stored; `replyId` is the id the agent's reply will have. */
  started(turnId: string, message: MessageRecord, replyId: string | null): void;
  /** A piece of the reply's text, as the model writes it. */
  delta(text: string): void;
  /** A tool call is committed and about to run (or, resumed, ran before). */
  toolStarted?(call: { call_id: string; name: string; input: unknown }): void;
  /** A tool call's result is committed. */
  toolCompleted?(call: { call_id: string; name: string; status: 'ok' | 'error'; output: unknown }): void;
  /** A tool call is committed to wait for a decision (told where a tool call would be started). */
  approvalRequested?(approval: Approval): void;
  /** The turn's step `step` waits for decisions on `approvals`: the turn pauses, and this turn's part ends. */
  paused?(step: number, approvals: Approval[]): void;
  /**
   * The stored turn `turnId` goes on (a decision, a keyed retry), its reply to have id `replyId`: what it told
   * before is in the store, and what is told from now on follows it. An observer that can read the turn from
   * the store implements it; without it, the committed steps are told again through the other methods.
   */
  continued?(turnId: string, replyId: string): Promise<void>;
}

export interface OperationContext {
  readonly entry: SessionEntry;
  /** The caller's observer, when it asked for a streamed turn. */
  readonly observer: TurnObserver | undefined;
  /** Commits `change` with the shard's fence; the entry and its actor follow once it is written. */
  commit(change: SessionChange): Promise<SessionWriteResult>;
  /** Aborted when the host shuts down (a tool call in flight gives up only then). */
  readonly signal: AbortSignal;
  /** The memory reserved for the operation, if any (a turn's: admission.ts). */
  readonly reservation?: Reservation | undefined;
  /** Aborted when the host shuts down or the running turn is cancelled: what a model call listens to. */
  readonly turnSignal: AbortSignal;
  /** Whether the turn this operation runs was cancelled (docs/internals/decisions.md#cancel). */
  cancelled(): boolean;
  /** The operation runs turn `turnId` from now on: a cancel naming it aborts it. */
  runsTurn(turnId: string): void;
}

/** What the operations use besides their context. */
export interface OperationDeps {
  store: Store;
  catalogue: Catalogue;
  providers: ReadonlyMap<string, Provider>;
  metrics: ActorMetrics;
  /** The process's file cache and the per-turn file budget. */
  files: TurnFiles;
  /** How many characters of history (content as stored) one turn reads at most, the newest message always. */
  maxHistoryChars: number;
  /** Each agent's tools; an agent without any has no entry. */
  tools: ReadonlyMap<string, AgentTools>;
  /** One line per tool call. */
  log: Pick<FastifyBaseLogger, 'info' | 'warn'>;
}

export function agentOf(deps: OperationDeps, agentId: string) {
  const agent = deps.catalogue.get(agentId);
  const provider = deps.providers.get(agentId);
  if (!agent || !provider)
    throw new AppError('agent_not_found', undefined, { context: { agent_id: agentId } });
  return { agent, provider };
}
