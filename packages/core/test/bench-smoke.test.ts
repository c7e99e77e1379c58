/**
 * Smoke test of `pnpm bench` (`bench/run.mjs`): one tiny round of every engine on both workloads
 * against the built `dist/`. The script itself checks each run's final book against the
 * workload's reference book and fails on a refused command; here it must exit 0 and print a
 * figure for every engine and every floor row. No timing is asserted: figures of a run this small mean nothing.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../bench/run.mjs', import.meta.url));
const probe = fileURLToPath(new URL('../bench/probe.mjs', import.meta.url));

/** Runs a bench script on a tiny workload; its exit code and output. */
function runScript(path: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--max-semi-space-size=64', path],
      {
        timeout: 120_000,
        env: { ...process.env, BENCH_OPS: '20000', BENCH_ROUNDS: '1' },
      },
      (error, out, err) =>
        resolve({
          code: error === null ? 0 : ((error.code as number) ?? 1),
          stdout: out,
          stderr: err,
        }),
    );
  });
}

describe('pnpm bench (smoke)', () => {
  it('runs every engine on W1 and W2 and every final book matches the reference', async () => {
    const { code, stdout, stderr } = await runScript(script);
    expect(stderr).not.toMatch(/differs from the reference|refused commands/);
    expect(code).toBe(0);
    for (const workload of ['W1', 'W2']) expect(stdout).toContain(`## ${workload}`);
    const rows = stdout.split('\n').filter((l) => /^\| (nodejs-order-book|engine,) /.test(l));
    expect(rows).toHaveLength(8);
    const floors = stdout.split('\n').filter((l) => /^\| floor: /.test(l));
    expect(floors).toHaveLength(4);
    for (const row of [...rows, ...floors]) expect(row).toMatch(/\| [\d,]+ \| \d+\.\d\dx \|$/);
    expect(stdout).toMatch(/account with 50 positions \| [\d,]+ summaries\/s/);
  }, 150_000);

  it('runs the design probe (bench/probe.mjs) to the reference book in every variant', async () => {
    const { code, stdout, stderr } = await runScript(probe);
    expect(stderr).not.toMatch(/final book differs/);
    expect(code).toBe(0);
    const rows = stdout.split('\n').filter((l) => /^\| probe, /.test(l));
    expect(rows).toHaveLength(8);
  }, 150_000);
});
