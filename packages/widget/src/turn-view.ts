// One turn of <parley-chat> as its events arrive: the reply streamed delta by delta into its bubble, tool steps
// shown before it, the stored reply replacing the streamed text, a turn that starts again (after an
// interruption) or fails dropping what it showed of its reply, and one stopped keeping its text, marked so. A
// turn that waits for decisions is shown in parts (its first stream, then each decision's): one TurnView
// renders them all into the same reply. The element hears the turn start, pause and end.
import { type Approval, type ConversationMessage, ParleyError, type TurnEvent } from '@parley/client';
import { fillMessage, h, messageNode, type Shown, settleTool, toolNode } from './view.ts';

/** Where a turn is shown, and who hears about it. */
export interface TurnScreen {
  log: HTMLElement;
  shown: Shown;
  /** The reply is awaited (`true`, before its first words) or no longer: the typing indicator. */
  typing(on: boolean): void;
  /** Follows the reply when the reader is at the bottom. */
  scroll(): void;
  /** The turn has started: its message is stored. */
  started(turnId: string, userMessageId: string | undefined): void;
  /** The turn waits for decisions: the calls the user may decide (none when only the integrator may). */
  paused(turnId: string, approvals: readonly Approval[]): void;
  /** The turn is complete (or was stopped); the conversation's status after it. */
  completed(conversationStatus: string): void;
  failed(err: ParleyError): void;
}

/** One turn's rendering; `mine` (the user's bubble) gets `data-stored` once the turn has started. */
export class TurnView {
  readonly #mine: HTMLElement;
  readonly #screen: TurnScreen;
  #turnId: string | null = null;
  /** The reply's bubble, once its first delta (or the stored reply) arrived. */
  #reply: HTMLElement | null = null;
  #text: Text | null = null;
  /** The turn's tool steps, by call id. */
  #tools = new Map<string, HTMLElement>();

  constructor(mine: HTMLElement, screen: TurnScreen) {
    this.#mine = mine;
    this.#screen = screen;
  }

  /** The turn's id, once it started. */
  get turnId(): string | null {
    return this.#turnId;
  }

  /** Renders one stream of the turn's events (its send, a resume, or a decision's continuation). */
  async render(events: AsyncIterable<TurnEvent>): Promise<void> {
    this.#screen.typing(!this.#text);
    try {
      for await (const ev of events) this.show(ev);
    } finally {
      this.#screen.typing(false);
      this.settle();
    }
  }

  /**
   * The turn was stopped while it waited (no stream tells it): its reply is what was written, marked stopped
   * when the cancel did stop it (`marked`), rather than finding it finished.
   */
  stopped(message: ConversationMessage | null, marked: boolean): void {
    if (message) this.#completed(message);
    if (marked) this.#markStopped();
    this.#screen.log.removeAttribute('aria-busy');
  }

