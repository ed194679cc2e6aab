// <parley-chat>: one conversation of the public family in an open shadow root. It loads the earlier messages,
// streams replies, follows what others add (an operator's replies, the handoff: live.ts), uploads attachments,
// shows tool steps and the calls that wait for the user's decision, stops a turn, offers feedback and terminate,
// runs the inactivity steps, shows an ended conversation as such and, when the page can, starts a new one. All
// HTTP goes through @parley/client. This file is the element's life and what it does when; its parts (how it
// looks, the composer, a turn, the live stream, feedback, strings, end controls) have files of their own.
// Moved in the page (disconnected, then connected again) or reloaded, it reloads the conversation and resumes
// the reply that was arriving, or shows again the calls the turn waits for.
import { type ParleyConversation, ParleyError } from '@parley/client';
import { ChatView } from './chat-view.ts';
import { Composer } from './composer.ts';
import { connect, conversationKey, type LiveTurn, rememberedTurn, rememberTurn } from './connect.ts';
import { EndControls } from './end-controls.ts';
import { FeedbackOffer } from './feedback-form.ts';
import { Inactivity } from './idle-timer.ts';
import { LiveFollower } from './live.ts';
import { Strings, type WidgetStrings } from './strings.ts';
import { TurnControl } from './turn-control.ts';
import { type KnownFile, messageNode, type Shown } from './view.ts';

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
    'strings',
    'feedback',
    'launcher',
    'open',
    'greeting',
  ];

  /** Called for a fresh session token when the current one expires; your server mints it with its API key. */
  refreshToken: (() => Promise<string>) | undefined;
  /**
   * Called by the "new conversation" button shown once a conversation has ended: your server starts one and
   * mints its token; the widget then shows it. Without it the button is not shown.
   */
  newConversation: (() => Promise<{ conversationId: string; token: string }>) | undefined;

  #conv: ParleyConversation | null = null;
  /** Aborted when the element restarts or leaves the page: ends the stream and ignores late answers. */
  #life = new AbortController();
  #busy = false;
  #ended: 'closed' | 'expired' | null = null;
  #files = new Map<string, KnownFile>();
  #turn: LiveTurn | null = null;
  #restartQueued = false;
  readonly #idle = new Inactivity(this, (step) => this.#inactivityStep(step));
  readonly #strings = new Strings();
  readonly #shown: Shown = { files: this.#files, strings: this.#strings };

  readonly #composer = new Composer(
    {
      submit: () => void this.#submit(),
      stop: () => void this.#control.stop(),
      choose: (file) => this.#addAttachment(file),
    },
    this.#strings,
  );
  readonly #endControls = new EndControls(
    () => void this.#end(),
    () => this.#ended !== null,
    this.#strings,
  );
  readonly #feedback = new FeedbackOffer({
    strings: this.#strings,
    mode: () => this.getAttribute('feedback'),
    shown: () => this.#view.scroll(true),
    dismissed: () => (this.#ended === null ? this.#composer.input : this.#view.log).focus(),
    fail: (err) => this.#fail(err),
  });
  readonly #view: ChatView;
  /** The turn under way: its rendering, approval cards, decisions and Stop (turn-control.ts). */
  readonly #control: TurnControl;
  readonly #live: LiveFollower;

  constructor() {
    super();
    const parts = {
      composer: this.#composer,
      endControls: this.#endControls,
      feedback: this.#feedback,
      strings: this.#strings,
      startOver: () => void this.#startOver(),
    };
    const view = new ChatView(this.attachShadow({ mode: 'open' }), parts, () => this.#active());
    this.#view = view;
    this.#live = new LiveFollower({
      log: view.log,
      shown: this.#shown,
      busy: () => this.#busy,
      scroll: () => view.scroll(),
      arrived: () => view.launcher.arrived(),
      handedOver: (who) => view.event(who === 'humans' ? 'handedToHumans' : 'handedBack'),
      ended: (status) => this.#showEnded(status),
    });
    this.#control = new TurnControl({
      conv: () => this.#conv,
      life: () => this.#life.signal,
      log: view.log,
      notice: view.notice,
      error: view.error,
      shown: this.#shown,
      // No reply is awaited while people handle the conversation: they answer when they can.
      typing: (on) => view.typing(on && this.#live.handledBy === 'agent'),
      composer: this.#composer,
      scroll: (force) => view.scroll(force),
      started: (turnId, userMessageId) =>
        this.#setTurn({ conversation: conversationKey(this), turnId, userMessageId }),
      completed: (status) => status !== 'active' && this.#showEnded(status),
      fail: (err) => this.#fail(err),
      over: () => this.#turnEnded(),
    });
  }

  /** The page's strings (see strings.ts for the keys); the `strings` attribute sets them as JSON. */
  get strings(): WidgetStrings {
    return this.#strings.own;
  }

  set strings(own: WidgetStrings) {
    this.#strings.set(own);
    // What is not bound to a key follows by hand.
    this.#composer.relabel();
    this.#view.launcher.update();
  }

  connectedCallback(): void {
    this.#view.launcher.update();
    this.#queueRestart();
  }

  disconnectedCallback(): void {
    this.#life.abort();
    this.#live.stop();
    this.#idle.stop();
    // Connected again, the widget starts over from the server: nothing local is kept meanwhile.
    this.#dropLocalFiles();
  }

  attributeChangedCallback(name: string, before: string | null, after: string | null): void {
    if (before === after || this.#setting(name, after) || !this.isConnected) return;
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

  /** The attributes that change only how the widget looks or speaks: true when `name` is one of them. */
  #setting(name: string, value: string | null): boolean {
    if (name === 'strings') this.strings = Strings.parse(value, (e) => this.#fail(e)) as WidgetStrings;
    else if (name === 'feedback') this.#feedback.update();
    else if (name === 'launcher' || name === 'open') this.#view.launcher.update();
    else return false;
    return true;
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
    this.#live.stop();
    this.#view.clear(this.getAttribute('greeting'));
    this.#ended = null;
    this.#dropLocalFiles();
    this.#busy = false;
    this.#setEnabled(false);
    if (!this.getAttribute('conversation-id') || !this.getAttribute('token')) {
      this.#view.notice.textContent = this.#strings.t('noConversation');
      this.#conv = null;
      this.#feedback.reset(null);
      return;
    }
    const conv = this.#connect();
    this.#conv = conv;
    this.#feedback.reset((choice) => conv.feedback(choice));
    this.#idle.reread();
    try {
      const record = await conv.get({ signal: life.signal });
      // The latest page of history: the conversation's count says where it starts.
      const offset = Math.max(0, record.messages_count - HISTORY);
      const page = await conv.messages({ offset, limit: HISTORY }, { signal: life.signal });
      if (life.signal.aborted) return;
      for (const message of page.items) this.#view.log.append(messageNode(message, this.#shown));
      this.#view.scroll(true);
      this.#live.handledBy = record.handled_by;
      // Opened already ended: said so, without asking for feedback again.
      if (record.status !== 'active') return this.#showEnded(record.status, false);
      this.#setEnabled(true);
      this.#live.start(conv, life.signal, page.items.at(-1));
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
        this.#busy = true;
        return await this.#control.follow(turn.turnId, mine, record.pending_approvals);
      }
      rememberTurn(this, null);
      this.#idle.restart();
    } catch (err) {
      if (!life.signal.aborted) this.#fail(err);
    }
  }

  /** After a turn's events (or their failure): the composer is the user's again. */
  #turnEnded(): void {
    this.#busy = false;
    // What others added during the turn, unless the turn showed it.
    this.#live.flush();
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
    // Told once, whoever tells it first (the stream's session.closed, or the answer to End).
    const first = this.#ended === null;
    this.#ended = status === 'expired' ? 'expired' : 'closed';
    this.#idle.stop();
    this.#live.stop();
    this.#view.showEnded(this.#ended, this.#busy, this.newConversation !== undefined);
    if (!first) return;
    if (askFeedback) this.#feedback.atEnd();
    this.dispatchEvent(new CustomEvent('parley-closed', { detail: { status: this.#ended } }));
  }

  /** The "new conversation" button: the page's callback names one, which the widget then shows. */
  async #startOver(): Promise<void> {
    const next = await this.newConversation?.().catch((err: unknown) => void this.#fail(err));
    if (!next) return;
    this.setAttribute('conversation-id', next.conversationId);
    this.setAttribute('token', next.token);
    this.#composer.input.focus();
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
    const out = await composer.take(text, this.#files);
    if (life.aborted) return;
    // Nothing to send after all, or an upload failed (its error shown): the message waits for the user.
    if (out === null || out === 'failed') return this.#turnEnded();
    const { attachments, blocks, idempotencyKey } = out;
    const mine = messageNode({ role: 'user', content: blocks }, this.#shown);
    this.#view.log.append(mine);
    this.#view.scroll(true);
    try {
      const input = attachments.length === 0 ? text : { content: blocks };
      const options = { signal: life, idempotencyKey };
      // People answer: the message is stored and no turn runs, so there is nothing to stream.
      if (this.#live.handledBy === 'humans') mine.dataset.stored = (await conv.send(input, options)).status;
      else await this.#control.render(conv.stream(input, options), mine);
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
      // The stream may have shown it first.
      if (!this.#live.has(result.message.id)) this.#view.log.append(messageNode(result.message, this.#shown));
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
