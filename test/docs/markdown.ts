/**
 * Reading the user docs as data, for the tests that keep them true: which files are docs, their ```ts
 * snippets with the marker before each, their tables (under the heading they sit in) and their links.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** README.md, CONTRIBUTING.md, CHANGELOG.md and every docs/**\/*.md, as paths relative to the repo root. */
export function docFiles(): string[] {
  const walk = (folder: string): string[] =>
    readdirSync(join(repoRoot, folder), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? walk(join(folder, entry.name))
        : entry.name.endsWith('.md')
          ? [join(folder, entry.name)]
          : [],
    );
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', ...walk('docs').sort()];
}

export const readDoc = (file: string): string => readFileSync(join(repoRoot, file), 'utf8');

export interface Snippet {
  index: number;
  /** 1-based line of the opening fence. */
  line: number;
  marker: 'run' | 'not run' | null;
  code: string;
}

/** The ```ts blocks of a Markdown text, each with the snippet marker on the line before its fence. */
export function extractTsSnippets(markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (lines[index]?.trim() !== '```ts') continue;
    const markerMatch = /^<!-- snippet: (run|not run) -->$/.exec(lines[index - 1]?.trim() ?? '');
    const body: string[] = [];
    let end = index + 1;
    for (; end < lines.length && lines[end]?.trim() !== '```'; end++) body.push(lines[end] ?? '');
    snippets.push({
      index: snippets.length,
      line: index + 1,
      marker: (markerMatch?.[1] as Snippet['marker'] | undefined) ?? null,
      code: body.join('\n'),
    });
    index = end;
  }
  return snippets;
}

export interface TableRow {
  /** The cells, trimmed, `\|` unescaped; keyed by the header's cell text. */
  cells: Record<string, string>;
  /** 1-based line of the row. */
  line: number;
  /** The nearest `##` and `###` headings above the table (`''` when none). */
  section: string;
  subsection: string;
}

const splitRow = (line: string): string[] =>
  line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replaceAll('\\|', '|'));

/** Every row of every pipe table outside code fences. */
export function extractTables(markdown: string): TableRow[] {
  const lines = markdown.split('\n');
  const rows: TableRow[] = [];
  let [section, subsection, inFence] = ['', '', false];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    if (line.startsWith('```')) inFence = !inFence;
    if (inFence) continue;
    if (line.startsWith('## ')) [section, subsection] = [line.slice(3).trim(), ''];
    if (line.startsWith('### ')) subsection = line.slice(4).trim();
    if (!line.startsWith('|') || !/^\|[\s|:-]+\|$/.test(lines[index + 1]?.trim() ?? '')) continue;
    const header = splitRow(line);
    for (index += 2; index < lines.length && lines[index]?.startsWith('|'); index++) {
      const values = splitRow(lines[index] ?? '');
      rows.push({
        cells: Object.fromEntries(header.map((name, column) => [name, values[column] ?? ''])),
        line: index + 1,
        section,
        subsection,
      });
    }
    index--;
  }
  return rows;
}

/** The text of a cell that is exactly one code span (`` `x` `` → `x`), else null. */
export function codeSpan(cell: string): string | null {
  return /^`([^`]+)`$/.exec(cell)?.[1] ?? null;
}

export interface Link {
  target: string;
  line: number;
}

/** Inline links and images outside code fences and code spans. */
export function extractLinks(markdown: string): Link[] {
  const links: Link[] = [];
  let inFence = false;
  markdown.split('\n').forEach((line, index) => {
    if (line.startsWith('```')) inFence = !inFence;
    if (inFence) return;
    for (const match of line.replace(/`[^`]*`/g, '').matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g))
      links.push({ target: match[1] ?? '', line: index + 1 });
  });
  return links;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a Markdown file offers, one per heading. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inFence = !inFence;
    const heading = !inFence ? /^#{1,6} (.*)$/.exec(line)?.[1] : undefined;
    if (heading !== undefined) anchors.add(headingAnchor(heading));
  }
  return anchors;
}

export const relativeToRoot = (path: string): string => relative(repoRoot, path);
