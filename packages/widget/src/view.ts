// DOM building for the widget: a tiny element helper, message bubbles (text, images, file chips, the
// operator's name, the time) and tool steps. Text is always set as text, never as HTML, so nothing a model or
// a user writes can inject markup; an agent's text is Markdown made into nodes (markdown.ts).
import { markdown } from './markdown.ts';
import type { Strings } from './strings.ts';

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
  /** The operator who wrote an assistant message (people handle the conversation). */
  author?: { name: string } | null;
  created_at?: string;
}

/** What a bubble is drawn with: the files the page knows and the widget's strings. */
export interface Shown {
  files: ReadonlyMap<string, KnownFile>;
  strings: Strings;
}

export function fileChip(name: string, extra?: Node): HTMLSpanElement {
  return h('span', { class: 'chip', part: 'file-chip' }, name, extra);
}

function blockNode(block: Block, role: ShownMessage['role'], { files, strings }: Shown): Node {
  if (block.type === 'text') {
    if (role === 'user') return h('span', { class: 'text', part: 'text' }, block.text);
    return h('div', { class: 'text md', part: 'text' }, ...markdown(block.text));
  }
  const known = files.get(block.file_id);
  if (block.type === 'image' && known?.url) {
    return h('img', { part: 'image', src: known.url, alt: known.name });
  }
  // The public family serves no file content, so an image from an earlier visit is shown by its name.
  return fileChip(known?.name ?? strings.t(block.type === 'image' ? 'image' : 'file'));
}

/** The time a message was stored, as the reader's clock says it (hours and minutes). */
function timeNode(iso: string | undefined): Node | null {
  const at = iso ? new Date(iso) : null;
  if (!at || Number.isNaN(at.getTime())) return null;
  const shown = at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return h('time', { class: 'time', part: 'time', datetime: at.toISOString() }, shown);
}

/** A message bubble; an assistant bubble being streamed has one (empty) text span and `data-streaming`. */
export function messageNode(message: ShownMessage, shown: Shown): HTMLDivElement {
  const el = h('div', { class: `msg ${message.role}`, part: `message message-${message.role}` });
  fillMessage(el, message, shown);
  return el;
}

/** Sets a bubble's content: who wrote it (read aloud, or shown for an operator), its blocks, its time. */
export function fillMessage(el: HTMLElement, message: ShownMessage, shown: Shown): void {
  if (message.id) el.dataset.id = message.id;
  const { strings } = shown;
  const author = message.author?.name;
  const who = author
    ? h('span', { class: 'author', part: 'author' }, author)
    : h('span', { class: 'sr-only' }, `${strings.t(message.role === 'user' ? 'you' : 'agent')}: `);
  el.toggleAttribute('data-operator', Boolean(author));
  el.replaceChildren(who, ...message.content.map((b) => blockNode(b, message.role, shown)));
  if (message.content.length === 0) el.append(h('span', { class: 'text', part: 'text' }));
  const time = timeNode(message.created_at);
  if (time) el.append(time);
}

/** A tool step of the turn: its name, then whether it succeeded. */
export function toolNode(name: string, strings: Strings): HTMLDivElement {
  const text = strings.t('toolRunning', { name });
  return h('div', { class: 'tool', part: 'tool', 'data-status': 'running' }, text);
}

export function settleTool(el: HTMLElement, name: string, status: string, strings: Strings): void {
  el.dataset.status = status === 'ok' ? 'ok' : 'error';
  el.textContent = strings.t(status === 'ok' ? 'toolDone' : 'toolFailed', { name });
}
