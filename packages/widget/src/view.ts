// DOM building for the widget: a tiny element helper, message bubbles (text, images, file chips) and tool
// steps. Text is always set as text, never as HTML, so nothing a model or a user writes can inject markup.

type Child = Node | string | null | undefined | false;

/** `h('button', { part: 'send-button', type: 'submit' }, 'Send')`; `on*` keys that are functions listen. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | EventListener | undefined> = {},
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

/** A content block as messages carry it. */
export type Block =
  | { type: 'text'; text: string }
  | { type: 'image'; file_id: string }
  | { type: 'file'; file_id: string };

/** What the page knows of a file: its name, and a local URL for an image uploaded from this page. */
export interface KnownFile {
  name: string;
  url?: string;
}

export interface ShownMessage {
  id?: string;
  role: 'user' | 'assistant';
  content: readonly Block[];
}

export function fileChip(name: string, extra?: Node): HTMLSpanElement {
  return h('span', { class: 'chip', part: 'file-chip' }, name, extra);
}

function blockNode(block: Block, files: ReadonlyMap<string, KnownFile>): Node {
  if (block.type === 'text') return h('span', { class: 'text', part: 'text' }, block.text);
  const known = files.get(block.file_id);
  if (block.type === 'image' && known?.url) {
    return h('img', { part: 'image', src: known.url, alt: known.name });
  }
  // The public family serves no file content, so an image from an earlier visit is shown by its name.
  return fileChip(known?.name ?? (block.type === 'image' ? 'Image' : 'File'));
}

/** A message bubble; an assistant bubble being streamed has one (empty) text span and `data-streaming`. */
export function messageNode(message: ShownMessage, files: ReadonlyMap<string, KnownFile>): HTMLDivElement {
  const el = h('div', { class: `msg ${message.role}`, part: `message message-${message.role}` });
  el.append(h('span', { class: 'sr-only' }, message.role === 'user' ? 'You: ' : 'Agent: '));
  fillMessage(el, message, files);
  return el;
}

/** Replaces a bubble's content (not its label) with the message's blocks. */
export function fillMessage(
  el: HTMLElement,
  message: ShownMessage,
  files: ReadonlyMap<string, KnownFile>,
): void {
  if (message.id) el.dataset.id = message.id;
  const label = el.firstChild;
  el.replaceChildren(...(label ? [label] : []), ...message.content.map((b) => blockNode(b, files)));
  if (message.content.length === 0) el.append(h('span', { class: 'text', part: 'text' }));
}

/** A tool step of the turn: its name, then whether it succeeded. */
export function toolNode(name: string): HTMLDivElement {
  return h('div', { class: 'tool', part: 'tool', 'data-status': 'running' }, `Using ${name}…`);
}

export function settleTool(el: HTMLElement, name: string, status: string): void {
  el.dataset.status = status === 'ok' ? 'ok' : 'error';
  el.textContent = status === 'ok' ? `Used ${name}` : `${name} failed`;
}
