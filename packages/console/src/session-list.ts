// The session list: filters (status, agent, who handles it, a waiting approval, the user's reference), the
// newest sessions first and "Load more" by cursor. It stays current by reading its first page again every
// few seconds while the tab is visible (a list has no event stream of its own; the open session follows
// its stream), keeping the older pages already loaded.
import type { Session, SessionListQuery } from '@parley/client';
import type { ConsoleContext } from './console-app.ts';
import { field, h, select, when } from './dom.ts';

/** How often the first page is read again. */
export const LIST_REFRESH_MS = 4000;
const PAGE = 20;

export class SessionList {
  readonly #ctx: ConsoleContext;
  readonly #open: (id: string) => void;
  readonly #items = h('ul', { class: 'sessions', 'aria-label': 'Sessions, newest first' });
  readonly #more = h('button', { type: 'button', class: 'quiet', hidden: true }, 'Load more');
  readonly #count = h('p', { class: 'count', 'aria-live': 'polite' });
  readonly #form: HTMLFormElement;
  #sessions: Session[] = [];
  #cursor: string | null = null;
  #selected: string | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;
  #generation = 0;

  constructor(pane: HTMLElement, ctx: ConsoleContext, open: (id: string) => void) {
    this.#ctx = ctx;
    this.#open = open;
    const agent = select('agent_id', [['', 'Any agent']]);
    this.#form = h(
      'form',
      { class: 'filters', 'aria-label': 'Filter sessions' },
      field(
        'Status',
        select(
          'status',
          [
            ['', 'Any status'],
            ['active', 'Active'],
            ['closed', 'Closed'],
            ['expired', 'Expired'],
          ],
          'active',
        ),
      ),
      field('Agent', agent),
      field(
        'Handled by',
        select('handled_by', [
          ['', 'Agent or people'],
          ['agent', 'The agent'],
          ['humans', 'People'],
        ]),
      ),
      field(
        'Approvals',
        select('pending_approval', [
          ['', 'Any'],
          ['true', 'Waiting for a decision'],
          ['false', 'None waiting'],
        ]),
      ),
      field('User reference', h('input', { type: 'search', name: 'user_reference', autocomplete: 'off' })),
      h('button', { type: 'submit' }, 'Apply filters'),
    );
    this.#form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.reload();
    });
    this.#form.addEventListener('change', (e) => {
      if (e.target instanceof HTMLSelectElement) void this.reload();
    });
    this.#more.addEventListener('click', () => void this.#loadMore());
    pane.replaceChildren(
      h('h2', { id: 'sessions-title' }, 'Sessions'),
      this.#form,
      this.#count,
      this.#items,
      this.#more,
    );
    void ctx.client.agents().then(
      (agents) => {
        for (const a of agents)
          agent.append(h('option', { value: a.id }, a.name ? `${a.name} (${a.id})` : a.id));
      },
      (err) => ctx.fail(err),
    );
    void this.reload();
    this.#timer = setInterval(() => {
      if (document.visibilityState === 'visible') void this.#refresh();
    }, LIST_REFRESH_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#generation++;
  }

  /** Marks the open session in the list (aria-current). */
  select(id: string | null): void {
    this.#selected = id;
    for (const button of this.#items.querySelectorAll('button')) {
      if (button.dataset.id === id) button.setAttribute('aria-current', 'true');
      else button.removeAttribute('aria-current');
    }
  }

  focusSelected(): void {
    const button = [...this.#items.querySelectorAll('button')].find((b) => b.dataset.id === this.#selected);
    button?.focus();
  }

  #query(): SessionListQuery {
    const data = new FormData(this.#form);
    const text = (name: string) => String(data.get(name) ?? '').trim() || undefined;
    const status = text('status') as SessionListQuery['status'];
    const handled = text('handled_by') as SessionListQuery['handled_by'];
    const pending = text('pending_approval');
    return {
      limit: PAGE,
      ...(status ? { status } : {}),
      ...(text('agent_id') ? { agent_id: text('agent_id') } : {}),
      ...(handled ? { handled_by: handled } : {}),
      ...(pending ? { pending_approval: pending === 'true' } : {}),
      ...(text('user_reference') ? { user_reference: text('user_reference') } : {}),
    };
  }

  /** The first page again, with the filters as they are now. */
  async reload(): Promise<void> {
    const generation = ++this.#generation;
    try {
      const page = await this.#ctx.client.listSessions(this.#query());
      if (generation !== this.#generation) return;
      this.#sessions = page.items;
      this.#cursor = page.next_cursor;
      this.#render();
    } catch (err) {
      this.#ctx.fail(err);
    }
  }

  async #loadMore(): Promise<void> {
    if (!this.#cursor) return;
    const generation = ++this.#generation;
    try {
      const page = await this.#ctx.client.listSessions({ ...this.#query(), cursor: this.#cursor });
      if (generation !== this.#generation) return;
      const first = page.items[0]?.id;
      this.#sessions = [...this.#sessions, ...page.items];
      this.#cursor = page.next_cursor;
      this.#render();
      // Focus moves to the first session loaded, where reading goes on.
      [...this.#items.querySelectorAll('button')].find((b) => b.dataset.id === first)?.focus();
    } catch (err) {
      this.#ctx.fail(err);
    }
  }

  /** The first page read again: its sessions replace theirs, the older pages loaded stay. */
  async #refresh(): Promise<void> {
    const generation = this.#generation;
    try {
      const page = await this.#ctx.client.listSessions(this.#query());
      if (generation !== this.#generation) return;
      const fresh = new Set(page.items.map((s) => s.id));
      const last = page.items.at(-1);
      // Those loaded after the page's last, by time or, at the same time, by place in the list (sessions made
      // in the same millisecond): each shown once, and none dropped while the cursor is already past them.
      const lastAt = last ? this.#sessions.findIndex((s) => s.id === last.id) : -1;
      const older = last
        ? this.#sessions.filter(
            (s, i) =>
              !fresh.has(s.id) &&
              (s.created_at < last.created_at || (s.created_at === last.created_at && i > lastAt)),
          )
        : [];
      this.#sessions = [...page.items, ...older];
      if (older.length === 0) this.#cursor = page.next_cursor;
      this.#render();
    } catch (err) {
      this.#ctx.fail(err);
    }
  }

  #render(): void {
    const focused =
      document.activeElement instanceof HTMLElement ? document.activeElement.dataset.id : undefined;
    this.#items.replaceChildren(...this.#sessions.map((s) => this.#item(s)));
    this.#more.hidden = this.#cursor === null;
    const n = this.#sessions.length;
    this.#count.textContent = n === 0 ? 'No sessions match.' : `${n} session${n === 1 ? '' : 's'} shown.`;
    this.select(this.#selected);
    // A refresh must not take the keyboard's place away.
    if (focused) [...this.#items.querySelectorAll('button')].find((b) => b.dataset.id === focused)?.focus();
  }

  #item(s: Session): HTMLLIElement {
    const badges = [
      s.status !== 'active' ? h('span', { class: `badge ${s.status}` }, s.status) : null,
      s.handled_by === 'humans' ? h('span', { class: 'badge humans' }, 'people') : null,
      s.pending_approvals.length > 0
        ? h('span', { class: 'badge approval' }, `${s.pending_approvals.length} to decide`)
        : null,
      s.feedback ? h('span', { class: 'badge' }, `feedback ${s.feedback.score}/10`) : null,
    ];
    const who = s.user?.reference ?? s.user?.id ?? 'anonymous';
    return h(
      'li',
      {},
      h(
        'button',
        { type: 'button', class: 'session', 'data-id': s.id, onclick: () => this.#open(s.id) },
        h('span', { class: 'line' }, h('strong', {}, s.agent_id), ' · ', who),
        h(
          'span',
          { class: 'line meta' },
          `${s.messages_count} message${s.messages_count === 1 ? '' : 's'} · last ${when(s.last_message_at ?? s.created_at)}`,
        ),
        h('span', { class: 'line badges' }, ...badges),
      ),
    );
  }
}
