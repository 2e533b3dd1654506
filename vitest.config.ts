import { defineConfig } from 'vitest/config';
import { sourceEntryAliases } from './test/support/source-entries.js';

export default defineConfig({
  resolve: { alias: sourceEntryAliases() },
  test: {
    include: [
      'machines/**/*.test.ts',
      'guards/**/*.test.ts',
      'actions/**/*.test.ts',
      'src/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    // Two cores: keep the pool small so heavy model-based exploration does not starve the rest.
    pool: 'threads',
    maxWorkers: 2,
    testTimeout: 20_000,
    reporters: ['default', './test/support/plain-summary-reporter.ts'],
  },
});
