// One session as an operator sees it: what it is (agent, user, status, who handles it, usage, feedback), the
// actions (take over, hand back, cancel the running turn, terminate), the tool calls waiting for a decision
// (approve, deny), the live transcript and the reply box. The Session record is read again after each
// event of the stream, so everything shown follows what happened, whoever caused it.
import type { Session, SessionEvent } from '@parley/client';
import { Composer } from './composer.ts';
import type { ConsoleContext } from './console-app.ts';
import { announce, count, h, when } from './dom.ts';
import { Transcript } from './transcript.ts';

const TERMINAL = new Set(['turn.completed', 'turn.cancelled', 'turn.failed']);

export class SessionView {
  readonly id: string;
  readonly #ctx: ConsoleContext;
  readonly #abort = new AbortController();
  readonly #title: HTMLHeadingElement;
  readonly #facts = h('dl', { class: 'facts' });
  readonly #actions = h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' });
  readonly #approvals = h('div', { class: 'approvals' });
  readonly #transcript: Transcript;
  readonly #composer: Composer;
  #session: Session | null = null;
  /** The turn that started and has not ended, as the stream told it. */
  #openTurn: string | null = null;
  #refreshing: ReturnType<typeof setTimeout> | undefined;
  #confirming = false;
  #busy = false;

  constructor(pane: HTMLElement, ctx: ConsoleContext, id: string, back: () => void) {
    this.id = id;
    this.#ctx = ctx;
    this.#title = h('h2', { id: 'session-title', tabindex: '-1' }, `Session ${id}`);
    this.#transcript = new Transcript(ctx.client, id, this.#abort.signal, (e) => this.#onEvent(e));
    this.#composer = new Composer(ctx, id);
    pane.replaceChildren(
      h('button', { type: 'button', class: 'quiet back', onclick: back }, '← All sessions'),
      this.#title,
      this.#facts,
      this.#actions,
      this.#approvals,
      h('h3', { class: 'sr-only' }, 'Conversation'),
      this.#transcript.element,
      this.#composer.element,
    );
    this.#title.focus();
    void this.refresh();
    this.#transcript.follow().catch((err) => ctx.fail(err));
  }

