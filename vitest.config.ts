import { defineConfig } from 'vitest/config';

// Tests run on the TypeScript sources: the `source` export condition maps workspace imports
// (`@perp/core`) to `src/` so a test never runs against a stale `dist/`.
export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'], externalConditions: ['source'] } },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    pool: 'forks',
    setupFiles: ['./vitest.setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
