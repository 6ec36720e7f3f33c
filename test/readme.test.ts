/**
 * The front door as a new user reads it: the README's quick start leads straight into the
 * walk-through, the pointers into the README from scripts name sections that exist, the
 * TypeScript snippets of both READMEs compile under `strict` against the client's sources,
 * and the client README's count of credential modes is its list's.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from './support/process.js';

const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const clientDir = path.join(ROOT, 'clients', 'typescript');
const clientReadme = fs.readFileSync(path.join(clientDir, 'README.md'), 'utf8');

/** The text of the section that starts at `heading` (a whole line), up to the next heading of its level or above. */
function section(text: string, heading: string): string {
  const lines = text.split('\n');
  const start = lines.indexOf(heading);
  assert.ok(start >= 0, `no heading "${heading}"`);
  const level = /^#+/.exec(heading)![0].length;
  let end = start + 1;
  let fenced = false;
  for (; end < lines.length; end++) {
    if (lines[end].startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^(#+) /.exec(lines[end]);
    if (m && m[1].length <= level) break;
  }
  return lines.slice(start + 1, end).join('\n');
}

/** The headings of a markdown text, outside code blocks, without their #s. */
function headings(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    else if (!fenced && /^#+ /.test(line)) out.push(line.replace(/^#+ /, ''));
  }
  return out;
}

/** The bodies of the ```ts blocks of a markdown text, in order. */
function tsBlocks(text: string): string[] {
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
}

/**
 * Type-checks `source` as an application's module under `strict`, `@collab-backend/client`
 * resolving to the client's sources; returns tsc's diagnostics as text ('' when it compiles).
 */
function typeCheck(source: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-readme-ts-'));
  try {
    const file = path.join(dir, 'snippet.ts');
    fs.writeFileSync(file, source);
    const options: ts.CompilerOptions = {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: ['node'],
      typeRoots: [path.join(ROOT, 'node_modules', '@types')],
      skipLibCheck: true,
      paths: { '@collab-backend/client': [path.join(clientDir, 'src', 'index.ts')] },
    };
    const program = ts.createProgram([file], options);
    const diagnostics = ts.getPreEmitDiagnostics(program);
    return ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => dir, getNewLine: () => '\n' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('the quick start is followed at once by the walk-through; the Node and install internals are further down', () => {
  const quick = section(readme, '## Quick start');
  const sub = headings(quick);
  assert.is(sub[0], 'A first walk-through with curl', `the quick start's first subsection: ${sub.join(' | ')}`);
  const before = quick.slice(0, quick.indexOf('### A first walk-through with curl'));
  for (const internal of ['allowScripts', 'better-sqlite3', 'ensure-deps', 'node-runtime', 'fallbackNode']) {
    assert.not.ok(before.includes(internal), `the quick start explains ${internal}: it belongs under Node versions`);
  }
  const node = section(readme, '## Node versions');
  for (const fact of ['allowScripts', 'better-sqlite3 13', 'scripts/ensure-deps.mjs', 'scripts/node-runtime.mjs', 'config.fallbackNode', 'npx collab']) {
    assert.ok(node.includes(fact), `README, Node versions does not mention ${fact}`);
  }
});

test('every "(README, <section>)" pointer in the scripts, bin/, .ci/run and the Dockerfile names a README heading', () => {
  const files = ['scripts', 'bin']
    .flatMap((d) => fs.readdirSync(path.join(ROOT, d)).map((f) => path.join(d, f)))
    .concat(['.ci/run', 'Dockerfile']);
  const names = new Set(headings(readme));
  const pointers: string[] = [];
  for (const f of files) {
    for (const m of fs.readFileSync(path.join(ROOT, f), 'utf8').matchAll(/README, ([A-Z][A-Za-z ]+)\)/g)) {
      pointers.push(m[1]);
      assert.ok(names.has(m[1]), `${f} points to "README, ${m[1]}", which is no heading of README.md`);
    }
  }
  assert.ok(pointers.includes('Node versions') && pointers.includes('Production'), `pointers read: ${pointers.join(', ')}`);
});

test("the README's typed-client walk-through compiles under strict", () => {
  const blocks = tsBlocks(section(readme, '### The same walk-through with the typed client'));
  assert.is(blocks.length, 1, 'one TypeScript block');
  assert.ok(blocks[0].includes("from '@collab-backend/client'"));
  assert.is(typeCheck(blocks[0]), '');
});

test("the client README's TypeScript blocks compile under strict, in order, as one application", () => {
  const blocks = tsBlocks(clientReadme);
  assert.ok(blocks.length >= 5, `${blocks.length} blocks`);
  // The first block (the walk-through) declares the clients the others use; each later block
  // is a scope of its own, so that a name it declares again (a `key`) shadows the first.
  const source = [blocks[0], ...blocks.slice(1).map((b) => `{\n${b}}\n`)].join('\n');
  assert.is(typeCheck(source), '');
});

test("the client README's count of credential modes is its table's, and the client's Credentials", () => {
  const count = /The (\w+) credential modes/.exec(clientReadme);
  assert.ok(count, 'the client README says how many credential modes there are');
  const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six'];
  const said = words.indexOf(count[1].toLowerCase());
  // The table that follows the sentence: its rows after the header and the rule.
  const modes = (/\| mode \|[\s\S]*?\n\n/.exec(clientReadme.slice(count.index))?.[0] ?? '').split('\n').filter((l) => l.startsWith('|')).slice(2).length;
  const index = fs.readFileSync(path.join(clientDir, 'src', 'index.ts'), 'utf8');
  const union = /export type Credentials =([\s\S]*?);\n/.exec(index)![1].split('\n').filter((l) => l.trim().startsWith('|')).length;
  assert.is(modes, union, `the table has ${modes} modes, Credentials ${union}`);
  assert.is(said, modes, `the README says "${count[1]}", its table lists ${modes}`);
});

test.run();
