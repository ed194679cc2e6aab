// The composer of <parley-chat>: the message box (Enter sends, Shift+Enter is a newline), the send button (a
// Stop button while a turn runs), the attach button, the attachments (each uploaded as soon as it is chosen, under a chip that removes it), and the draft
// a send that stored nothing gives back, which keeps its Idempotency-Key. The element decides when to send.
import { newIdempotencyKey, type ParleyConversation } from '@parley/client';
import type { Strings } from './strings.ts';
import { type Block, fileChip, h, type KnownFile } from './view.ts';

/** An attachment chosen for the next message. */
export interface Pending {
  name: string;
  image: boolean;
  url?: string;
  upload: Promise<string>;
  chip: HTMLElement;
  /** Stops the upload when the chip is removed (or the widget restarts). */
  abort: AbortController;
  removed: boolean;
}

/** A message ready to send: its words, its attachments as blocks, the key it is sent under. */
export interface Outgoing {
  text: string;
  attachments: Pending[];
  blocks: Block[];
  idempotencyKey: string;
}

/** A message given back to the composer after a send that stored nothing, with the key it was sent under. */
interface Draft {
  text: string;
  attachments: readonly Pending[];
  idempotencyKey: string;
}

const PAPERCLIP =
  '<svg aria-hidden="true" width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21.44 11.05l-9.19 9.19a6 6 0 0 1-8.49-8.49l9.19-9.19a4 4 0 0 1 5.66 5.66l-9.2 9.19a2 2 0 0 1-2.83-2.83l8.49-8.48"/></svg>';

export interface ComposerHooks {
  /** Enter or the send button. */
  submit(): void;
  /** The send button while a turn runs: stop it. */
  stop(): void;
  /** Files picked: the element uploads them (addAttachment) if the conversation takes them. */
  choose(file: File): void;
}

export class Composer {
  readonly input = h('textarea', {
    id: 'parley-input',
    part: 'input',
    rows: '1',
    'aria-describedby': 'parley-hint',
  });
  readonly send = h('button', { type: 'submit', class: 'primary', part: 'send-button' });
  readonly attach = h('button', { type: 'button', part: 'attach-button' });
  readonly #picker = h('input', { type: 'file', multiple: true, hidden: true, tabindex: '-1' });
  /** The chips of the attachments chosen. */
  readonly list = h('div', { class: 'pending', part: 'attachments' });
  readonly form: HTMLFormElement;
  readonly #strings: Strings;
  #pending: Pending[] = [];
  /** The draft a failed send gave back: sent again unchanged, it keeps its Idempotency-Key. */
  #draft: Draft | null = null;
  /** A turn runs (or waits for decisions): the send button is the Stop button. */
  #running = false;
  #stopping = false;

