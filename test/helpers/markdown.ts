// Reading the project's Markdown as the docs tests need it: which files are documentation, their text outside
// code (fenced blocks and inline code), their headings as GitHub turns them into anchors, their links, and
// the rows of a table.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { projectRoot } from '../../support/processes.ts';

/** README.md, every Markdown file under docs/, and each package's README, relative to the project root. */
export function documentationFiles(root = projectRoot): string[] {
  const underDocs = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return underDocs(path);
      return entry.name.endsWith('.md') ? [relative(root, path)] : [];
    });
  const packages = readdirSync(join(root, 'packages'))
    .map((name) => join('packages', name, 'README.md'))
    .filter((path) => existsSync(join(root, path)));
  return ['README.md', ...underDocs(join(root, 'docs')), ...packages].sort();
}

export function readDoc(path: string, root = projectRoot): string {
  return readFileSync(join(root, path), 'utf8');
}

/** The lines of `markdown` outside fenced code blocks (```, ~~~), blank where a fence was. */
export function proseLines(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split('\n').map((line) => {
    const opening = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null && opening) {
      fence = opening;
      return '';
    }
    if (fence !== null) {
      if (line.trim().startsWith(fence) && line.trim().replaceAll(fence[0] ?? '`', '') === '') fence = null;
      return '';
    }
    return line;
  });
}

/** Text outside code: fenced blocks and inline code spans (which may go on over a line end) removed. */
export function prose(markdown: string): string {
  return proseLines(markdown)
    .join('\n')
    .replace(/(`+)(?:(?!\n\n)[^`])*?\1/g, '');
}

/**
 * The anchor GitHub gives a heading: inline markup dropped, lower case, every character but letters, digits,
 * `_`, `-` and spaces removed, spaces as `-`.
 */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replaceAll(' ', '-');
}

/** Every anchor the headings of `markdown` define; a repeated heading gets `-1`, `-2`, … as on GitHub. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

/** The targets of the inline links and images of `markdown` outside code. */
export function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? '');
}

/** The cells of each row of the first table whose header row matches `header` (the separator row left out). */
export function tableRows(markdown: string, header: RegExp): string[][] {
  const lines = proseLines(markdown);
  const start = lines.findIndex((line) => header.test(line));
  if (start < 0) return [];
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}
