// Every user-visible string of <parley-chat>, by key, in English; a page replaces any of them with the
// `strings` attribute (JSON) or property (an object), so the widget speaks the page's language. Text made
// once (buttons, labels) is bound to its key and set again when the strings change; text made later reads the
// strings as they are then. `{name}` and `{count}` in a string are filled in where it is used.
export const DEFAULT_STRINGS = {
  title: 'Chat',
  conversation: 'Conversation',
  hint: 'Enter sends, Shift+Enter starts a new line.',
  you: 'You',
  agent: 'Agent',
  noConversation: 'No conversation yet.',
  placeholder: 'Write a message…',
  message: 'Message',
  send: 'Send',
  stop: 'Stop',
  stopReply: 'Stop the reply',
  attach: 'Attach files',
  attachments: 'Attachments',
  remove: 'Remove {name}',
  image: 'Image',
  file: 'File',
  toolRunning: 'Using {name}…',
  toolDone: 'Used {name}',
  toolFailed: '{name} failed',
  stopped: 'Stopped',
  typing: 'The agent is writing…',
  endChat: 'End chat',
  endQuestion: 'End the conversation?',
  end: 'End',
  cancel: 'Cancel',
  ended: 'This conversation has ended.',
  expired: 'This conversation has expired.',
  newConversation: 'Start a new conversation',
  handedToHumans: 'A person takes over this conversation and will answer here.',
  handedBack: 'The agent answers again.',
  rate: 'Rate this conversation',
  feedback: 'Feedback',
  feedbackQuestion: 'How likely are you to recommend us? (0 = not at all, 10 = very)',
  comment: 'Comment',
  commentPlaceholder: 'Comment (optional)',
  sendFeedback: 'Send feedback',
  notNow: 'Not now',
  thanks: 'Thank you!',
  allow: 'Allow {name}?',
  approve: 'Approve',
  deny: 'Deny',
  approveTool: 'Approve {name}',
  denyTool: 'Deny {name}',
  approved: 'Approved',
  denied: 'Denied',
  notRun: 'Not run',
  more: '{count} more',
  waitingApproval: 'Waiting for approval…',
  openChat: 'Open the chat',
  openChatUnread: 'Open the chat: new messages',
  closeChat: 'Close the chat',
};

export type StringKey = keyof typeof DEFAULT_STRINGS;
export type WidgetStrings = Partial<Record<StringKey, string>>;

/** A node's text, or one of its attributes, that says the string `key`. */
type Binding = [el: Element, key: StringKey, attr: string | undefined];

export class Strings {
  #own: WidgetStrings = {};
  #bound: Binding[] = [];

  /** The string `key`, `{name}`-like slots filled from `vars`. */
  t(key: StringKey, vars: Record<string, string | number> = {}): string {
    const text = this.#own[key] ?? DEFAULT_STRINGS[key];
    return text.replace(/\{(\w+)\}/g, (slot, name: string) => (name in vars ? String(vars[name]) : slot));
  }

  /** Sets `el`'s text (or `attr`) to the string `key` now and whenever the strings change; returns `el`. */
  bind<E extends Element>(el: E, key: StringKey, attr?: string): E {
    this.#bound.push([el, key, attr]);
    this.#apply(el, key, attr);
    return el;
  }

  /** The page's strings (unknown keys and non-strings ignored); every bound text follows. */
  set(own: unknown): void {
    const picked: WidgetStrings = {};
    if (own && typeof own === 'object') {
      for (const [key, value] of Object.entries(own)) {
        if (key in DEFAULT_STRINGS && typeof value === 'string') picked[key as StringKey] = value;
      }
    }
    this.#own = picked;
    for (const [el, key, attr] of this.#bound) this.#apply(el, key, attr);
  }

  /** The page's own strings, as set. */
  get own(): WidgetStrings {
    return { ...this.#own };
  }

  /** The `strings` attribute's JSON; invalid JSON is reported to `bad` and leaves the defaults. */
  static parse(json: string | null, bad: (err: unknown) => void): unknown {
    if (!json) return {};
    try {
      return JSON.parse(json);
    } catch (err) {
      bad(err);
      return {};
    }
  }

  #apply(el: Element, key: StringKey, attr: string | undefined): void {
    if (attr) el.setAttribute(attr, this.t(key));
    else el.textContent = this.t(key);
  }
}