  constructor(hooks: ComposerHooks, strings: Strings) {
    this.#strings = strings;
    strings.bind(this.input, 'placeholder', 'placeholder');
    strings.bind(this.attach, 'attach', 'aria-label');
    strings.bind(this.list, 'attachments', 'aria-label');
    this.#label();
    // A constant of ours, not text from anyone: the paperclip (Feather's path, MIT), drawn in the text colour.
    this.attach.innerHTML = PAPERCLIP;
    this.form = h(
      'form',
      { class: 'composer', part: 'composer' },
      this.attach,
      this.#picker,
      strings.bind(h('label', { class: 'sr-only', for: 'parley-input' }), 'message'),
      this.input,
      this.send,
    );
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      // Enter in the message box never stops a turn: only the button does (it is Stop while one runs).
      if (this.#running) hooks.stop();
      else hooks.submit();
    });
    this.input.addEventListener('keydown', (e) => {
      // Enter sends; Shift+Enter (and Enter while an input method composes) is the textarea's own newline.
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        hooks.submit();
      }
    });
    this.input.addEventListener('input', () => {
      this.input.style.height = 'auto';
      this.input.style.height = `${this.input.scrollHeight}px`;
    });
    this.attach.addEventListener('click', () => this.#picker.click());
    this.#picker.addEventListener('change', () => {
      for (const file of this.#picker.files ?? []) hooks.choose(file);
      this.#picker.value = '';
    });
  }

  /** The attachments chosen so far. */
  get pending(): readonly Pending[] {
    return this.#pending;
  }

  setEnabled(on: boolean, busy: boolean): void {
    this.input.disabled = !on;
    this.attach.disabled = !on;
    this.send.disabled = !on || (busy && !this.#running) || this.#stopping;
  }

  /**
   * A turn runs (`on`): the send button becomes Stop, enabled; `stopping` while the cancel is on its way (then
   * disabled). Off, it is Send again.
   */
  setRunning(on: boolean, stopping = false): void {
    const focused = this.send.matches(':focus');
    this.#running = on;
    this.#stopping = on && stopping;
    this.#label();
    this.send.classList.toggle('primary', !on);
    this.send.classList.toggle('stop', on);
    this.send.disabled = this.#stopping || (!on && this.input.disabled);
    // A disabled button loses the focus: it goes to the message box, where the next message is typed.
    if (focused && this.send.disabled) this.input.focus();
  }

  /** The send button's words: Send, or Stop (with a fuller name) while a turn runs. */
  #label(): void {
    const t = this.#strings;
    this.send.textContent = t.t(this.#running ? 'stop' : 'send');
    if (this.#running) this.send.setAttribute('aria-label', t.t('stopReply'));
    else this.send.removeAttribute('aria-label');
  }

  /** The strings changed: the send button follows (bound text follows by itself). */
  relabel(): void {
    this.#label();
  }

  /** Uploads `file` at once under a chip; `failed` is told when the upload fails (its chip is gone then). */
  addAttachment(file: File, conv: ParleyConversation, failed: (err: unknown) => void): void {
    const image = file.type.startsWith('image/');
    const url = image ? URL.createObjectURL(file) : undefined;
    const remove = h(
      'button',
      { type: 'button', 'aria-label': this.#strings.t('remove', { name: file.name }) },
      '×',
    );
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
      this.input.focus();
    });
    item.upload.catch((err) => {
      if (item.removed) return;
      this.#pending = this.#pending.filter((p) => p !== item);
      chip.remove();
      failed(err);
    });
    this.#pending.push(item);
    this.list.append(chip);
  }

  /**
   * The attachments of `chosen` still attached once they finished uploading, each with its file's id: one removed
   * meanwhile is left out (its upload was stopped). Rejects when an upload failed (its chip is gone then).
   */
  static async uploaded(chosen: readonly Pending[]): Promise<{ attachment: Pending; fileId: string }[]> {
    const ids = await Promise.all(
      chosen.map((p) => p.upload.catch((err) => (p.removed ? null : Promise.reject(err)))),
    );
    return chosen.flatMap((attachment, i) => {
      const fileId = ids[i];
      return attachment.removed || !fileId ? [] : [{ attachment, fileId }];
    });
  }

  /**
   * The composer's message once its attachments finished uploading (their files remembered in `files`), taken
   * out of the composer: null when nothing is left to send, 'failed' when an upload failed (its error shown, its
   * chip gone). An attachment chosen meanwhile waits for the next message.
   */
  async take(text: string, files: Map<string, KnownFile>): Promise<Outgoing | 'failed' | null> {
    let uploaded: { attachment: Pending; fileId: string }[];
    try {
      uploaded = await Composer.uploaded([...this.#pending]);
    } catch {
      return 'failed';
    }
    const attachments = uploaded.map((u) => u.attachment);
    const blocks: Block[] = uploaded.map(({ attachment: p, fileId }) => {
      files.set(fileId, { name: p.name, ...(p.url ? { url: p.url } : {}) });
      return { type: p.image ? 'image' : 'file', file_id: fileId };
    });
    if (text === '' && attachments.length === 0) return null;
    if (text !== '') blocks.unshift({ type: 'text', text });
    const idempotencyKey = this.keyFor(text, attachments);
    this.sent(text, attachments);
    return { text, attachments, blocks, idempotencyKey };
  }

  /**
   * The key a message is sent under. The draft given back by a failed send, unchanged, is the same message:
   * the same key, so that the server stores it once even if the first send did arrive. Anything else is a new
   * message with a new key.
   */
  keyFor(text: string, attachments: readonly Pending[]): string {
    const draft = this.#draft;
    this.#draft = null;
    const same =
      draft !== null &&
      draft.text === text &&
      draft.attachments.length === attachments.length &&
      draft.attachments.every((p, i) => p === attachments[i]);
    return same ? draft.idempotencyKey : newIdempotencyKey();
  }

  /** A message is on its way: its attachments leave the composer, and so does its text unless edited meanwhile. */
  sent(text: string, attachments: readonly Pending[]): void {
    this.#pending = this.#pending.filter((p) => !attachments.includes(p));
    for (const p of attachments) p.chip.remove();
    if (this.input.value.trim() === text) {
      this.input.value = '';
      this.input.style.height = '';
    }
    // Whether sent with Enter or the button (now disabled), the next message is typed here.
    this.input.focus();
  }

  /**
   * Nothing of the message is known to be stored: the words and attachments come back, so that a retry is one
   * keystroke away, under the same key (the send may have arrived and only its answer been lost).
   */
  giveBack(text: string, attachments: readonly Pending[], idempotencyKey: string): void {
    if (this.input.value === '') this.input.value = text;
    this.#pending = [...attachments, ...this.#pending];
    this.list.prepend(...attachments.map((p) => p.chip));
    this.#draft = { text, attachments, idempotencyKey };
  }

  /** Forgets the attachments and the draft: uploads stopped, local URLs revoked. */
  clear(): void {
    for (const item of this.#pending) {
      item.removed = true;
      item.abort.abort();
      if (item.url) URL.revokeObjectURL(item.url);
    }
    this.#pending = [];
    this.list.replaceChildren();
    this.#draft = null;
  }
}
