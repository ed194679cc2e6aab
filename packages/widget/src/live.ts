// While <parley-chat> is open it follows the conversation's event stream (conversation.events() of
// @parley/client, which reconnects with Last-Event-ID by itself): messages the widget did not cause (an
// operator's reply, an inactivity message, a message sent in another tab) appear as they are stored, the
// handoff to people and back is said in the log, and the end of the conversation is shown. One stream per
// element, stopped when the element leaves the page, restarts, or the conversation ends.
import type { ConversationEvent, ConversationMessage, ParleyConversation } from '@parley/client';
import { messageNode, type Shown } from './view.ts';

export interface LiveHost {
  log: HTMLElement;
  shown: Shown;
  /** A turn of this widget is under way: its own messages come from its stream, not from this one. */
  busy(): boolean;
  scroll(): void;
  /** A message was added to the log. */
  arrived(): void;
  /** The conversation was handed to people, or back to the agent. */
  handedOver(who: 'agent' | 'humans'): void;
  ended(status: 'closed' | 'expired'): void;
}

/** How long after a stream that gave up (the network gone a while) it is followed again. */
const RETRY_MS = 3000;

export class LiveFollower {
  /** Who answers (from the conversation's record, then the stream): people are awaited with no typing dots. */
  handledBy: 'agent' | 'humans' = 'agent';
  readonly #host: LiveHost;
  #stop: AbortController | null = null;
  /** Messages that arrived during this widget's own turn: shown after it unless the turn showed them. */
  #held: ConversationMessage[] = [];

  constructor(host: LiveHost) {
    this.#host = host;
  }

  /**
   * Follows `conv` until `life` aborts or stop(). The stream starts at the conversation's first event: those up
   * to `newest` (the newest message shown from the history, with its time) are what the widget loaded already.
   */
  start(conv: ParleyConversation, life: AbortSignal, newest?: { id: string; created_at: string }): void {
    this.stop();
    const stop = new AbortController();
    this.#stop = stop;
    void this.#follow(conv, AbortSignal.any([life, stop.signal]), newest);
  }

  stop(): void {
    this.#stop?.abort();
    this.#stop = null;
    this.#held = [];
  }

  /** The widget's own turn is over: what arrived meanwhile is shown, unless the turn showed it already. */
  flush(): void {
    const held = this.#held;
    this.#held = [];
    for (const message of held) this.#show(message);
  }

  /** Whether the log shows the message already; a message shown elsewhere (an inactivity step) asks too. */
  has(id: string): boolean {
    return this.#host.log.querySelector(`[data-id="${CSS.escape(id)}"]`) !== null;
  }

  async #follow(
    conv: ParleyConversation,
    signal: AbortSignal,
    newest: { id: string; created_at: string } | undefined,
  ): Promise<void> {
    // Until the newest message loaded, the stream replays what the history showed (or older): nothing new.
    let catchingUp = newest !== undefined;
    let after: string | undefined;
    while (!signal.aborted) {
      const events = conv.events({ after, signal });
      try {
        for await (const ev of events) {
          if (catchingUp) {
            const m = ev.event === 'message.created' ? ev.data.message : null;
            if (!m || (m.id !== newest?.id && m.created_at <= (newest?.created_at ?? ''))) continue;
            catchingUp = false;
            if (m.id === newest?.id) continue;
          }
          this.#event(ev);
        }
        return;
      } catch (err) {
        if (signal.aborted) return;
        const status = (err as { status?: number }).status;
        // Refused for good (the token's conversation is gone, say): the widget goes on without live updates.
        if (status !== 0 && status !== 429 && status !== 503) return;
        after = events.lastEventId;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }

  #event(ev: ConversationEvent): void {
    const host = this.#host;
    switch (ev.event) {
      case 'message.created': {
        const message = ev.data.message;
        if (!message) break;
        // An operator's message is never this widget's own: shown at once, even while a reply arrives.
        if (host.busy() && !message.author) this.#held.push(message);
        else this.#show(message);
        break;
      }
      case 'session.handoff_requested':
      case 'session.handed_back': {
        const who = ev.event === 'session.handed_back' ? 'agent' : 'humans';
        if (who === this.handledBy) break;
        this.handledBy = who;
        host.handedOver(who);
        break;
      }
      case 'session.closed':
      case 'session.expired':
        host.ended(ev.event === 'session.closed' ? 'closed' : 'expired');
        break;
    }
  }

  #show(message: ConversationMessage): void {
    if (this.has(message.id)) return;
    const host = this.#host;
    if (message.role === 'user') {
      // This widget's message whose send told no id (people handle the conversation): it is this one.
      const unnamed = host.log.querySelector<HTMLElement>('.msg.user:not([data-id])');
      if (unnamed) {
        unnamed.dataset.id = message.id;
        unnamed.dataset.stored = '';
        return;
      }
    }
    if (message.role !== 'user' && message.role !== 'assistant') return;
    host.log.append(messageNode(message, host.shown));
    host.scroll();
    host.arrived();
  }
}
