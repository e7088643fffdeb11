/**
 * The baseline build of `--baseline <git rev>`: a detached git worktree of
 * that revision under `<repo>/.bench/baseline-<commit>`, with this
 * checkout's node_modules copied in (the workspace links in it are relative,
 * so they point at the worktree's own packages) and `npm run build` run
 * there. A worktree already built at that commit is reused.
 *
 * Beside its own examples the worktree gets a copy of this build's
 * (`.programs/packages/examples`: compiled code, sources and package.json),
 * whose imports of `@tensorbus/*` resolve to the worktree's libraries: an
 * application case that runs the same program on both builds compares the
 * libraries alone (app-cases.ts).
 * @module
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Build } from './run-apps.js';

/** A build of another revision, ready to run. */
export interface BaselineBuild {
  /** The revision as given. */
  rev: string;
  /** Its full commit id. */
  commit: string;
  /** The worktree's root. */
  root: string;
  /** Where this build's example programs were copied, laid out as a repository root (`packages/examples/...`). */
  programsRoot: string;
}

/** The baseline as a build the application cases run on. */
export function baselineBuild(baseline: BaselineBuild): Build {
  return { label: `baseline ${baseline.rev}`, root: baseline.root, programsRoot: baseline.programsRoot };
}

/** Marks a worktree whose build finished. */
const BUILT_MARK = '.tensorbus-bench-built';

function git(repo: string, args: string[]): string {
  return execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Checks out and builds `rev` of the repository at `repo`; throws with git's or npm's message when it cannot. */
export function prepareBaseline(repo: string, rev: string): BaselineBuild {
  const commit = git(repo, ['rev-parse', '--verify', `${rev}^{commit}`]);
  const root = join(repo, '.bench', `baseline-${commit.slice(0, 12)}`);
  if (!existsSync(join(root, BUILT_MARK))) build(repo, rev, commit, root);
  return { rev, commit, root, programsRoot: copyExamplePrograms(repo, root) };
}

/** The worktree of `commit` at `root`, built. */
function build(repo: string, rev: string, commit: string, root: string): void {
  mkdirSync(join(repo, '.bench'), { recursive: true });
  if (!existsSync(join(root, '.git'))) git(repo, ['worktree', 'add', '--force', '--detach', root, commit]);
  if (!existsSync(join(root, 'node_modules'))) cpSync(join(repo, 'node_modules'), join(root, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  console.log(`baseline ${rev} (${commit.slice(0, 12)}): npm run build in ${root} ...`);
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  writeFileSync(join(root, BUILT_MARK), `${commit}\n`);
}

/** Copies this build's examples (`repo`'s) into the worktree at `root`, replacing an earlier copy; returns the copy's root. */
export function copyExamplePrograms(repo: string, root: string): string {
  const programsRoot = join(root, '.programs');
  const target = join(programsRoot, 'packages', 'examples');
  rmSync(programsRoot, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  for (const part of ['package.json', 'src', 'dist']) cpSync(join(repo, 'packages', 'examples', part), join(target, part), { recursive: true });
  return programsRoot;
}
