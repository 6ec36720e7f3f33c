/**
 * The front door as a new user reads it: the README is short enough to read in ten minutes,
 * its quick start says what the two commands need, its curl walk-through runs against a
 * started service and answers what the README shows, the pointers into the README from
 * scripts name sections that exist, its links and the docs index's lead to files, the user
 * docs speak of the product and not of the issues and sessions that built it, the TypeScript
 * snippets of both READMEs compile under `strict` against the client's sources, and the
 * client README's count of credential modes is its list's.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { ROOT, startService, waitHealthy } from './support/process.js';

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

/** The README's length a newcomer reads in ten minutes. */
const README_MAX_LINES = 250;

test(`the README is at most ${README_MAX_LINES} lines`, () => {
  const lines = readme.trimEnd().split('\n').length;
  assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines: move the detail to docs/ (docs/README.md lists the pages by reader)`);
});

test('the quick start says what the two commands need and how long they take; the Node and install internals are in docs/development.md', () => {
  const quick = section(readme, '## Quick start');
  for (const fact of ['npm start', 'npm test', 'Node 22.14', 'PostgreSQL', 'PG_BIN', '/usr/lib/postgresql', 'Chromium', 'CHROMIUM_PATH', '/usr/bin/chromium', '20 minutes']) {
    assert.ok(quick.includes(fact), `README, Quick start does not mention ${fact}`);
  }
  for (const internal of ['allowScripts', 'better-sqlite3', 'ensure-deps', 'node-runtime']) {
    assert.not.ok(quick.includes(internal), `the quick start explains ${internal}: it belongs in docs/development.md, Node versions`);
  }
  // The variables the quick start names are the ones the suites read.
  const suites = ['test/support/postgres.ts', 'test/openapi.test.ts', 'test/console.e2e.test.ts'].map((f) => fs.readFileSync(path.join(ROOT, f), 'utf8')).join('\n');
  for (const v of ['PG_BIN', 'CHROMIUM_PATH']) assert.ok(suites.includes(`process.env.${v}`), `the suites no longer read ${v}`);
  const dev = fs.readFileSync(path.join(ROOT, 'docs', 'development.md'), 'utf8');
  const node = section(dev, '## Node versions') + section(dev, '## What `npm start` and `npm test` install');
  for (const fact of ['allowScripts', 'better-sqlite3 13', 'scripts/ensure-deps.mjs', 'scripts/node-runtime.mjs', 'config.fallbackNode', 'npx collab']) {
    assert.ok(node.includes(fact), `docs/development.md, Node versions does not mention ${fact}`);
  }
});

test('production in the README is PostgreSQL first, and says what ADMIN_TOKEN does to the listening address', () => {
  const intro = readme.slice(0, readme.indexOf('## Quick start'));
  assert.ok(intro.includes('PostgreSQL'), 'the opening does not name PostgreSQL');
  assert.not.ok(/EventStoreDB|MongoDB/.test(intro), 'the opening names EventStoreDB or MongoDB, which have met only fake servers');
  const prod = section(readme, '## Production');
  assert.ok(prod.indexOf('PostgreSQL') < prod.indexOf('EventStoreDB'), 'Production names EventStoreDB before PostgreSQL');
  assert.ok(prod.includes('0.0.0.0') && prod.includes('HOST'), 'Production does not say that ADMIN_TOKEN makes the service listen on 0.0.0.0 unless HOST is set');
  // The rule it describes, as src/config/config.ts has it.
  const config = fs.readFileSync(path.join(ROOT, 'src', 'config', 'config.ts'), 'utf8');
  assert.ok(config.includes("env.HOST || (adminToken === undefined ? '127.0.0.1' : '0.0.0.0')"), 'the HOST rule changed: update README, Production');
  // sslmode: the compose file's URL has none, and the README says so.
  const compose = fs.readFileSync(path.join(ROOT, 'docker-compose.postgres.yml'), 'utf8');
  assert.not.ok(/POSTGRES_URL:.*sslmode/.test(compose), 'docker-compose.postgres.yml now names an sslmode: update README, Production');
  assert.ok(prod.includes('names no `sslmode`'));
  assert.not.ok(readme.includes('as in the compose file'));
});

test("the README's production commands are the sequence npm run test:production runs on a fresh clone", () => {
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section(readme, '## Production'))![1];
  const npm = block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => /(^|\s)npm /.test(l));
  assert.equal(npm, ['npm ci', 'npm run build', 'npm prune --omit=dev', 'NODE_ENV=production ADMIN_TOKEN=... npm start']);
  const check = fs.readFileSync(path.join(ROOT, 'scripts', 'check-production.mjs'), 'utf8');
  assert.ok(check.includes("[['ci', '--no-audit', '--no-fund'], ['run', 'build'], ['prune', '--omit=dev', '--no-audit', '--no-fund']]"), 'scripts/check-production.mjs no longer runs npm ci, build, prune');
  assert.ok(check.includes("NODE_ENV: 'production', ADMIN_TOKEN"), 'scripts/check-production.mjs no longer starts with NODE_ENV=production and ADMIN_TOKEN');
});

/** Relative links of a markdown text (outside code blocks), without their #anchors. */
function relativeLinks(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    else if (!fenced) for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) if (!/^(https?:|mailto:|#)/.test(m[1])) out.push(m[1].replace(/#.*$/, ''));
  }
  return out;
}

test("the README's and docs/README.md's links lead to files that exist", () => {
  for (const [file, dir] of [['README.md', ROOT], ['docs/README.md', path.join(ROOT, 'docs')]] as const) {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    const links = relativeLinks(text);
    assert.ok(links.length >= 10, `${file}: ${links.length} links`);
    for (const l of links) assert.ok(fs.existsSync(path.join(dir, l)), `${file} links to ${l}, which does not exist`);
  }
  // Every page of docs/ is in the index.
  const index = fs.readFileSync(path.join(ROOT, 'docs', 'README.md'), 'utf8');
  for (const f of fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md')) {
    assert.ok(index.includes(`(${f})`), `docs/README.md does not list docs/${f}`);
  }
});

/**
 * The pages written for those who use or run the service (not the design notes): they
 * describe the product as it is. How it got there (issue numbers, work sessions) belongs in
 * the design notes (development.md, architecture.md, performance-history.md...).
 */
const USER_DOCS = [
  'README.md',
  'docs/README.md',
  'docs/guide.md',
  'docs/api.md',
  'docs/permissions.md',
  'docs/folders.md',
  'docs/webhooks.md',
  'docs/limits.md',
  'docs/privacy.md',
  'docs/compatibility.md',
  'docs/console.md',
  'docs/configuration.md',
  'docs/production.md',
  'docs/operations.md',
  'docs/security.md',
  'docs/performance.md',
  'clients/typescript/README.md',
];

test('the user docs speak of the product, not of the issues and sessions that built it', () => {
  const history = [/\bissues? #?\d+/i, /\bthe issue's\b/i, /\b(this|previous|earlier|last|next) session\b/i, /\bsession \d+/i, /\bseen yet\b/i, /\bour machines\b/i];
  const found: string[] = [];
  for (const f of USER_DOCS) {
    fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n').forEach((line, i) => {
      for (const re of history) if (re.test(line)) found.push(`${f}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.equal(found, [], `history in user docs:\n${found.join('\n')}`);
});

