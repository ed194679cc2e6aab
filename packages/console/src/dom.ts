// DOM building for the console: a tiny element helper and the page's live region. Text is always set as
// text, never as HTML, so nothing a model, a user or an operator writes can inject markup.

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | boolean | EventListener | undefined>;

/** `h('button', { type: 'button', onclick: fn }, 'Hand back')`; `on*` keys that are functions listen. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else if (typeof value === 'string') el.setAttribute(name, value);
  }
  for (const child of children) if (child) el.append(child);
  return el;
}

/** A labelled form control: `<label for>` and the control, in one wrapper. */
export function field(label: string, control: HTMLElement): HTMLDivElement {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 10)}`;
  control.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), control);
}

/** A <select> of `[value, label]` options. */
export function select(name: string, options: [string, string][], value = ''): HTMLSelectElement {
  const el = h('select', { name });
  for (const [v, label] of options) el.append(h('option', { value: v }, label));
  el.value = value;
  return el;
}

let announcer: HTMLElement | undefined;

/** The page's polite live region: what it is told is read out by screen readers, without moving focus. */
export function liveRegion(): HTMLElement {
  announcer ??= h('div', { class: 'sr-only', 'aria-live': 'polite', 'aria-atomic': 'true' });
  return announcer;
}

export function announce(text: string): void {
  const region = liveRegion();
  // Emptied first, so that the same words said twice are read twice.
  region.textContent = '';
  setTimeout(() => {
    region.textContent = text;
  }, 50);
}

/** A date as the operator reads it: local time with seconds today, else the date and time to the minute. */
export function when(iso: string | null): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return date.toDateString() === new Date().toDateString()
    ? date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    : date.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
}

/** `n thing` or `n things`. */
export const count = (n: number, thing: string) => `${n} ${thing}${n === 1 ? '' : 's'}`;

/** The message of a failed request, as the console shows it. */
export function errorText(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err) {
    const code = 'code' in err && typeof err.code === 'string' ? ` (${err.code})` : '';
    return `${String(err.message)}${code}`;
  }
  return String(err);
}