  close(): void {
    this.#abort.abort();
    clearTimeout(this.#refreshing);
  }

  async refresh(): Promise<void> {
    try {
      this.#session = await this.#ctx.client.getSession(this.id, { signal: this.#abort.signal });
      this.#render();
    } catch (err) {
      this.#ctx.fail(err);
    }
  }

  #onEvent(e: SessionEvent): void {
    const turnId = 'turn_id' in e.data ? e.data.turn_id : null;
    if (TERMINAL.has(e.event)) {
      if (turnId === this.#openTurn) this.#openTurn = null;
    } else if (
      e.event === 'turn.started' ||
      e.event === 'tool.started' ||
      e.event === 'tool.approval_requested'
    ) {
      this.#openTurn = turnId;
    } else if (e.event === 'message.created' && e.data.message) {
      // A user's message opens a turn (not while people handle the session: no model answers it); a reply of the
      // model ends it, and an operator's message opens none.
      const m = e.data.message;
      if (m.role === 'user' && this.#session?.handled_by !== 'humans') this.#openTurn = turnId;
      else if (m.stop_reason !== null && turnId === this.#openTurn) this.#openTurn = null;
    }
    // Several events come together: one read of the session after them.
    clearTimeout(this.#refreshing);
    this.#refreshing = setTimeout(() => void this.refresh(), 150);
  }

  /** Runs an action with the buttons disabled, then reads the session again. */
  async #act(what: string, action: () => Promise<unknown>): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    this.#render();
    try {
      await action();
      announce(what);
    } catch (err) {
      this.#ctx.fail(err);
    } finally {
      this.#busy = false;
      this.#confirming = false;
      await this.refresh();
    }
  }

  #render(): void {
    const s = this.#session;
    if (!s) return;
    const active = s.status === 'active';
    const fact = (term: string, value: string | Node) => [h('dt', {}, term), h('dd', {}, value)];
    const usage = s.usage;
    this.#facts.replaceChildren(
      ...fact('Agent', s.agent_id),
      ...fact('User', s.user ? (s.user.reference ?? s.user.id) : 'anonymous'),
      ...fact('Status', s.status + (s.close_reason ? ` (${s.close_reason})` : '')),
      ...fact(
        'Handled by',
        s.handled_by === 'humans'
          ? `people${s.handoff?.reason ? `: ${s.handoff.reason}` : ''} (asked by the ${s.handoff?.by ?? 'integrator'})`
          : 'the agent',
      ),
      ...fact('Messages', `${s.messages_count}, last ${when(s.last_message_at)}`),
      ...fact(
        'Usage',
        usage
          ? `${count(usage.turns, 'turn')}, ${usage.input_tokens} in / ${usage.output_tokens} out tokens, $${usage.cost_usd.toFixed(4)}`
          : '—',
      ),
      ...fact(
        'Feedback',
        s.feedback
          ? `${s.feedback.score}/10${s.feedback.comment ? `: “${s.feedback.comment}”` : ''}`
          : 'none',
      ),
    );
    this.#renderActions(s, active);
    this.#renderApprovals(s, active);
    this.#composer.enable(active && s.handled_by === 'humans');
  }

  #renderActions(s: Session, active: boolean): void {
    const c = this.#ctx.client;
    const button = (label: string, onclick: () => void, enabled: boolean, cls = '') =>
      h('button', { type: 'button', class: cls, disabled: !enabled || this.#busy, onclick }, label);
    const focusedLabel = this.#actions.contains(document.activeElement)
      ? document.activeElement?.textContent
      : null;
    const turn = this.#openTurn ?? s.pending_approvals[0]?.turn_id ?? null;
    const buttons = [
      s.handled_by === 'agent'
        ? button(
            'Take over',
            () =>
              void this.#act('You handle this conversation now.', () =>
                c.handoff(this.id, 'taken over in the console'),
              ),
            active,
          )
        : button(
            'Hand back',
            () => void this.#act('Handed back to the agent.', () => c.handback(this.id)),
            active,
          ),
      button(
        'Cancel turn',
        () => turn && void this.#act('The turn was cancelled.', () => c.cancelTurn(this.id, turn)),
        active && turn !== null,
      ),
      ...(this.#confirming
        ? [
            button(
              'Confirm terminate',
              () =>
                void this.#act('The session is closed.', () =>
                  c.terminateSession(this.id, 'terminated in the console'),
                ),
              active,
              'danger',
            ),
            button(
              'Keep it open',
              () => {
                this.#confirming = false;
                this.#render();
              },
              true,
              'quiet',
            ),
          ]
        : [
            button(
              'Terminate…',
              () => {
                this.#confirming = true;
                this.#render();
                this.#actions.querySelector<HTMLButtonElement>('.danger')?.focus();
              },
              active,
              'danger-outline',
            ),
          ]),
    ];
    this.#actions.replaceChildren(...buttons);
    // Re-rendering must not drop the keyboard's place: the button of the same label takes the focus back.
    if (focusedLabel)
      [...this.#actions.querySelectorAll('button')]
        .find((b) => b.textContent === focusedLabel && !b.disabled)
        ?.focus();
  }

  #renderApprovals(s: Session, active: boolean): void {
    if (s.pending_approvals.length === 0) {
      this.#approvals.replaceChildren();
      return;
    }
    const c = this.#ctx.client;
    this.#approvals.replaceChildren(
      h('h3', {}, 'Waiting for a decision'),
      h(
        'ul',
        {},
        ...s.pending_approvals.map((a) =>
          h(
            'li',
            { class: 'approval' },
            h('p', {}, h('strong', {}, a.tool), ` · approver: ${a.approver} · until ${when(a.expires_at)}`),
            h('pre', {}, JSON.stringify(a.input, null, 2)),
            h(
              'div',
              { class: 'row' },
              h(
                'button',
                {
                  type: 'button',
                  disabled: !active || this.#busy,
                  'aria-label': `Approve ${a.tool}`,
                  onclick: () =>
                    void this.#act(`${a.tool} approved.`, () => c.approve(this.id, a.turn_id, [a.call_id])),
                },
                'Approve',
              ),
              h(
                'button',
                {
                  type: 'button',
                  class: 'danger-outline',
                  disabled: !active || this.#busy,
                  'aria-label': `Deny ${a.tool}`,
                  onclick: () =>
                    void this.#act(`${a.tool} denied.`, () =>
                      c.deny(this.id, a.turn_id, [a.call_id], 'denied in the console'),
                    ),
                },
                'Deny',
              ),
            ),
          ),
        ),
      ),
    );
  }
}