  show(ev: TurnEvent): void {
    const { log } = this.#screen;
    // The reply's first words (or the turn's pause or end) replace the typing indicator.
    if (ev.event !== 'turn.started' && ev.event !== 'tool.started' && ev.event !== 'tool.completed') {
      this.#screen.typing(false);
    }
    switch (ev.event) {
      case 'turn.started': {
        // The same turn starting again (after an interruption) replays its reply from the start.
        if (this.#turnId === ev.data.turn_id) this.#dropReply();
        this.#turnId = ev.data.turn_id;
        const mine = this.#mine;
        mine.dataset.stored = '';
        // The stored message names it, and gives its time.
        if (ev.data.user_message) {
          this.#twinOf(mine, ev.data.user_message.id)?.remove();
          fillMessage(mine, ev.data.user_message, this.#screen.shown);
        }
        this.#screen.started(this.#turnId, ev.data.user_message?.id ?? mine.dataset.id);
        // Screen readers hear the reply once it is complete, not word by word.
        log.setAttribute('aria-busy', 'true');
        break;
      }
      case 'message.delta':
        this.#streamed().appendData(ev.data.delta.text);
        // After a decision the reply goes on below the approval cards, where the reader is.
        if (this.#reply && this.#reply !== log.lastElementChild) log.append(this.#reply);
        this.#screen.scroll();
        break;
      case 'tool.started': {
        const step = toolNode(ev.data.name, this.#screen.shown.strings);
        this.#tools.set(ev.data.call_id, step);
        log.insertBefore(step, this.#reply);
        this.#screen.scroll();
        break;
      }
      case 'tool.completed': {
        const step = this.#tools.get(ev.data.call_id);
        if (step) settleTool(step, ev.data.name, ev.data.status, this.#screen.shown.strings);
        break;
      }
      case 'message.completed':
        this.#completed(ev.data.message);
        break;
      case 'turn.awaiting_approval':
        // Nothing arrives until a decision: the log is read as it is.
        log.removeAttribute('aria-busy');
        this.#screen.paused(ev.data.turn_id, ev.data.approvals);
        break;
      case 'turn.cancelled':
        this.#markStopped();
        log.removeAttribute('aria-busy');
        this.#screen.completed(ev.data.conversation_status);
        break;
      case 'turn.completed':
        log.removeAttribute('aria-busy');
        this.#screen.completed(ev.data.conversation_status);
        break;
      case 'turn.failed':
        log.removeAttribute('aria-busy');
        // Partial text was never stored: it goes, and the error says why.
        if (ev.data.partial) this.#dropReply();
        this.#screen.failed(
          new ParleyError({
            status: 0,
            code: ev.data.error.code,
            errorName: ev.data.error.name,
            message: ev.data.error.message,
          }),
        );
        break;
    }
  }

  /** The stored reply is the reference: it replaces the text gathered from the deltas. */
  #completed(message: ConversationMessage): void {
    // The conversation's stream may have shown the reply already (a send whose answer was lost, sent again).
    const twin = this.#twinOf(this.#reply, message.id);
    if (twin && this.#reply) twin.remove();
    else if (twin) this.#reply = twin;
    if (this.#reply) {
      fillMessage(this.#reply, message, this.#screen.shown);
      delete this.#reply.dataset.streaming;
    } else {
      this.#reply = messageNode(message, this.#screen.shown);
      this.#screen.log.append(this.#reply);
    }
    this.#text = null;
    this.#screen.scroll();
  }

  /** Another bubble of the log showing the message `id`. */
  #twinOf(el: HTMLElement | null, id: string): HTMLElement | null {
    const twin = this.#screen.log.querySelector<HTMLElement>(`[data-id="${CSS.escape(id)}"]`);
    return twin === el ? null : twin;
  }

  /** A stopped reply keeps its text and says it was stopped (a reply with no text says only that). */
  #markStopped(): void {
    const reply = this.#reply ?? messageNode({ role: 'assistant', content: [] }, this.#screen.shown);
    if (!reply.isConnected) this.#screen.log.append(reply);
    this.#reply = reply;
    delete reply.dataset.streaming;
    reply.dataset.stopped = '';
    reply.append(h('span', { class: 'stopped', part: 'stopped' }, this.#screen.shown.strings.t('stopped')));
    this.#screen.scroll();
  }

  /** A stream that broke for good leaves what it showed, no longer marked as arriving. */
  settle(): void {
    if (this.#reply) delete this.#reply.dataset.streaming;
  }

  /** The text node the reply's deltas go to: a new bubble, marked as arriving, for the first. */
  #streamed(): Text {
    if (!this.#reply || !this.#text) {
      this.#text = document.createTextNode('');
      this.#reply = messageNode({ role: 'assistant', content: [] }, this.#screen.shown);
      this.#reply.dataset.streaming = '';
      this.#reply.querySelector('.text')?.append(this.#text);
      this.#screen.log.append(this.#reply);
    }
    return this.#text;
  }

  #dropReply(): void {
    this.#reply?.remove();
    for (const el of this.#tools.values()) el.remove();
    this.#reply = null;
    this.#text = null;
    this.#tools = new Map();
  }
}
