// <parley-chat>: one conversation of the public family in an open shadow root. It loads the earlier messages,
// streams replies delta by delta, uploads attachments, shows tool steps, offers NPS feedback and terminate,
// runs the inactivity steps when asked to, and shows a closed or expired conversation as such. All HTTP goes
// through @parley/client (token refresh and resuming a dropped stream included); this file only renders.
// Moved in the page (disconnected, then connected again), it reloads the conversation and resumes the reply
// that was arriving.
import { newIdempotencyKey, ParleyConversation, ParleyError, type TurnEvent } from '@parley/client';
import { type FeedbackChoice, feedbackForm } from './feedback-form.ts';
import { IdleTimer } from './idle-timer.ts';
import styles from './styles.css';
import {
  type Block,
  fileChip,
  fillMessage,
  h,
  type KnownFile,
  messageNode,
  settleTool,
  toolNode,
} from './view.ts';

interface Pending {
  name: string;
  image: boolean;
  url?: string;
  upload: Promise<string>;
  chip: HTMLElement;
  /** Stops the upload when the chip is removed (or the widget restarts). */
  abort: AbortController;
  removed: boolean;
}

/** A message given back to the composer after a send that stored nothing, with the key it was sent under. */
interface Draft {
  text: string;
  attachments: readonly Pending[];
  idempotencyKey: string;
}

/** The turn whose reply is arriving: what a restart on the same conversation needs to resume it. */
interface LiveTurn {
  conversation: string;
  turnId: string;
  userMessageId: string | undefined;
}

/** Codes that mean the conversation no longer takes messages. */
const ENDED: Record<string, 'closed' | 'expired'> = { session_closed: 'closed', session_expired: 'expired' };

const PAPERCLIP =
  '<svg aria-hidden="true" width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21.44 11.05l-9.19 9.19a6 6 0 0 1-8.49-8.49l9.19-9.19a4 4 0 0 1 5.66 5.66l-9.2 9.19a2 2 0 0 1-2.83-2.83l8.49-8.48"/></svg>';

/** Earlier messages shown when the widget opens a conversation. */
const HISTORY = 100;

/** The longest delay setTimeout keeps: a longer one would fire at once. About 24.8 days. */
const MAX_DELAY_MS = 2 ** 31 - 1;

const seconds = (value: string | null): number | null => {
  const n = value === null ? Number.NaN : Number(value);
  return Number.isFinite(n) && n > 0 ? Math.min(n * 1000, MAX_DELAY_MS) : null;
};

export class ParleyChat extends HTMLElement {
  static observedAttributes = [
    'base-url',
    'conversation-id',
    'token',
    'inactivity-warning-after',
    'inactivity-final-after',
  ];

  /** Called for a fresh session token when the current one expires; your server mints it with its API key. */
  refreshToken: (() => Promise<string>) | undefined;

  #conv: ParleyConversation | null = null;
  /** Aborted when the element restarts or leaves the page: ends the stream and ignores late answers. */
  #life = new AbortController();
  #busy = false;
  #ended: 'closed' | 'expired' | null = null;
  /** NPS: offered after the first reply; "not now" puts it off until the conversation ends. */
  #feedback: 'unasked' | 'shown' | 'later' | 'done' = 'unasked';
  #files = new Map<string, KnownFile>();
  #pending: Pending[] = [];
  /** The draft a failed send gave back: sent again unchanged, it keeps its Idempotency-Key. */
  #draft: Draft | null = null;
  #turn: LiveTurn | null = null;
  #restartQueued = false;
  #steps: Promise<void> = Promise.resolve();
  #idle = this.#idleTimer();

