// A small Markdown renderer for the agent's replies that builds DOM nodes and never parses HTML: bold,
// italic, inline code, fenced code blocks, bulleted and numbered lists, paragraphs and links. Every piece of
// text is a text node, so `<script>` or `<img onerror>` in a reply is shown as the characters it is. A link is
// made only for http:, https: and mailto: addresses (anything else, `javascript:` included, stays text), and
// opens in a new tab without access to this page. Some 2 KB minified, where a full renderer and a sanitiser
// would be tens.
import { h } from './view.ts';

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

/** Inline Markdown: `code`, **bold**, *italic* or _italic_, [text](url), bare http(s) addresses. */
const INLINE =
  /`([^`\n]+)`|\*\*([^\n]+?)\*\*|__([^\n]+?)__|\*([^*\s][^*\n]*?)\*|(?<![\w])_([^_\s][^_\n]*?)_(?![\w])|\[([^\]\n]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

function link(href: string, text: Node[]): Node[] {
  if (!SAFE_URL.test(href)) return text;
  const a = h('a', { href, target: '_blank', rel: 'noopener noreferrer', part: 'link' });
  a.append(...text);
  return [a];
}

/**
 * The longest line read as inline Markdown: an unclosed `**` or `[x](` makes the pattern scan on to the line's
 * end from each one, so a longer line (a reply of one 100 KB line would take seconds) is shown as plain text.
 */
const MAX_INLINE = 4000;

/** The nodes of one line of inline Markdown. */
export function inline(text: string): Node[] {
  if (text.length > MAX_INLINE) return [document.createTextNode(text)];
  const out: Node[] = [];
  let at = 0;
  for (const m of text.matchAll(INLINE)) {
    const index = m.index ?? 0;
    if (index > at) out.push(document.createTextNode(text.slice(at, index)));
    at = index + m[0].length;
    const [whole, code, bold, bold2, em, em2, label, href, bare] = m;
    if (code !== undefined) out.push(h('code', {}, code));
    else if (bold !== undefined || bold2 !== undefined)
      out.push(h('strong', {}, ...inline(bold ?? bold2 ?? '')));
    else if (em !== undefined || em2 !== undefined) out.push(h('em', {}, ...inline(em ?? em2 ?? '')));
    else if (label !== undefined && href !== undefined) {
      const shown = link(href, inline(label));
      // A refused address keeps its Markdown, as text: the reader sees what was written.
      out.push(...(shown[0] instanceof HTMLAnchorElement ? shown : [document.createTextNode(whole)]));
    } else if (bare !== undefined) out.push(...link(bare, [document.createTextNode(bare)]));
  }
  if (at < text.length) out.push(document.createTextNode(text.slice(at)));
  return out;
}

const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*(\d{1,9})[.)]\s+(.*)$/;
const FENCE = /^\s*```/;

/** The nodes of a whole reply: blocks of paragraphs, lists and code. */
export function markdown(text: string): Node[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Node[] = [];
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length === 0) return;
    const p = h('p');
    paragraph.forEach((line, i) => {
      if (i > 0) p.append(h('br'));
      p.append(...inline(line));
    });
    blocks.push(p);
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (FENCE.test(line)) {
      flush();
      const code: string[] = [];
      while (++i < lines.length && !FENCE.test(lines[i] ?? '')) code.push(lines[i] ?? '');
      blocks.push(h('pre', { part: 'code-block' }, h('code', {}, code.join('\n'))));
      continue;
    }
    const bullet = BULLET.exec(line);
    const numbered = bullet ? null : NUMBERED.exec(line);
    if (bullet || numbered) {
      flush();
      const ordered = numbered !== null;
      const list = ordered ? h('ol') : h('ul');
      if (numbered?.[1] && numbered[1] !== '1') list.setAttribute('start', numbered[1]);
      for (; i < lines.length; i++) {
        const item = ordered ? NUMBERED.exec(lines[i] ?? '') : BULLET.exec(lines[i] ?? '');
        if (!item) break;
        list.append(h('li', {}, ...inline((ordered ? item[2] : item[1]) ?? '')));
      }
      i--;
      blocks.push(list);
      continue;
    }
    if (line.trim() === '') flush();
    else paragraph.push(line);
  }
  flush();
  return blocks;
}
