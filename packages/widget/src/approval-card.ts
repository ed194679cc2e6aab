// The approval cards of <parley-chat>: a tool call that waits for the end user's decision, shown as the tool's
// name and a readable summary of what it would be sent (key: value lines, long values cut), with Approve and
// Deny buttons. The element sends the decision; while one is on its way every card's buttons are disabled, and
// a decided card says what was decided.
import type { Approval } from '@parley/client';
import type { Strings } from './strings.ts';
import { h } from './view.ts';

/** At most this many lines of an input are shown, each value cut at VALUE_CHARS characters. */
const MAX_LINES = 6;
const VALUE_CHARS = 80;

const cut = (text: string, max = VALUE_CHARS) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** One value as a person reads it: text as it is, other values as compact JSON, cut short. */
function valueText(value: unknown): string {
  if (typeof value === 'string') return cut(value);
  if (value === null || value === undefined) return '—';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  try {
    return cut(JSON.stringify(value));
  } catch {
    return cut(String(value));
  }
}

/** A call's input as `[label, value]` lines: an object's fields, or the one value it is. */
export function summarize(input: unknown, more: (count: number) => string): [string, string][] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return input === undefined ? [] : [['input', valueText(input)]];
  }
  const entries = Object.entries(input as Record<string, unknown>);
  const lines = entries
    .slice(0, MAX_LINES)
    .map(([key, value]): [string, string] => [cut(key, 40), valueText(value)]);
  if (entries.length > MAX_LINES) lines.push(['…', more(entries.length - MAX_LINES)]);
  return lines;
}

/** `refund_order` or `crm__delete_contact` (an MCP tool) as words. */
const toolLabel = (tool: string) => tool.replace(/__/g, ' › ').replace(/_/g, ' ');

export type Decide = (approval: Approval, approved: boolean) => void;

interface Card {
  el: HTMLElement;
  buttons: HTMLButtonElement[];
}

/** The cards of the paused turn, by call id, in the log after the turn's messages. */
export class ApprovalCards {
  readonly #cards = new Map<string, Card>();
  readonly #decide: Decide;
  readonly #strings: Strings;

  constructor(strings: Strings, decide: Decide) {
    this.#strings = strings;
    this.#decide = decide;
  }

  /** The calls of the cards still waiting for the user. */
  shown(): string[] {
    return [...this.#cards].flatMap(([id, card]) => (card.el.dataset.state === 'waiting' ? [id] : []));
  }

  /**
   * Shows the calls that wait (those already shown keep their card); a card of a call no longer listed and
   * not decided here is taken away (decided elsewhere, or expired).
   */
  show(approvals: readonly Approval[], log: HTMLElement): void {
    const listed = new Set(approvals.map((a) => a.call_id));
    for (const [id, card] of this.#cards) {
      if (!listed.has(id) && card.el.dataset.state === 'waiting') {
        card.el.remove();
        this.#cards.delete(id);
      }
    }
    for (const approval of approvals) {
      if (this.#cards.has(approval.call_id)) continue;
      const card = this.#card(approval);
      this.#cards.set(approval.call_id, card);
      log.append(card.el);
    }
    // The focus stays where it is (the user may be typing): the log, a live region, announces the card.
  }

  /** A decision is on its way (or came back): every button off while it is, the waiting ones back after. */
  busy(on: boolean): void {
    for (const card of this.#cards.values()) {
      for (const b of card.buttons) b.disabled = on || card.el.dataset.state !== 'waiting';
      card.el.toggleAttribute('aria-busy', on);
    }
  }

  /** Marks the call decided (its buttons go, a line says what was decided). */
  decided(callId: string, approved: boolean): void {
    const card = this.#cards.get(callId);
    if (card)
      this.#settle(card, approved ? 'approved' : 'denied', this.#strings.t(approved ? 'approved' : 'denied'));
  }

  /**
   * The turn ended (or the widget restarts, `remove`): the cards stay in the log as a record, and a call still
   * waiting (the turn was stopped or ended) says it did not run.
   */
  clear(remove = false): void {
    for (const card of this.#cards.values()) {
      if (remove) card.el.remove();
      else if (card.el.dataset.state === 'waiting') this.#settle(card, 'ended', this.#strings.t('notRun'));
    }
    this.#cards.clear();
  }

  #settle(card: Card, state: string, outcome: string): void {
    card.el.dataset.state = state;
    card.el.removeAttribute('aria-busy');
    for (const b of card.buttons) b.remove();
    card.buttons = [];
    card.el.append(h('p', { class: 'outcome', part: 'approval-outcome' }, outcome));
  }

  #card(approval: Approval): Card {
    const name = toolLabel(approval.tool);
    const titleId = `parley-approval-${approval.call_id}`;
    const t = this.#strings;
    const lines = summarize(approval.input, (count) => t.t('more', { count }));
    const button = (approved: boolean) =>
      h(
        'button',
        {
          type: 'button',
          class: approved ? 'primary' : undefined,
          part: `${approved ? 'approve' : 'deny'}-button`,
          'aria-label': t.t(approved ? 'approveTool' : 'denyTool', { name }),
          onclick: () => this.#decide(approval, approved),
        },
        t.t(approved ? 'approve' : 'deny'),
      );
    const approve = button(true);
    const deny = button(false);
    // The tool's name is strong wherever the string puts it.
    const [before = '', after = ''] = t.t('allow').split('{name}');
    const el = h(
      'div',
      {
        class: 'approval',
        part: 'approval',
        role: 'group',
        'aria-labelledby': titleId,
        'data-state': 'waiting',
      },
      h('p', { id: titleId }, before, h('strong', {}, name), after),
      lines.length === 0
        ? null
        : h(
            'dl',
            { part: 'approval-input' },
            ...lines.flatMap(([key, value]) => [h('dt', {}, key), h('dd', {}, value)]),
          ),
      h('div', { class: 'row' }, approve, deny),
    );
    el.dataset.callId = approval.call_id;
    return { el, buttons: [approve, deny] };
  }
}
