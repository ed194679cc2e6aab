// <parley-chat>: one conversation of the public family in an open shadow root. It loads the earlier messages,
// streams replies delta by delta, uploads attachments, shows tool steps, asks the user to approve or deny the
// tool calls that wait for them, stops a running turn, offers NPS feedback and terminate,
// runs the inactivity steps when asked to, and shows a closed or expired conversation as such. All HTTP goes
// through @parley/client (token refresh and resuming a dropped stream included). This file is the element's
// life and what it does when; how it looks (chat-view.ts), the composer, a turn's rendering, the feedback and
// the end controls have files of their own.
// Moved in the page (disconnected, then connected again) or reloaded, it reloads the conversation and resumes
// the reply that was arriving, or shows again the calls the turn waits for.
import { type Approval, type ParleyConversation, ParleyError } from '@parley/client';
import { ChatView } from './chat-view.ts';
import { Composer, type Pending } from './composer.ts';
import { connect, conversationKey, type LiveTurn, rememberedTurn, rememberTurn } from './connect.ts';
import { EndControls } from './end-controls.ts';
import { FeedbackOffer } from './feedback-form.ts';
import { Inactivity } from './idle-timer.ts';
import { TurnControl } from './turn-control.ts';
import { type Block, type KnownFile, messageNode } from './view.ts';

/** Codes that mean the conversation no longer takes messages. */
const ENDED: Record<string, 'closed' | 'expired'> = { session_closed: 'closed', session_expired: 'expired' };

