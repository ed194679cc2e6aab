// The turn under way in <parley-chat>, from its first event to its end: its rendering, kept across its parts
// (the send's stream, then each decision's continuation), the approval cards of a turn that waits for the
// user, the decisions they send, and the Stop button that cancels the turn. The element starts a turn and
// hears when it is over.
import type { Approval, ParleyConversation, ParleyError, TurnEvent } from '@parley/client';
import { ApprovalCards } from './approval-card.ts';
import type { Composer } from './composer.ts';
import { TurnView } from './turn-view.ts';
import type { Shown } from './view.ts';

/** What the element gives the turn: where it is shown, the client, and who hears what. */
export interface TurnHost {
  conv(): ParleyConversation | null;
  /** Aborted when the element restarts or leaves the page. */
  life(): AbortSignal;
  log: HTMLElement;
  notice: HTMLElement;
  error: HTMLElement;
  shown: Shown;
  /** The typing indicator: a reply is awaited before its first words. */
  typing(on: boolean): void;
  composer: Composer;
  scroll(force?: boolean): void;
  /** The turn has started: its message is stored. */
  started(turnId: string, userMessageId: string | undefined): void;
  /** The turn is complete (or stopped); the conversation's status after it. */
  completed(conversationStatus: string): void;
  fail(err: unknown): void;
  /** The turn is over (ended, failed or stopped, and no decision waits): the composer is the user's again. */
  over(): void;
}

export class TurnControl {
  readonly #host: TurnHost;
  #view: TurnView | null = null;
  /** The turn waits for decisions: its stream ended, but it is not over. */
  #paused = false;
  #deciding = false;
  /** From the turn's start until it is over. */
  #running = false;
  readonly #cards: ApprovalCards;

  constructor(host: TurnHost) {
    this.#host = host;
    this.#cards = new ApprovalCards(
      host.shown.strings,
      (approval, approved) => void this.decide(approval, approved),
    );
  }

  /** Renders a new turn's events; `mine` is the user's bubble. */
  render(events: AsyncIterable<TurnEvent>, mine: HTMLElement): Promise<void> {
    const host = this.#host;
    this.#view = new TurnView(mine, {
      log: host.log,
      shown: host.shown,
      typing: (on) => host.typing(on),
      scroll: () => host.scroll(),
      started: (turnId, userMessageId) => {
        this.#running = true;
        host.started(turnId, userMessageId);
        host.composer.setRunning(true);
      },
      paused: (_turnId, approvals) => {
        this.#paused = true;
        this.#cards.show(approvals, host.log);
        // Calls only the integrator may decide are not shown: the turn goes on once they are decided.
        host.notice.textContent = approvals.length === 0 ? host.shown.strings.t('waitingApproval') : '';
        host.scroll(true);
      },
      completed: (status) => {
        this.#paused = false;
        host.completed(status);
      },
      failed: (err: ParleyError) => {
        this.#paused = false;
        host.fail(err);
      },
    });
    return this.#view.render(events);
  }

  /**
   * Shows a turn already sent (interrupted by a reload, or waiting for decisions), from its start: its events
   * replace nothing, as its reply is not shown yet. `pending` are the calls the record says still wait.
   */
  async follow(turnId: string, mine: HTMLElement, pending: readonly Approval[]): Promise<void> {
    const conv = this.#host.conv();
    const life = this.#host.life();
    if (!conv) return;
    this.#host.composer.send.disabled = true;
    try {
      let events = conv.resume(turnId, { signal: life });
      await this.render(events, mine);
      // A pause whose calls were decided meanwhile (in another tab): the turn went on, and so does its replay.
      while (this.passed(pending)) {
        const after = events.lastEventId;
        events = conv.resume(turnId, { after, signal: life });
        await this.goOn(events);
        if (events.lastEventId === after) break;
      }
    } catch (err) {
      if (!life.aborted) this.#host.fail(err);
    } finally {
      if (!life.aborted) this.partEnded();
    }
  }

  /** Renders a further stream of the turn under way (a resume after its pause) into the same reply. */
  goOn(events: AsyncIterable<TurnEvent>): Promise<void> {
    return this.#view?.render(events) ?? Promise.resolve();
  }

  /**
   * Whether the turn shown paused, but its cards name calls that no longer wait (`pending`, as the record
   * lists them): then they were decided elsewhere and the turn went past this pause. Only what still waits
   * stays shown.
   */
  passed(pending: readonly Approval[]): boolean {
    if (!this.#paused) return false;
    const waiting = new Set(pending.map((a) => a.call_id));
    const stale = this.#cards.shown().some((id) => !waiting.has(id));
    if (stale) this.#cards.show(pending, this.#host.log);
    return stale;
  }

  /** After a stream of the turn: it is over, or it waits for decisions (then the user's to decide or stop). */
  partEnded(): void {
    if (this.#paused) this.#cards.busy(false);
    else this.#host.over();
  }

  /** The turn is over (or the widget restarts, `restart`: its cards go with the log). */
  reset(restart = false): void {
    if (restart) this.#view = null;
    this.#running = false;
    this.#paused = false;
    this.#cards.clear(restart);
    this.#host.composer.setRunning(false);
    this.#host.notice.textContent = '';
  }

  /** Approve or Deny on a card: the decision's continuation is rendered into the same turn. */
  async decide(approval: Approval, approved: boolean): Promise<void> {
    const conv = this.#host.conv();
    const view = this.#view;
    const turnId = view?.turnId;
    if (!conv || !view || !turnId || this.#deciding || !this.#paused) return;
    const life = this.#host.life();
    this.#deciding = true;
    this.#cards.busy(true);
    this.#host.error.textContent = '';
    // The first event says the decision is stored: the card says so, and the turn goes on.
    const decided = () => {
      this.#cards.decided(approval.call_id, approved);
      this.#paused = false;
      this.#host.log.setAttribute('aria-busy', 'true');
    };
    const decisions = [{ call_id: approval.call_id, approved }];
    try {
      await view.render(onFirst(conv.streamDecision(turnId, decisions, { signal: life }), decided));
    } catch (err) {
      if (!life.aborted) this.#host.fail(err);
    } finally {
      this.#deciding = false;
      if (!life.aborted) this.partEnded();
    }
  }

  /** The Stop button: the turn is cancelled; a stream still running ends with turn.cancelled by itself. */
  async stop(): Promise<void> {
    const conv = this.#host.conv();
    const view = this.#view;
    const turnId = view?.turnId;
    if (!conv || !view || !turnId) return;
    const life = this.#host.life();
    const composer = this.#host.composer;
    composer.setRunning(true, true);
    try {
      const result = await conv.cancel(turnId);
      if (life.aborted || !this.#paused || this.#deciding) return;
      // A turn waiting for decisions has no stream to tell it: its reply (the text so far) is shown here.
      view.stopped(result.agent_message, result.turn.status === 'cancelled');
      this.#host.over();
    } catch (err) {
      if (life.aborted) return;
      this.#host.fail(err);
      if (this.#running) composer.setRunning(true);
    }
  }
}

/** The events of `events`, calling `first` once the first of them arrives. */
async function* onFirst<E>(events: AsyncIterable<E>, first: () => void): AsyncGenerator<E, void, undefined> {
  let seen = false;
  for await (const event of events) {
    if (!seen) {
      seen = true;
      first();
    }
    yield event;
  }
}
