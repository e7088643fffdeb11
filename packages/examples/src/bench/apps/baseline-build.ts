/**
 * The baseline build of `--baseline <git rev>`: a detached git worktree of
 * that revision under `<repo>/.bench/baseline-<commit>`, with this
 * checkout's node_modules copied in (the workspace links in it are relative,
 * so they point at the worktree's own packages) and `npm run build` run
 * there. A worktree already built at that commit is reused.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A build of another revision, ready to run. */
export interface BaselineBuild {
  /** The revision as given. */
  rev: string;
  /** Its full commit id. */
  commit: string;
  /** The worktree's root. */
  root: string;
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
  if (existsSync(join(root, BUILT_MARK))) return { rev, commit, root };
  mkdirSync(join(repo, '.bench'), { recursive: true });
  if (!existsSync(join(root, '.git'))) git(repo, ['worktree', 'add', '--force', '--detach', root, commit]);
  if (!existsSync(join(root, 'node_modules'))) cpSync(join(repo, 'node_modules'), join(root, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  console.log(`baseline ${rev} (${commit.slice(0, 12)}): npm run build in ${root} ...`);
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  writeFileSync(join(root, BUILT_MARK), `${commit}\n`);
  return { rev, commit, root };
}
