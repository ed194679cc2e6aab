// One turn of <parley-chat> as its events arrive: the reply streamed delta by delta into its bubble, tool steps
// shown before it, the stored reply replacing the streamed text, and a turn that starts again (after an
// interruption) or fails dropping what it showed of its reply. The element hears the turn start and end.
import { ParleyError, type TurnEvent } from '@parley/client';
import { fillMessage, type KnownFile, messageNode, settleTool, toolNode } from './view.ts';

/** Where a turn is shown, and who hears about it. */
export interface TurnScreen {
  log: HTMLElement;
  files: ReadonlyMap<string, KnownFile>;
  /** Follows the reply when the reader is at the bottom. */
  scroll(): void;
  /** The turn has started: its message is stored. */
  started(turnId: string, userMessageId: string | undefined): void;
  /** The turn is complete; the conversation's status after it. */
  completed(conversationStatus: string): void;
  failed(err: ParleyError): void;
}

/** Renders one turn's events; `mine` (the user's bubble) gets `data-stored` once the turn has started. */
export async function renderTurn(
  events: AsyncIterable<TurnEvent>,
  mine: HTMLElement,
  screen: TurnScreen,
): Promise<void> {
  const view = new TurnView(mine, screen);
  try {
    for await (const ev of events) view.show(ev);
  } finally {
    view.settle();
  }
}

class TurnView {
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

  show(ev: TurnEvent): void {
    const { log } = this.#screen;
    switch (ev.event) {
      case 'turn.started': {
        // The same turn starting again (after an interruption) replays its reply from the start.
        if (this.#turnId === ev.data.turn_id) this.#dropReply();
        this.#turnId = ev.data.turn_id;
        const mine = this.#mine;
        mine.dataset.stored = '';
        if (ev.data.user_message) mine.dataset.id = ev.data.user_message.id;
        this.#screen.started(this.#turnId, ev.data.user_message?.id ?? mine.dataset.id);
        // Screen readers hear the reply once it is complete, not word by word.
        log.setAttribute('aria-busy', 'true');
        break;
      }
      case 'message.delta':
        this.#streamed().appendData(ev.data.delta.text);
        this.#screen.scroll();
        break;
      case 'tool.started': {
        const step = toolNode(ev.data.name);
        this.#tools.set(ev.data.call_id, step);
        log.insertBefore(step, this.#reply);
        this.#screen.scroll();
        break;
      }
      case 'tool.completed': {
        const step = this.#tools.get(ev.data.call_id);
        if (step) settleTool(step, ev.data.name, ev.data.status);
        break;
      }
      case 'message.completed':
        // The stored reply is the reference: it replaces the text gathered from the deltas.
        if (this.#reply) {
          fillMessage(this.#reply, ev.data.message, this.#screen.files);
          delete this.#reply.dataset.streaming;
        } else {
          this.#reply = messageNode(ev.data.message, this.#screen.files);
          log.append(this.#reply);
        }
        this.#screen.scroll();
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

  /** A stream that broke for good leaves what it showed, no longer marked as arriving. */
  settle(): void {
    if (this.#reply) delete this.#reply.dataset.streaming;
  }

  /** The text node the reply's deltas go to: a new bubble, marked as arriving, for the first. */
  #streamed(): Text {
    if (!this.#reply || !this.#text) {
      this.#text = document.createTextNode('');
      this.#reply = messageNode({ role: 'assistant', content: [] }, this.#screen.files);
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