  readonly #root: ShadowRoot;
  readonly #log = h('div', {
    class: 'log',
    part: 'log',
    role: 'log',
    'aria-live': 'polite',
    'aria-label': 'Conversation',
    tabindex: '0',
  });
  readonly #input = h('textarea', {
    id: 'parley-input',
    part: 'input',
    rows: '1',
    placeholder: 'Write a message…',
    'aria-describedby': 'parley-hint',
  });
  readonly #send = h('button', { type: 'submit', class: 'primary', part: 'send-button' }, 'Send');
  readonly #attach = h('button', { type: 'button', part: 'attach-button', 'aria-label': 'Attach files' });
  readonly #picker = h('input', { type: 'file', multiple: true, hidden: true, tabindex: '-1' });
  readonly #pendingList = h('div', { class: 'pending', part: 'attachments', 'aria-label': 'Attachments' });
  readonly #error = h('div', { class: 'error', part: 'error', role: 'alert' });
  readonly #notice = h('div', { class: 'notice', part: 'status', role: 'status' });
  readonly #feedbackSlot = h('div');
  readonly #terminate = h('button', { type: 'button', part: 'terminate-button' }, 'End chat');
  readonly #confirm = h('div', {
    class: 'row',
    role: 'group',
    'aria-label': 'End the conversation?',
    hidden: true,
  });

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: 'open' });
    const confirmEnd = h('button', { type: 'button', class: 'primary', part: 'confirm-button' }, 'End');
    const cancelEnd = h('button', { type: 'button' }, 'Cancel');
    this.#confirm.append(h('span', {}, 'End the conversation?'), confirmEnd, cancelEnd);
    // A constant of ours, not text from anyone: the paperclip (Feather's path, MIT), drawn in the text colour.
    this.#attach.innerHTML = PAPERCLIP;
    this.#terminate.addEventListener('click', () => {
      this.#terminate.hidden = true;
      this.#confirm.hidden = false;
      confirmEnd.focus();
    });
    const cancel = () => {
      this.#confirm.hidden = true;
      this.#terminate.hidden = this.#ended !== null;
      this.#terminate.focus();
    };
    cancelEnd.addEventListener('click', cancel);
    this.#confirm.addEventListener('keydown', (e) => e.key === 'Escape' && cancel());
    confirmEnd.addEventListener('click', () => void this.#end());

    const composer = h(
      'form',
      { class: 'composer', part: 'composer' },
      this.#attach,
      this.#picker,
      h('label', { class: 'sr-only', for: 'parley-input' }, 'Message'),
      this.#input,
      this.#send,
    );
    composer.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.#submit();
    });
    this.#input.addEventListener('keydown', (e) => {
      // Enter sends; Shift+Enter (and Enter while an input method composes) is the textarea's own newline.
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.#submit();
      }
    });
    this.#input.addEventListener('input', () => {
      this.#input.style.height = 'auto';
      this.#input.style.height = `${this.#input.scrollHeight}px`;
    });
    this.#attach.addEventListener('click', () => this.#picker.click());
    this.#picker.addEventListener('change', () => {
      for (const file of this.#picker.files ?? []) this.#addAttachment(file);
      this.#picker.value = '';
    });
    // Any activity in the widget starts the idle count again.
    for (const type of ['keydown', 'pointerdown']) this.#root.addEventListener(type, () => this.#active());

    this.#root.append(
      h('style', {}, styles),
      h(
        'div',
        { class: 'chat', part: 'container' },
        h(
          'header',
          { part: 'header' },
          h('h2', { part: 'title' }, h('slot', { name: 'title' }, 'Chat')),
          this.#terminate,
          this.#confirm,
        ),
        this.#log,
        this.#notice,
        this.#error,
        this.#feedbackSlot,
        this.#pendingList,
        composer,
        h('span', { id: 'parley-hint', class: 'sr-only' }, 'Enter sends, Shift+Enter starts a new line.'),
      ),
    );
  }

  connectedCallback(): void {
    this.#queueRestart();
  }

  disconnectedCallback(): void {
    this.#life.abort();
    this.#idle.stop();
    // Connected again, the widget starts over from the server: nothing local is kept meanwhile.
    this.#dropLocalFiles();
  }

  attributeChangedCallback(name: string, before: string | null, after: string | null): void {
    if (before === after || !this.isConnected) return;
    if (name === 'token' && this.#conv && this.#ended === null) {
      // A fresh token for the same conversation: keep what is shown, use the token from the next call on.
      this.#conv = this.#connect();
      return;
    }
    if (name.startsWith('inactivity-')) {
      this.#idle.stop();
      this.#idle = this.#idleTimer();
      this.#active();
      return;
    }
    this.#queueRestart();
  }

  /** Several attributes set in a row start the conversation once. */
  #queueRestart(): void {
    if (this.#restartQueued) return;
    this.#restartQueued = true;
    queueMicrotask(() => {
      this.#restartQueued = false;
      if (this.isConnected) void this.#start();
    });
  }

  /** Where the API is: `base-url`, else the origin this module was served from (Parley serves /widget.js). */
  get #baseUrl(): string {
    return this.getAttribute('base-url') || new URL(import.meta.url).origin;
  }

  /** Which conversation the attributes name: a restart on the same one may resume its reply. */
  get #conversationKey(): string {
    return `${this.#baseUrl} ${this.getAttribute('conversation-id') ?? ''}`;
  }

  #connect(): ParleyConversation {
    return new ParleyConversation({
      baseUrl: this.#baseUrl,
      conversationId: this.getAttribute('conversation-id') ?? '',
      token: this.getAttribute('token') ?? '',
      // Read when needed, so that the property may be set after the element is connected.
      refreshToken: () =>
        this.refreshToken
          ? this.refreshToken()
          : Promise.reject(
              new ParleyError({
                status: 401,
                code: 'session_token_expired',
                errorName: 'SessionTokenExpiredError',
                message: 'The session token has expired, and this page gives no refreshToken callback.',
              }),
            ),
    });
  }

  async #start(): Promise<void> {
    this.#life.abort();
    const life = new AbortController();
    this.#life = life;
    // A reply that was arriving when the widget stopped (it was moved in the page): resumed below.
    const interrupted = this.#turn?.conversation === this.#conversationKey ? this.#turn : null;
    this.#turn = null;
    this.#draft = null;
    this.#idle.stop();
    this.#log.replaceChildren();
    this.#log.removeAttribute('aria-busy');
    this.#error.textContent = '';
    this.#notice.textContent = '';
    this.#feedbackSlot.replaceChildren();
    this.#feedback = 'unasked';
    this.#ended = null;
    this.#dropLocalFiles();
    this.#busy = false;
    this.#setEnabled(false);
    if (!this.getAttribute('conversation-id') || !this.getAttribute('token')) {
      this.#notice.textContent = 'No conversation yet.';
      this.#conv = null;
      return;
    }
    const conv = this.#connect();
    this.#conv = conv;
    this.#idle = this.#idleTimer();
    try {
      const record = await conv.get({ signal: life.signal });
      // The latest page of history: the conversation's count says where it starts.
      const offset = Math.max(0, record.messages_count - HISTORY);
      const page = await conv.messages({ offset, limit: HISTORY }, { signal: life.signal });
      if (life.signal.aborted) return;
      for (const message of page.items) this.#log.append(messageNode(message, this.#files));
      this.#scroll(true);
      // Opened already ended: said so, without asking for feedback again.
      if (record.status !== 'active') return this.#showEnded(record.status, false);
      this.#setEnabled(true);
      // The interrupted turn's message is the newest stored: its reply is not, so the turn is followed again.
      const last = page.items.at(-1);
      const mine = this.#log.lastElementChild;
      if (interrupted && last?.id === interrupted.userMessageId && mine instanceof HTMLElement) {
        return await this.#follow(conv, interrupted, mine, life.signal);
      }
      this.#idle.restart();
    } catch (err) {
      if (!life.signal.aborted) this.#fail(err);
    }
  }

  /** Shows a turn already sent, from its start: its events replace nothing, as its reply is not shown yet. */
  async #follow(
    conv: ParleyConversation,
    turn: LiveTurn,
    mine: HTMLElement,
    life: AbortSignal,
  ): Promise<void> {
    this.#busy = true;
    this.#send.disabled = true;
    try {
      await this.#render(conv.resume(turn.turnId, { signal: life }), mine);
    } catch (err) {
      if (!life.aborted) this.#fail(err);
    } finally {
      if (!life.aborted) this.#turnEnded();
    }
  }

  /** After a turn's events (or their failure): the composer is the user's again. */
  #turnEnded(): void {
    this.#busy = false;
    this.#turn = null;
    this.#log.removeAttribute('aria-busy');
    if (this.#ended === null) {
      this.#setEnabled(true);
      this.#idle.restart();
    }
  }

  /** Forgets the attachments and the images of this page: uploads stopped, local URLs revoked. */
  #dropLocalFiles(): void {
    for (const file of this.#files.values()) if (file.url) URL.revokeObjectURL(file.url);
    this.#files.clear();
    for (const item of this.#pending) {
      item.removed = true;
      item.abort.abort();
      if (item.url) URL.revokeObjectURL(item.url);
    }
    this.#pending = [];
    this.#pendingList.replaceChildren();
    this.#draft = null;
  }

  #idleTimer(): IdleTimer {
    return new IdleTimer({
      warningMs: seconds(this.getAttribute('inactivity-warning-after')),
      finalMs: seconds(this.getAttribute('inactivity-final-after')),
      onWarning: () => void this.#inactivity('warning'),
      onFinal: () => void this.#inactivity('final'),
    });
  }

  #setEnabled(on: boolean): void {
    this.#input.disabled = !on;
    this.#attach.disabled = !on;
    this.#send.disabled = !on || this.#busy;
    this.#terminate.hidden = !on && this.#ended !== null;
    this.#terminate.disabled = !on;
  }

  #active(): void {
    if (!this.#busy && this.#ended === null && this.#conv) this.#idle.restart();
  }

  #scroll(force = false): void {
    const log = this.#log;
    // Follow the reply only when the reader is already at the bottom; never pull them away from history.
    if (force || log.scrollHeight - log.scrollTop - log.clientHeight < 80) log.scrollTop = log.scrollHeight;
  }

  #fail(err: unknown): void {
    const code = err instanceof ParleyError ? err.code : undefined;
    const ended = code === undefined ? undefined : ENDED[code];
    if (ended) {
      this.#showEnded(ended);
      return;
    }
    this.#error.textContent = err instanceof Error ? err.message : String(err);
    this.dispatchEvent(new CustomEvent('parley-error', { detail: { code, error: err } }));
  }

  #showEnded(status: string, askFeedback = true): void {
    this.#ended = status === 'expired' ? 'expired' : 'closed';
    this.#idle.stop();
    // Nothing arrives any more: the log is read as it is.
    this.#log.removeAttribute('aria-busy');
    this.#confirm.hidden = true;
    this.#setEnabled(false);
    this.#notice.textContent =
      this.#ended === 'expired' ? 'This conversation has expired.' : 'This conversation has ended.';
    if (askFeedback) this.#offerFeedback(true);
    this.dispatchEvent(new CustomEvent('parley-closed', { detail: { status: this.#ended } }));
  }

  #offerFeedback(atEnd = false): void {
    if (!this.#conv || !(this.#feedback === 'unasked' || (atEnd && this.#feedback === 'later'))) return;
    this.#feedback = 'shown';
    const conv = this.#conv;
    const form = feedbackForm(
      async (choice: FeedbackChoice) => {
        try {
          await conv.feedback(choice);
          this.#feedback = 'done';
          const thanks = h('div', { class: 'notice', part: 'feedback-thanks', tabindex: '-1' }, 'Thank you!');
          this.#feedbackSlot.replaceChildren(thanks);
          thanks.focus();
        } catch (err) {
          this.#fail(err);
        }
      },
      () => {
        // Not now: asked again when the conversation ends.
        this.#feedback = this.#ended === null ? 'later' : 'done';
        this.#feedbackSlot.replaceChildren();
        (this.#ended === null ? this.#input : this.#log).focus();
      },
    );
    this.#feedbackSlot.replaceChildren(form);
  }

  #addAttachment(file: File): void {
    const conv = this.#conv;
    if (!conv || this.#ended !== null) return;
    const image = file.type.startsWith('image/');
    const url = image ? URL.createObjectURL(file) : undefined;
    const remove = h('button', { type: 'button', 'aria-label': `Remove ${file.name}` }, '×');
    const chip = fileChip(file.name, remove);
    chip.dataset.state = 'uploading';
    const abort = new AbortController();
    const item: Pending = {
      name: file.name,
      image,
      ...(url ? { url } : {}),
      chip,
      abort,
      removed: false,
      upload: conv.upload(file, file.name, { signal: abort.signal }).then((f) => {
        chip.dataset.state = 'ready';
        return f.id;
      }),
    };
    remove.addEventListener('click', () => {
      // Removed while uploading: the upload stops; a send waiting for it goes without it.
      item.removed = true;
      abort.abort();
      this.#pending = this.#pending.filter((p) => p !== item);
      if (url) URL.revokeObjectURL(url);
      chip.remove();
      this.#input.focus();
    });
    item.upload.catch((err) => {
      if (item.removed) return;
      this.#pending = this.#pending.filter((p) => p !== item);
      chip.remove();
      this.#fail(err);
    });
    this.#pending.push(item);
    this.#pendingList.append(chip);
  }

  async #submit(): Promise<void> {
    const conv = this.#conv;
    const text = this.#input.value.trim();
    if (!conv || this.#busy || this.#ended !== null || (text === '' && this.#pending.length === 0)) return;
    const life = this.#life.signal;
    this.#busy = true;
    this.#send.disabled = true;
    this.#error.textContent = '';
    this.#idle.stop();
    // The attachments chosen so far: one chosen while they finish uploading waits for the next message.
    const chosen = [...this.#pending];
    let ids: (string | null)[];
    try {
      // One removed meanwhile is left out (its upload was stopped).
      ids = await Promise.all(
        chosen.map((p) => p.upload.catch((err) => (p.removed ? null : Promise.reject(err)))),
      );
    } catch {
      // The failed upload's chip is gone and its error shown; the message waits for the user.
      if (!life.aborted) this.#turnEnded();
      return;
    }
    if (life.aborted) return;
    const attachments: Pending[] = [];
    const blocks: Block[] = [];
    chosen.forEach((p, i) => {
      const id = ids[i];
      if (p.removed || !id) return;
      attachments.push(p);
      this.#files.set(id, { name: p.name, ...(p.url ? { url: p.url } : {}) });
      blocks.push({ type: p.image ? 'image' : 'file', file_id: id });
    });
    if (text === '' && attachments.length === 0) return this.#turnEnded();
    if (text !== '') blocks.unshift({ type: 'text', text });
    // The draft given back by a failed send, unchanged, is the same message: the same key, so that the server
    // stores it once even if the first send did arrive. Anything else is a new message with a new key.
    const draft = this.#draft;
    this.#draft = null;
    const same =
      draft !== null &&
      draft.text === text &&
      draft.attachments.length === attachments.length &&
      draft.attachments.every((p, i) => p === attachments[i]);
    const idempotencyKey = same ? draft.idempotencyKey : newIdempotencyKey();
    this.#pending = this.#pending.filter((p) => !attachments.includes(p));
    for (const p of attachments) p.chip.remove();
    if (this.#input.value.trim() === text) {
      this.#input.value = '';
      this.#input.style.height = '';
    }
    // Whether sent with Enter or the button (now disabled), the next message is typed here.
    this.#input.focus();
    const mine = messageNode({ role: 'user', content: blocks }, this.#files);
    this.#log.append(mine);
    this.#scroll(true);
    try {
      const input = attachments.length === 0 ? text : { content: blocks };
      await this.#render(conv.stream(input, { signal: life, idempotencyKey }), mine);
    } catch (err) {
      if (life.aborted) return;
      if (mine.dataset.stored === undefined) {
        // Nothing known to be stored: give the words and attachments back, so that a retry is one keystroke
        // away, under the same key (the send may have arrived and only its answer been lost).
        mine.remove();
        if (this.#input.value === '') this.#input.value = text;
        this.#pending = [...attachments, ...this.#pending];
        this.#pendingList.prepend(...attachments.map((p) => p.chip));
        this.#draft = { text, attachments, idempotencyKey };
      }
      this.#fail(err);
    } finally {
      if (!life.aborted) this.#turnEnded();
    }
  }

  /** Renders one turn's events; `mine` (the user's bubble) gets `data-stored` once the turn has started. */
  async #render(events: AsyncIterable<TurnEvent>, mine: HTMLElement): Promise<void> {
    let turnId: string | null = null;
    let reply: HTMLElement | null = null;
    let text: Text | null = null;
    let tools = new Map<string, HTMLElement>();
    const dropReply = () => {
      reply?.remove();
      for (const el of tools.values()) el.remove();
      reply = null;
      text = null;
      tools = new Map();
    };
    const onEvent = (ev: TurnEvent) => {
      switch (ev.event) {
        case 'turn.started':
          // The same turn starting again (after an interruption) replays its reply from the start.
          if (turnId === ev.data.turn_id) dropReply();
          turnId = ev.data.turn_id;
          mine.dataset.stored = '';
          if (ev.data.user_message) mine.dataset.id = ev.data.user_message.id;
          this.#turn = {
            conversation: this.#conversationKey,
            turnId,
            userMessageId: ev.data.user_message?.id ?? mine.dataset.id,
          };
          // Screen readers hear the reply once it is complete, not word by word.
          this.#log.setAttribute('aria-busy', 'true');
          break;
        case 'message.delta':
          if (!reply || !text) {
            text = document.createTextNode('');
            reply = messageNode({ role: 'assistant', content: [] }, this.#files);
            reply.dataset.streaming = '';
            reply.querySelector('.text')?.append(text);
            this.#log.append(reply);
          }
          text.appendData(ev.data.delta.text);
          this.#scroll();
          break;
        case 'tool.started': {
          const step = toolNode(ev.data.name);
          tools.set(ev.data.call_id, step);
          this.#log.insertBefore(step, reply);
          this.#scroll();
          break;
        }
        case 'tool.completed': {
          const step = tools.get(ev.data.call_id);
          if (step) settleTool(step, ev.data.name, ev.data.status);
          break;
        }
        case 'message.completed':
          // The stored reply is the reference: it replaces the text gathered from the deltas.
          if (reply) {
            fillMessage(reply, ev.data.message, this.#files);
            delete reply.dataset.streaming;
          } else {
            reply = messageNode(ev.data.message, this.#files);
            this.#log.append(reply);
          }
          this.#scroll();
          break;
        case 'turn.completed':
          this.#log.removeAttribute('aria-busy');
          if (ev.data.conversation_status !== 'active') this.#showEnded(ev.data.conversation_status);
          else this.#offerFeedback();
          break;
        case 'turn.failed':
          this.#log.removeAttribute('aria-busy');
          // Partial text was never stored: it goes, and the error says why.
          if (ev.data.partial) dropReply();
          this.#fail(
            new ParleyError({
              status: 0,
              code: ev.data.error.code,
              errorName: ev.data.error.name,
              message: ev.data.error.message,
            }),
          );
          break;
      }
    };
    try {
      for await (const ev of events) onEvent(ev);
    } finally {
      // A stream that broke for good leaves what it showed, no longer marked as arriving.
      if (reply) delete (reply as HTMLElement).dataset.streaming;
    }
  }

  /** One inactivity step at a time, in order: a slow warning is never overtaken by the final step. */
  #inactivity(step: 'warning' | 'final'): Promise<void> {
    this.#steps = this.#steps.then(() => this.#inactivityStep(step));
    return this.#steps;
  }

  async #inactivityStep(step: 'warning' | 'final'): Promise<void> {
    const conv = this.#conv;
    if (!conv || this.#busy || this.#ended !== null) return;
    const life = this.#life.signal;
    try {
      const result = await conv.inactivity(step);
      if (life.aborted) return;
      this.#log.append(messageNode(result.message, this.#files));
      this.#scroll();
      if (result.conversation_status !== 'active') this.#showEnded(result.conversation_status);
    } catch (err) {
      if (!life.aborted) this.#fail(err);
    }
  }

  async #end(): Promise<void> {
    const conv = this.#conv;
    if (!conv) return;
    try {
      await conv.terminate();
      // A reply still arriving is not followed further: the conversation is over.
      this.#life.abort();
      this.#busy = false;
      this.#turn = null;
      this.#showEnded('closed');
      const first = this.#feedbackSlot.querySelector<HTMLInputElement>('input');
      (first ?? this.#log).focus();
    } catch (err) {
      this.#fail(err);
      this.#confirm.hidden = true;
      this.#terminate.hidden = false;
      this.#terminate.focus();
    }
  }
}
