// The open session's transcript, built from its conversation event stream (GET …/events, read with fetch by
// the client's sessionEvents, since EventSource cannot send the API key): the stream starts at the
// session's first event, so one reader both catches up and follows, reconnecting after its last id
// (Last-Event-ID) when the connection drops. Messages show who wrote them; tool calls, approvals, handoffs
// and the session's end are shown as steps. A message arriving after the view opened is announced.
import type { Message, ParleyClient, SessionEvent } from '@parley/client';
import { announce, h, when } from './dom.ts';

const textOf = (m: Message) =>
  m.content.map((b) => (b.type === 'text' ? b.text : b.type === 'image' ? '[image]' : '[file]')).join('\n');

const json = (value: unknown) => {
  const text = JSON.stringify(value);
  return text && text.length > 400 ? `${text.slice(0, 400)}…` : (text ?? '');
};

export class Transcript {
  readonly #list = h('ol', { class: 'entries' });
  /** A log (a polite live region): what is appended is read out. */
  readonly element = h('div', { class: 'transcript', role: 'log', 'aria-label': 'Conversation' }, this.#list);
  readonly #client: ParleyClient;
  readonly #id: string;
  readonly #signal: AbortSignal;
  readonly #onEvent: (event: SessionEvent) => void;
  readonly #openedAt = new Date().toISOString();
  readonly #shown = new Set<string>();

  constructor(client: ParleyClient, id: string, signal: AbortSignal, onEvent: (event: SessionEvent) => void) {
    this.#client = client;
    this.#id = id;
    this.#signal = signal;
    this.#onEvent = onEvent;
  }

  /** Follows the stream until the session ends or the view closes; a refusal is thrown. */
  async follow(): Promise<void> {
    for await (const event of this.#client.sessionEvents(this.#id, { signal: this.#signal })) {
      this.#show(event);
      this.#onEvent(event);
    }
  }

  #append(node: HTMLElement): void {
    const atEnd = this.element.scrollHeight - this.element.scrollTop - this.element.clientHeight < 40;
    this.#list.append(node);
    if (atEnd) this.element.scrollTop = this.element.scrollHeight;
  }

  #step(kind: string, text: string, detail?: string): void {
    this.#append(
      h('li', { class: `step ${kind}` }, h('span', {}, text), detail ? h('code', {}, detail) : null),
    );
  }

  #message(m: Message): void {
    if (this.#shown.has(m.id)) return;
    this.#shown.add(m.id);
    const who = m.author ? `${m.author.name} (operator)` : m.role === 'user' ? 'User' : 'Agent';
    const kind = m.author ? 'operator' : m.role;
    const stopped = m.stop_reason && m.stop_reason !== 'end' ? ` · ${m.stop_reason}` : '';
    this.#append(
      h(
        'li',
        { class: `msg ${kind}`, 'data-id': m.id },
        h('span', { class: 'who' }, who, h('span', { class: 'time' }, ` · ${when(m.created_at)}${stopped}`)),
        h('p', { class: 'text' }, textOf(m)),
      ),
    );
    if (m.created_at >= this.#openedAt) announce(`${who}: ${textOf(m)}`);
  }

  #show(e: SessionEvent): void {
    switch (e.event) {
      case 'message.created':
        if (e.data.message) this.#message(e.data.message);
        return;
      case 'message.completed':
        this.#message(e.data.message);
        return;
      case 'tool.started':
        this.#step('tool', `Tool ${e.data.name} called`, json(e.data.input));
        return;
      case 'tool.completed':
        this.#step(
          e.data.status === 'ok' ? 'tool' : 'tool failed',
          `Tool ${e.data.name ?? 'call'} ${e.data.status === 'ok' ? 'answered' : 'failed'}`,
          json(e.data.output),
        );
        return;
      case 'tool.approval_requested':
        this.#step(
          'approval',
          `${e.data.tool} waits for the ${e.data.approver}'s approval`,
          json(e.data.input),
        );
        return;
      case 'turn.cancelled':
        this.#step('notice', 'The turn was cancelled');
        return;
      case 'turn.failed':
        this.#step('notice failed', `The turn failed: ${e.data.error.message}`);
        return;
      case 'session.handoff_requested': {
        const { by, reason } = e.data.handoff;
        this.#step('notice', `Handed to people (asked by the ${by})${reason ? `: ${reason}` : ''}`);
        announce('People handle this conversation now.');
        return;
      }
      case 'session.handed_back':
        this.#step('notice', 'Handed back to the agent');
        announce('The agent handles this conversation again.');
        return;
      case 'session.closed':
      case 'session.expired':
        this.#step('notice', `The session ${e.event === 'session.closed' ? 'was closed' : 'expired'}`);
        return;
      default:
        return;
    }
  }
}