test("docs/development.md's use case and route are the code's (src/usecases/documents.ts, src/http/routes/documents.ts)", () => {
  const dev = fs.readFileSync(path.join(ROOT, 'docs', 'development.md'), 'utf8');
  const code = ['src/usecases/documents.ts', 'src/http/routes/documents.ts']
    .map((f) => fs.readFileSync(path.join(ROOT, f), 'utf8'))
    .join('\n')
    .split('\n')
    .map((l) => l.trim());
  const shown = [...tsBlocks(section(dev, '## A use case (src/usecases/)')), ...tsBlocks(section(dev, '## Routes (src/http/routes/)'))];
  assert.is(shown.length, 2);
  let compared = 0;
  for (const line of shown.join('\n').split('\n')) {
    // A line as the code has it, its trailing comment (the guide's) left out; elided lines (...) and comments skipped.
    const bare = line.replace(/\s+\/\/ .*$/, '').trim();
    if (bare === '' || bare.startsWith('//') || bare.includes('...')) continue;
    compared++;
    assert.ok(code.includes(bare), `docs/development.md shows a line the code does not have: ${bare}`);
  }
  assert.ok(compared >= 20, `${compared} lines compared`);
});

test('docs/configuration.md names every variable src/config/config.ts reads', () => {
  const config = fs.readFileSync(path.join(ROOT, 'src', 'config', 'config.ts'), 'utf8');
  const names = new Set([...config.matchAll(/\benv\.([A-Z][A-Z0-9_]{2,})|\(env, '([A-Z][A-Z0-9_]{2,})'/g)].map((m) => m[1] ?? m[2]));
  assert.ok(names.size >= 40, `${names.size} variables read`);
  const page = fs.readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
  const missing = [...names].filter((n) => !page.includes(n));
  assert.equal(missing, [], `docs/configuration.md does not name ${missing.join(', ')}`);
});

/** One command of the walk-through and the answer the README shows under it (`#> ` lines, joined). */
interface Step {
  command: string;
  answer: string | null;
}

/** The walk-through's steps: each ```sh block of the section, split into commands (with `\` continuations) and their answers. */
function walkThrough(text: string): Step[] {
  const blocks = [...section(text, '## A walk-through with curl').matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  const steps: Step[] = [];
  for (const block of blocks) {
    let current: Step | null = null;
    let continued = false;
    for (const line of block.split('\n')) {
      if (continued && current) {
        current.command += '\n' + line;
      } else if (line.startsWith('#> ')) {
        assert.ok(current, `an answer with no command before it: ${line}`);
        current.answer = (current.answer ?? '') + line.slice(3);
      } else if (line.trim() === '' || line.startsWith('#')) {
        continue;
      } else {
        current = { command: line, answer: null };
        steps.push(current);
      }
      continued = line.endsWith('\\');
    }
  }
  return steps;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The answer the README shows as a pattern: `<NAME>` is a value the service chose (bound at its
 * first occurrence, the same value at the next), `...` stands for fields left out.
 */
function answerPattern(shown: string, known: Map<string, string>): RegExp {
  const seen = new Set<string>();
  const source = shown
    .split(/(<[A-Z_0-9]+>|\.\.\.)/)
    .map((part) => {
      if (part === '...') return '.*?';
      const name = /^<([A-Z_0-9]+)>$/.exec(part)?.[1];
      if (!name) return escapeRegExp(part);
      if (known.has(name)) return escapeRegExp(known.get(name)!);
      if (seen.has(name)) return `\\k<${name}>`;
      seen.add(name);
      return `(?<${name}>[^"]*)`;
    })
    .join('');
  return new RegExp(`^${source}$`);
}

test("the README's curl walk-through runs against a started service and answers what the README shows; so does the typed client's", async () => {
  const steps = walkThrough(readme);
  const curls = steps.filter((s) => s.command.startsWith('curl '));
  assert.ok(curls.length >= 8, `${curls.length} curl commands in the walk-through`);
  const routes = curls.map((s) => /localhost:8080(\/\S+)/.exec(s.command)?.[1]);
  for (const route of ['/v2/workspace/create', '/v2/organizations/add', '/v2/organizations/folders/add', '/v2/organizations/documents/add', '/v2/users/add', '/v2/auth/permissions/add', '/v2/auth/permissions/get', '/v2/auth/permissions/explain']) {
    assert.ok(routes.includes(route), `the walk-through does not call ${route}: ${routes.join(' ')}`);
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'collab-readme-walk-'));
  // As after `npm start` on a fresh clone: the embedded store, no admin token.
  const service = await startService({ DATA_DIR: dataDir, ADMIN_TOKEN: '' });
  try {
    await waitHealthy(service);
    const base = service.url.replace('http://', '');
    const known = new Map<string, string>();
    const fill = (s: string) =>
      s.replace(/<([A-Z_0-9]+)>/g, (m, name: string) => {
        assert.ok(known.has(name), `${m} is used before an answer gave it`);
        return known.get(name)!;
      });
    // Shell assignments (KEY=...) run before every later command, as in one terminal.
    const prelude: string[] = [];
    for (const step of steps) {
      const command = fill(step.command).replaceAll('localhost:8080', base);
      if (!command.startsWith('curl ')) {
        assert.is(step.answer, null, `${step.command} shows an answer`);
        prelude.push(command);
        continue;
      }
      assert.ok(step.answer, `the README shows no answer for ${step.command}`);
      const run = [...prelude, command.replace(/^curl -s /, `curl -s -w '\\n%{http_code}' `)].join('\n');
      const out = execFileSync('bash', ['-c', run], { encoding: 'utf8', timeout: 30_000 });
      const status = out.slice(out.lastIndexOf('\n') + 1);
      const body = out.slice(0, out.lastIndexOf('\n'));
      assert.is(status, '200', `${step.command}\nanswered ${status}: ${body}`);
      assert.ok(JSON.parse(body).result, `${step.command}\nanswered no result: ${body}`);
      const match = answerPattern(step.answer, known).exec(body);
      assert.ok(match, `${step.command}\nanswered\n  ${body}\nthe README shows\n  ${step.answer}`);
      for (const [name, value] of Object.entries(match.groups ?? {})) known.set(name, value);
    }
    for (const name of ['WS', 'WS_TOKEN', 'KEY', 'KEY_TOKEN']) assert.ok(known.get(name), `the walk-through never bound <${name}>`);
    // The typed client's walk-through, run against the same service (a workspace of its own).
    const [snippet] = tsBlocks(section(readme, '### The same walk-through with the typed client'));
    const program = snippet
      .replace("from '@collab-backend/client'", `from ${JSON.stringify(path.join(clientDir, 'src', 'index.ts'))}`)
      .replace("'http://localhost:8080'", JSON.stringify(service.url));
    assert.ok(program.includes(service.url) && !program.includes('@collab-backend/client'));
    const file = path.join(dataDir, 'walk-through.mts');
    fs.writeFileSync(file, `${program}\nconsole.log(JSON.stringify(answer));\n`);
    const printed = execFileSync(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ADMIN_TOKEN: '' } });
    const answer = JSON.parse(printed.trim().split('\n').pop()!);
    assert.equal(answer.data, { ada: { organization: { acme: { accessRole: 'editor' } }, documents: { roadmap: { accessRole: 'editor', accessType: 'restricted' } } } });
    // The console the README sends the reader to next, and the reference.
    for (const [route, type] of [['/console', 'text/html'], ['/openapi.json', 'application/json'], ['/docs', 'text/html']] as const) {
      const r = await fetch(`${service.url}${route}`, { redirect: 'follow' });
      assert.is(r.status, 200, `GET ${route}`);
      assert.ok(r.headers.get('content-type')?.startsWith(type), `GET ${route}: ${r.headers.get('content-type')}`);
      await r.arrayBuffer();
    }
  } finally {
    service.child.kill('SIGTERM');
    await service.exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
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