/** Earlier messages shown when the widget opens a conversation. */
const HISTORY = 100;

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
  #files = new Map<string, KnownFile>();
  #turn: LiveTurn | null = null;
  #restartQueued = false;
  readonly #idle = new Inactivity(this, (step) => this.#inactivityStep(step));

  readonly #composer = new Composer({
    submit: () => void this.#submit(),
    stop: () => void this.#control.stop(),
    choose: (file) => this.#addAttachment(file),
  });
  readonly #endControls = new EndControls(
    () => void this.#end(),
    () => this.#ended !== null,
  );
  readonly #feedback = new FeedbackOffer({
    ended: () => this.#ended !== null,
    dismissed: () => (this.#ended === null ? this.#composer.input : this.#view.log).focus(),
    fail: (err) => this.#fail(err),
  });
  readonly #view: ChatView;
  /** The turn under way: its rendering, approval cards, decisions and Stop (turn-control.ts). */
  readonly #control: TurnControl;

  constructor() {
    super();
    const parts = { composer: this.#composer, endControls: this.#endControls, feedback: this.#feedback.slot };
    const view = new ChatView(this.attachShadow({ mode: 'open' }), parts, () => this.#active());
    this.#view = view;
    this.#control = new TurnControl({
      conv: () => this.#conv,
      life: () => this.#life.signal,
      log: view.log,
      notice: view.notice,
      error: view.error,
      files: this.#files,
      composer: this.#composer,
      scroll: (force) => view.scroll(force),
      started: (turnId, userMessageId) =>
        this.#setTurn({ conversation: conversationKey(this), turnId, userMessageId }),
      completed: (status) => {
        if (status !== 'active') this.#showEnded(status);
        else this.#offerFeedback();
      },
      fail: (err) => this.#fail(err),
      over: () => this.#turnEnded(),
    });
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
      this.#idle.reread();
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

  #connect(): ParleyConversation {
    // Read when needed, so that the property may be set after the element is connected.
    return connect(this, () => (this.refreshToken ? this.refreshToken() : null));
  }

  async #start(): Promise<void> {
    this.#life.abort();
    const life = new AbortController();
    this.#life = life;
    // A reply that was arriving when the widget stopped (moved in the page, or the page reloaded), or a turn
    // waiting for decisions: followed again below.
    const interrupted =
      this.#turn?.conversation === conversationKey(this) ? this.#turn : rememberedTurn(this);
    this.#turn = null;
    this.#control.reset(true);
    this.#idle.stop();
    this.#view.clear();
    this.#feedback.reset();
    this.#ended = null;
    this.#dropLocalFiles();
    this.#busy = false;
    this.#setEnabled(false);
    if (!this.getAttribute('conversation-id') || !this.getAttribute('token')) {
      this.#view.notice.textContent = 'No conversation yet.';
      this.#conv = null;
      return;
    }
    const conv = this.#connect();
    this.#conv = conv;
    this.#idle.reread();
    try {
      const record = await conv.get({ signal: life.signal });
      // The latest page of history: the conversation's count says where it starts.
      const offset = Math.max(0, record.messages_count - HISTORY);
      const page = await conv.messages({ offset, limit: HISTORY }, { signal: life.signal });
      if (life.signal.aborted) return;
      for (const message of page.items) this.#view.log.append(messageNode(message, this.#files));
      this.#view.scroll(true);
      // Opened already ended: said so, without asking for feedback again.
      if (record.status !== 'active') return this.#showEnded(record.status, false);
      this.#setEnabled(true);
      // The interrupted turn's message is the newest stored: its reply is not, so the turn is followed again.
      // So is a turn waiting for decisions that this tab never saw (sent in another tab or on another device).
      const last = page.items.at(-1);
      const mine = this.#view.log.lastElementChild;
      const waiting = record.pending_approvals[0];
      const turn =
        interrupted?.userMessageId === last?.id
          ? interrupted
          : waiting && {
              conversation: conversationKey(this),
              turnId: waiting.turn_id,
              userMessageId: last?.id,
            };
      if (turn && last?.id === turn.userMessageId && mine instanceof HTMLElement) {
        return await this.#follow(conv, turn, mine, life.signal, record.pending_approvals);
      }
      rememberTurn(this, null);
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
    pending: readonly Approval[],
  ): Promise<void> {
    this.#busy = true;
    this.#composer.send.disabled = true;
    try {
      let events = conv.resume(turn.turnId, { signal: life });
      await this.#control.render(events, mine);
      // A pause whose calls were decided meanwhile (in another tab): the turn went on, and so does its replay.
      while (this.#control.passed(pending)) {
        const after = events.lastEventId;
        events = conv.resume(turn.turnId, { after, signal: life });
        await this.#control.goOn(events);
        if (events.lastEventId === after) break;
      }
    } catch (err) {
      if (!life.aborted) this.#fail(err);
    } finally {
      if (!life.aborted) this.#control.partEnded();
    }
  }

  /** After a turn's events (or their failure): the composer is the user's again. */
  #turnEnded(): void {
    this.#busy = false;
    this.#setTurn(null);
    this.#control.reset();
    this.#view.log.removeAttribute('aria-busy');
    if (this.#ended === null) {
      this.#setEnabled(true);
      this.#idle.restart();
    }
  }

  /** Forgets the attachments and the images of this page: uploads stopped, local URLs revoked. */
  #dropLocalFiles(): void {
    for (const file of this.#files.values()) if (file.url) URL.revokeObjectURL(file.url);
    this.#files.clear();
    this.#composer.clear();
  }

  #setEnabled(on: boolean): void {
    this.#view.setEnabled(on, this.#busy, this.#ended !== null);
  }

  #active(): void {
    if (!this.#busy && this.#ended === null && this.#conv) this.#idle.restart();
  }

  #fail(err: unknown): void {
    const code = err instanceof ParleyError ? err.code : undefined;
    const ended = code === undefined ? undefined : ENDED[code];
    if (ended) {
      this.#showEnded(ended);
      return;
    }
    this.#view.error.textContent = err instanceof Error ? err.message : String(err);
    this.dispatchEvent(new CustomEvent('parley-error', { detail: { code, error: err } }));
  }

  #showEnded(status: string, askFeedback = true): void {
    this.#ended = status === 'expired' ? 'expired' : 'closed';
    this.#idle.stop();
    this.#view.showEnded(this.#ended, this.#busy);
    if (askFeedback) this.#offerFeedback(true);
    this.dispatchEvent(new CustomEvent('parley-closed', { detail: { status: this.#ended } }));
  }

  #offerFeedback(atEnd = false): void {
    const conv = this.#conv;
    if (conv) this.#feedback.offer((choice) => conv.feedback(choice), atEnd);
  }

  #addAttachment(file: File): void {
    const conv = this.#conv;
    if (!conv || this.#ended !== null) return;
    this.#composer.addAttachment(file, conv, (err) => this.#fail(err));
  }

  async #submit(): Promise<void> {
    const conv = this.#conv;
    const composer = this.#composer;
    const text = composer.input.value.trim();
    if (!conv || this.#busy || this.#ended !== null || (text === '' && composer.pending.length === 0)) return;
    const life = this.#life.signal;
    this.#busy = true;
    composer.send.disabled = true;
    this.#view.error.textContent = '';
    this.#idle.stop();
    // The attachments chosen so far: one chosen while they finish uploading waits for the next message.
    const chosen = [...composer.pending];
    let uploaded: { attachment: Pending; fileId: string }[];
    try {
      uploaded = await Composer.uploaded(chosen);
    } catch {
      // The failed upload's chip is gone and its error shown; the message waits for the user.
      if (!life.aborted) this.#turnEnded();
      return;
    }
    if (life.aborted) return;
    const attachments = uploaded.map((u) => u.attachment);
    const blocks: Block[] = uploaded.map(({ attachment: p, fileId }) => {
      this.#files.set(fileId, { name: p.name, ...(p.url ? { url: p.url } : {}) });
      return { type: p.image ? 'image' : 'file', file_id: fileId };
    });
    if (text === '' && attachments.length === 0) return this.#turnEnded();
    if (text !== '') blocks.unshift({ type: 'text', text });
    const idempotencyKey = composer.keyFor(text, attachments);
    composer.sent(text, attachments);
    const mine = messageNode({ role: 'user', content: blocks }, this.#files);
    this.#view.log.append(mine);
    this.#view.scroll(true);
    try {
      const input = attachments.length === 0 ? text : { content: blocks };
      await this.#control.render(conv.stream(input, { signal: life, idempotencyKey }), mine);
    } catch (err) {
      if (life.aborted) return;
      if (mine.dataset.stored === undefined) {
        // Nothing known to be stored: the message goes back to the composer, to be sent again under its key.
        mine.remove();
        composer.giveBack(text, attachments, idempotencyKey);
      }
      this.#fail(err);
    } finally {
      if (!life.aborted) this.#control.partEnded();
    }
  }

  #setTurn(turn: LiveTurn | null): void {
    this.#turn = turn;
    rememberTurn(this, turn);
  }

  /** One inactivity step (Inactivity runs them in order): its message shown, the conversation ended if it did. */
  async #inactivityStep(step: 'warning' | 'final'): Promise<void> {
    const conv = this.#conv;
    if (!conv || this.#busy || this.#ended !== null) return;
    const life = this.#life.signal;
    try {
      const result = await conv.inactivity(step);
      if (life.aborted) return;
      this.#view.log.append(messageNode(result.message, this.#files));
      this.#view.scroll();
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
      this.#setTurn(null);
      this.#control.reset();
      this.#showEnded('closed');
      const first = this.#feedback.slot.querySelector<HTMLInputElement>('input');
      (first ?? this.#view.log).focus();
    } catch (err) {
      this.#fail(err);
      this.#endControls.restore();
    }
  }
}
